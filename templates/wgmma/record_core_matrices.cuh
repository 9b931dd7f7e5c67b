// kdajit fragment: wgmma/record_core_matrices
// Workspace record of the wgmma family: the SMEM image of the recurrence's B
// operands, K-major bf16 in 8-row x 16-byte core matrices without swizzle
// (PTX ISA 9.7.15.5.1 "Shared Memory Matrix Layout"; element (n, k) at
// (k / 8) LBO + (n / 8) SBO + 16 (n % 8) + 2 (k % 8), LBO and SBO from the plan):
//   KQ   N 32 (Kd rows 0..C-1, Qd rows C..2C-1), K HEAD_DIM keys: projection
//   TINV N C (T rows), K C: solve U^T = Delta^T T^T
//   KRM  N HEAD_DIM + C (Kr^T rows = keys, then Mqk rows), K C: fused update
// then beta [C] and gamma [HEAD_DIM] fp32. The recurrence copies a record into
// its ring slot with one bulk copy and addresses it by descriptors.
namespace kda {
namespace frag {

constexpr bool RECORD_KR_BY_COLUMNS = true;

__device__ __forceinline__ int core_matrix_at(int lbo, int sbo, int n, int k) {
  return (k >> 3) * lbo + (n >> 3) * sbo + 16 * (n & 7) + 2 * (k & 7);
}
__device__ __forceinline__ int record_kd_part(int r, int part) {
  return kda_plan::WS_KQ_OFFSET + core_matrix_at(kda_plan::WS_KQ_LBO, kda_plan::WS_KQ_SBO, r, 8 * part);
}
__device__ __forceinline__ int record_qd_part(int r, int part) {
  return kda_plan::WS_KQ_OFFSET +
         core_matrix_at(kda_plan::WS_KQ_LBO, kda_plan::WS_KQ_SBO, kda_plan::CHUNK_SIZE + r, 8 * part);
}
__device__ __forceinline__ int record_kr_part(int, int) {
  return 0; // not used: Kr^T is written by columns
}
__device__ __forceinline__ int record_tinv_at(int i, int j) {
  return kda_plan::WS_TINV_OFFSET + core_matrix_at(kda_plan::WS_TINV_LBO, kda_plan::WS_TINV_SBO, i, j);
}
__device__ __forceinline__ int record_mqk_at(int i, int j) {
  return kda_plan::WS_KRM_OFFSET +
         core_matrix_at(kda_plan::WS_KRM_LBO, kda_plan::WS_KRM_SBO, kda_plan::HEAD_DIM + i, j);
}
// Rows 8 kg .. 8 kg + 7 of key column `key` of Kr: 16 contiguous bytes.
__device__ __forceinline__ int record_kr_column(int key, int kg) {
  return kda_plan::WS_KRM_OFFSET + core_matrix_at(kda_plan::WS_KRM_LBO, kda_plan::WS_KRM_SBO, key, 8 * kg);
}
__device__ __forceinline__ u8* kr_tile(u8*, int) {
  return nullptr; // no SMEM tile: Kr^T leaves from the registers
}
__device__ __forceinline__ int kr_tile_pitch() {
  return 0;
}

} // namespace frag
} // namespace kda
