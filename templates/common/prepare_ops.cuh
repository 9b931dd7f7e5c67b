// kdajit fragment: common/prepare_ops
// Building blocks of the chunk-parallel prepare kernels (chunk 16 and 32):
// the chunk's place in its sequence, the row loads (16-byte cp.async, padded
// rows zero-filled), row norms as the diagonal of X X^T by mma.sync, and the
// 16 x 16 products on split operands x = hi + lo (near-fp32). Uses
// kda_plan::prepare::* (THREADS, STAGE_BYTES, the raw tiles' offsets and pitches).
namespace kda {
namespace frag {

__device__ __forceinline__ u32 load_u32(const u8* base, int offset_bytes) {
  return *reinterpret_cast<const u32*>(base + offset_bytes);
}

__device__ __forceinline__ void load_a_16x16(const u8* x, int pitch, int col, int g, u32 (&a)[4]) {
  a[0] = load_u32(x, 2 * (g * pitch + col));
  a[1] = load_u32(x, 2 * ((g + 8) * pitch + col));
  a[2] = load_u32(x, 2 * (g * pitch + col + 8));
  a[3] = load_u32(x, 2 * ((g + 8) * pitch + col + 8));
}

// 16x16 product X Ki^T over K = HEAD_DIM by one warp from split operands
// (x = x_hi + x_lo); rows in SMEM with the given pitch (elements). acc[nj]
// covers columns 8nj..8nj+7.
__device__ __forceinline__ void warp_product_16x16(const u8* x_hi, const u8* x_lo, const u8* k_hi, const u8* k_lo,
                                                   int pitch, float (&acc)[2][4]) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  for (int nj = 0; nj < 2; ++nj) {
    for (int e = 0; e < 4; ++e) {
      acc[nj][e] = 0.0f;
    }
  }
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    const int col = 16 * ks + 2 * t;
    u32 a_hi[4];
    u32 a_lo[4];
    load_a_16x16(x_hi, pitch, col, g, a_hi);
    load_a_16x16(x_lo, pitch, col, g, a_lo);
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
      const int row = 8 * nj + g;
      const u32 b_hi0 = load_u32(k_hi, 2 * (row * pitch + col));
      const u32 b_hi1 = load_u32(k_hi, 2 * (row * pitch + col + 8));
      mma_bf16_16816(acc[nj], a_lo, b_hi0, b_hi1);
      mma_bf16_16816(acc[nj], a_hi, load_u32(k_lo, 2 * (row * pitch + col)), load_u32(k_lo, 2 * (row * pitch + col + 8)));
      mma_bf16_16816(acc[nj], a_hi, b_hi0, b_hi1);
    }
  }
}

// 1 / sqrt(sum_k x[r][k]^2 + 1e-6) for the 16 rows of a bf16 SMEM tile (row
// pitch `pitch` elements) by one warp: the diagonal of X X^T from m16n8k16
// MMAs over K = HEAD_DIM. The B fragments of X^T are the A fragment's own
// registers (B for columns n = rows 0-7 is {a0, a2}, for rows 8-15 {a1, a3}),
// so one ldmatrix per K step. Thread (g, t = g / 2) holds diagonal elements g
// and g + 8.
__device__ __forceinline__ void warp_row_rnorms(const u8* x, int pitch, float* rnorm) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  // A: matrix j = lane / 8 is rows 8 (j % 2) .., columns 8 (j / 2) ..
  const int a_row = 8 * ((lane >> 3) & 1) + (lane & 7);
  const int a_col = 8 * (lane >> 4);
  float acc[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[nt][e] = 0.0f;
    }
  }
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    u32 a[4];
    ldmatrix_x4(a, x + 2 * (a_row * pitch + 16 * ks + a_col));
    mma_bf16_16816(acc[0], a, a[0], a[2]);
    mma_bf16_16816(acc[1], a, a[1], a[3]);
  }
  if (t == (g >> 1)) {
    // selected, not indexed by g: a run-time index would put acc in local memory
    const bool odd = (g & 1) != 0;
    rnorm[g] = rsqrtf((odd ? acc[0][1] : acc[0][0]) + 1e-6f);
    rnorm[g + 8] = rsqrtf((odd ? acc[1][3] : acc[1][2]) + 1e-6f);
  }
}

// One chunk of one head: where its rows are (chunk beyond the last: exists false).
struct PrepareChunk {
  i64 chunk = 0;
  SequenceSpan seq;
  i64 row0 = 0; // first row of the chunk inside its sequence
  int valid = 0;
  bool exists = false;
};

__device__ __forceinline__ PrepareChunk prepare_chunk_at(const kda_plan::KdaParams& p, i64 chunk) {
  PrepareChunk c;
  c.chunk = chunk;
  const int n = sequence_of_chunk(p, chunk);
  if (n < 0) {
    return c;
  }
  c.seq = sequence_span(p, n);
  c.row0 = (chunk - c.seq.first_chunk) * kda_plan::CHUNK_SIZE;
  c.valid = static_cast<int>(min(static_cast<i64>(kda_plan::CHUNK_SIZE), c.seq.length - c.row0));
  c.exists = true;
  return c;
}

// Local chunk j of sequence n (j past the sequence's last chunk: exists false).
__device__ __forceinline__ PrepareChunk prepare_chunk_in_sequence(const kda_plan::KdaParams& p, int n, i64 j) {
  PrepareChunk c;
  c.seq = sequence_span(p, n);
  c.row0 = j * kda_plan::CHUNK_SIZE;
  c.chunk = c.seq.first_chunk + j;
  c.valid = static_cast<int>(min(static_cast<i64>(kda_plan::CHUNK_SIZE), c.seq.length - c.row0));
  c.exists = c.row0 < c.seq.length;
  return c;
}

// The (chunk, head) of a one-chunk-per-CTA prepare kernel. Chunk-parallel
// order: x = global chunk, y = head. p.chunk_major (a prepare kernel running
// beside the recurrence, schedule `prepare_overlap`): x = head, y = sequence,
// z = local chunk - p.chunk_begin, so that CTAs start in the order the
// recurrence consumes the records (chunk j of every pair before chunk j + 1).
__device__ __forceinline__ PrepareChunk prepare_chunk_of_block(const kda_plan::KdaParams& p, int& h) {
  if (p.chunk_major) {
    h = blockIdx.x;
    return prepare_chunk_in_sequence(p, blockIdx.y, p.chunk_begin + static_cast<i64>(blockIdx.z));
  }
  h = blockIdx.y;
  return prepare_chunk_at(p, blockIdx.x);
}

// Column j of T = (I + L)^-1 for a 16 x 16 strictly lower L (fp32 rows at
// `l`, pitch in elements) by forward substitution; zero above the diagonal.
__device__ __forceinline__ void unit_lower_inverse_column16(const float* l, int pitch, int j, float (&tcol)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    float s = i == j ? 1.0f : 0.0f;
#pragma unroll
    for (int m = 0; m < i; ++m) {
      s -= l[i * pitch + m] * tcol[m];
    }
    tcol[i] = i < j ? 0.0f : s;
  }
}

// sigmoid(beta) of row r of chunk `c` (0 past the sequence end).
__device__ __forceinline__ float chunk_row_beta(const kda_plan::KdaParams& p, const PrepareChunk& c, int h, int r) {
  if (r >= c.valid) {
    return 0.0f; // no load past the sequence end
  }
  return sigmoid(bf16_to_float(p.beta[(c.seq.start + c.row0 + r) * p.beta_token_stride + h]));
}

// A prepare buffer of ring slot `stage` (one copy per slot), or the shared one.
__device__ __forceinline__ u8* prepare_buffer(u8* smem, int stage, int offset, int staged) {
  return smem + (staged ? stage * kda_plan::prepare::STAGE_BYTES : 0) + offset;
}

// The q, k, g rows of chunk `c` into the raw tiles of ring slot `stage` with
// 16-byte cp.async (rows past the sequence end zero-filled); one commit group.
__device__ __forceinline__ void load_chunk_rows(const kda_plan::KdaParams& p, const PrepareChunk& c, int h, u8* smem,
                                                int stage) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  u8* q_raw = prepare_buffer(smem, stage, P::Q_RAW_OFFSET, P::Q_RAW_STAGED);
  u8* k_raw = prepare_buffer(smem, stage, P::K_RAW_OFFSET, P::K_RAW_STAGED);
  u8* g_raw = prepare_buffer(smem, stage, P::G_RAW_OFFSET, P::G_RAW_STAGED);
  const i64 token_pitch = static_cast<i64>(p.heads) * D;
  const i64 row_bytes = token_pitch * 2;
  const i64 first = ((c.seq.start + c.row0) * token_pitch + static_cast<i64>(h) * D) * 2;
  constexpr int parts = 2 * D / 16;
  const int part = threadIdx.x % parts;
#pragma unroll
  for (int pass = 0; pass < C * parts / P::THREADS; ++pass) {
    const int r = threadIdx.x / parts + pass * (P::THREADS / parts);
    const bool ok = r < c.valid;
    const i64 at = ok ? first + r * row_bytes + 16 * part : 0;
    cp_async_16(q_raw + 2 * r * P::Q_RAW_PITCH + 16 * part, reinterpret_cast<const u8*>(p.q) + at, ok);
    cp_async_16(k_raw + 2 * r * P::K_RAW_PITCH + 16 * part, reinterpret_cast<const u8*>(p.k) + at, ok);
    cp_async_16(g_raw + 2 * r * P::G_RAW_PITCH + 16 * part, reinterpret_cast<const u8*>(p.g) + at, ok);
  }
}

} // namespace frag
} // namespace kda
