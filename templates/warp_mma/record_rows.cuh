// kdajit fragment: warp_mma/record_rows
// Workspace record of the warp_mma family: Kd, Qd, Kr as [C][HEAD_DIM] bf16
// rows, T and Mqk as [C][C] bf16 rows, beta [C] and gamma [HEAD_DIM] fp32
// (offsets kda_plan::WS_*). The recurrence copies each field into padded SMEM
// tiles. Byte offsets inside one record; Kr goes through the prepare kernel's
// SMEM tile `kr`.
namespace kda {
namespace frag {

constexpr bool RECORD_FOLDS_T = false; // T and Mqk go to the record as they are
constexpr bool RECORD_PART_MAJOR = false; // a row's 16 parts are contiguous: writers take items row-major

__device__ __forceinline__ int record_kd_part(int r, int part) {
  return kda_plan::WS_KD_OFFSET + r * 2 * kda_plan::HEAD_DIM + 16 * part;
}
__device__ __forceinline__ int record_qd_part(int r, int part) {
  return kda_plan::WS_QD_OFFSET + r * 2 * kda_plan::HEAD_DIM + 16 * part;
}
__device__ __forceinline__ int record_kr_part(int r, int part) {
  return kda_plan::WS_KR_OFFSET + r * 2 * kda_plan::HEAD_DIM + 16 * part;
}
__device__ __forceinline__ int record_tinv_at(int i, int j) {
  return kda_plan::WS_TINV_OFFSET + 2 * (i * kda_plan::CHUNK_SIZE + j);
}
__device__ __forceinline__ int record_mqk_at(int i, int j) {
  return kda_plan::WS_MQK_OFFSET + 2 * (i * kda_plan::CHUNK_SIZE + j);
}
__device__ __forceinline__ u8* kr_tile(u8* smem, int stage) {
  return smem + (kda_plan::prepare::KR_STAGED ? stage * kda_plan::prepare::STAGE_BYTES : 0) + kda_plan::prepare::KR_OFFSET;
}
__device__ __forceinline__ int kr_tile_pitch() {
  return kda_plan::prepare::KR_PITCH;
}
// Not used by this layout (no fold).
__device__ __forceinline__ u8* krt_tile(u8*, int) {
  return nullptr;
}
__device__ __forceinline__ u8* tt_tile(u8*, int) {
  return nullptr;
}
__device__ __forceinline__ int krt_pitch() {
  return 0;
}
__device__ __forceinline__ int tt_pitch() {
  return 0;
}
__device__ __forceinline__ void fold_t_into_update(u8*, const u8*, const u8*, const u32 (&)[4], bool, int, u8* = nullptr) {}

} // namespace frag
} // namespace kda
