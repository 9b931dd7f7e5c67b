// kdajit fragment: wgmma/fold_c16
// The chunk-16 prepare kernel's fold of the solve into the record's update
// operand (wgmma/record_core_matrices): UPD = [Kr^T T; Mqk T] by mma.sync
// from the SMEM tiles `krt` (Kr^T) and `tt` (T^T).
namespace kda {
namespace frag {

// The prepare kernel's fold operands: Kr^T [HEAD_DIM][C] and T^T [C][C], bf16 rows.
__device__ __forceinline__ u8* krt_tile(u8* smem, int stage) {
  namespace P = kda_plan::prepare;
  return smem + (P::KRT_STAGED ? stage * P::STAGE_BYTES : 0) + P::KRT_OFFSET;
}
__device__ __forceinline__ u8* tt_tile(u8* smem, int stage) {
  namespace P = kda_plan::prepare;
  return smem + (P::TT_STAGED ? stage * P::STAGE_BYTES : 0) + P::TT_OFFSET;
}
__device__ __forceinline__ int krt_pitch() {
  return kda_plan::prepare::KRT_PITCH;
}
__device__ __forceinline__ int tt_pitch() {
  return kda_plan::prepare::TT_PITCH;
}

// UPD by mma.sync m16n8k16 (fp32 accumulation, one K step over the C chunk
// rows): warp w (0-3 of the preparing team) forms the rows of keys 32 w ..
// 32 w + 31 (Kr^T T), and warp 1 also the C output rows (Mqk T, Mqk given as
// its bf16 A fragment). A paired tile (common/prepare_step; record_b not
// null): T is block-diagonal, so columns 0-7 of UPD are the first chunk's and
// columns 8-15 the second's; each goes to columns 0-7 of its record, whose
// columns 8-15 (and, of the output rows, rows 8-15) are zero.
__device__ __forceinline__ void fold_t_into_update(u8* record, const u8* krt, const u8* tt, const u32 (&mqk_a)[4],
                                                   bool with_mqk, int warp, u8* record_b = nullptr) {
  static_assert(kda_plan::CHUNK_SIZE == 16 && kda_plan::HEAD_DIM == 128, "four warps of 32 keys, one K step");
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  // A: matrix j = lane / 8 is rows 8 (j % 2) .., columns 8 (j / 2) ..
  const int a_row = 8 * ((lane >> 3) & 1) + (lane & 7);
  const int a_col = 8 * (lane >> 4);
  // B from T^T rows c: matrix j is rows 8 (j / 2) .., columns 8 (j % 2) ..
  const int b_row = 8 * (lane >> 4) + (lane & 7);
  const int b_col = 8 * ((lane >> 3) & 1);
  u32 b[4];
  ldmatrix_x4(b, tt + 2 * (b_row * tt_pitch() + b_col));
  auto store = [&](int n0, const float (&lo)[4], const float (&hi)[4]) {
    if (record_b != nullptr) {
      // keys: row n of both records; output rows: row m = g of the first
      // chunk's record (half 0, its columns lo) and of the second's (half 1,
      // hi), each record's rows 8-15 zero
      const bool keys = n0 < kda_plan::HEAD_DIM;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int n = keys ? n0 + g + 8 * half : n0 + g;
        if (keys || half == 0) {
          *reinterpret_cast<u32*>(record + record_update_at(n, 2 * t)) = pack_bf16x2(lo[2 * half], lo[2 * half + 1]);
          *reinterpret_cast<u32*>(record + record_update_at(n, 8 + 2 * t)) = 0u;
        }
        if (keys || half == 1) {
          *reinterpret_cast<u32*>(record_b + record_update_at(n, 2 * t)) = pack_bf16x2(hi[2 * half], hi[2 * half + 1]);
          *reinterpret_cast<u32*>(record_b + record_update_at(n, 8 + 2 * t)) = 0u;
        }
        if (!keys) {
          u8* const rec = half == 0 ? record : record_b;
          *reinterpret_cast<u32*>(rec + record_update_at(n + 8, 2 * t)) = 0u;
          *reinterpret_cast<u32*>(rec + record_update_at(n + 8, 8 + 2 * t)) = 0u;
        }
      }
      return;
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int n = n0 + g + 8 * half;
      *reinterpret_cast<u32*>(record + record_update_at(n, 2 * t)) = pack_bf16x2(lo[2 * half], lo[2 * half + 1]);
      *reinterpret_cast<u32*>(record + record_update_at(n, 8 + 2 * t)) = pack_bf16x2(hi[2 * half], hi[2 * half + 1]);
    }
  };
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    const int key0 = 32 * warp + 16 * mt;
    u32 a[4];
    ldmatrix_x4(a, krt + 2 * ((key0 + a_row) * krt_pitch() + a_col));
    float lo[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float hi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_bf16_16816(lo, a, b[0], b[1]);
    mma_bf16_16816(hi, a, b[2], b[3]);
    store(key0, lo, hi);
  }
  if (with_mqk) {
    float lo[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float hi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_bf16_16816(lo, mqk_a, b[0], b[1]);
    mma_bf16_16816(hi, mqk_a, b[2], b[3]);
    store(kda_plan::HEAD_DIM, lo, hi);
  }
}

} // namespace frag
} // namespace kda
