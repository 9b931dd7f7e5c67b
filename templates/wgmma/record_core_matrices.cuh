// kdajit fragment: wgmma/record_core_matrices
// Workspace record of the wgmma family: the SMEM image of the recurrence's B
// operands, K-major bf16 in 8-row x 16-byte core matrices without swizzle
// (PTX ISA 9.7.15.5.1 "Shared Memory Matrix Layout"; element (n, k) at
// (k / 8) LBO + (n / 8) SBO + 16 (n % 8) + 2 (k % 8), LBO and SBO from the plan):
//   KQ   N 32 (Kd rows 0..C-1, Qd rows C..2C-1), K HEAD_DIM keys: projection
//   UPD  N HEAD_DIM + C, K C (chunk rows c): the update's B operand with the
//        solve folded in, [S | O^T] += Delta^T UPD^T:
//        UPD[n][c] = (Kr^T T)[n][c] for keys n, (Mqk T)[m][c] for n = HEAD_DIM + m
//        (U^T [Kr | Mqk^T] = Delta^T T^T [Kr | Mqk^T])
// then beta [C] and gamma [HEAD_DIM] fp32. The recurrence copies a record into
// its ring slot with one bulk copy and addresses it by descriptors. The
// chunk-16 prepare kernel forms UPD in wgmma/fold_c16; the chunk-32 one in
// wgmma/prepare_chunk32.
namespace kda {
namespace frag {

constexpr bool RECORD_FOLDS_T = true;
// The rows n of one 16-byte part (8 keys) lie 16 bytes apart (SBO 128: N
// groups adjacent), so writers take items part-major: a warp's 32 rows of one
// part are 512 contiguous bytes.
constexpr bool RECORD_PART_MAJOR = true;

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
__device__ __forceinline__ int record_update_at(int n, int c) {
  return kda_plan::WS_UPD_OFFSET + core_matrix_at(kda_plan::WS_UPD_LBO, kda_plan::WS_UPD_SBO, n, c);
}
// Not used by this layout: Kr, T and Mqk reach the record only folded into UPD.
__device__ __forceinline__ int record_kr_part(int, int) {
  return 0;
}
__device__ __forceinline__ int record_tinv_at(int, int) {
  return 0;
}
__device__ __forceinline__ int record_mqk_at(int, int) {
  return 0;
}
__device__ __forceinline__ u8* kr_tile(u8*, int) {
  return nullptr;
}
__device__ __forceinline__ int kr_tile_pitch() {
  return 0;
}

} // namespace frag
} // namespace kda
