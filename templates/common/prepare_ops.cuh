// kdajit fragment: common/prepare_ops
// Building blocks of the chunk-parallel prepare kernels (chunk 16 and 32):
// the layouts of their bf16 row tiles, the chunk's place in its sequence, the
// row loads (16-byte cp.async, padded rows zero-filled), row norms as the
// diagonal of X X^T by mma.sync, and the 16 x 16 products on split operands
// x = hi + lo (near-fp32). Uses kda_plan::prepare::* (THREADS, STAGE_BYTES,
// the raw tiles' offsets and pitches).
namespace kda {
namespace frag {

// Row layouts of bf16 SMEM tiles: Rows::at(row, col) is the byte offset of
// element (row, col) (col even for 4-byte pairs, a multiple of 8 for 16-byte
// blocks). A tile pointer may be advanced by a multiple of 8 rows
// (Rows::at(8 k, 0)) and the layout applied to the rows after it.
//
// PaddedRows: rows PITCH elements apart; the padding (PITCH = HEAD_DIM + 8)
// spreads 16-byte column blocks of 8 rows over all banks.
template <int PITCH>
struct PaddedRows {
  static constexpr int pitch = PITCH;
  __device__ __forceinline__ static int at(int row, int col) { return 2 * (row * PITCH + col); }
};

// SwizzledRows: HEAD_DIM bf16 per row (256 bytes, no padding), the 16-byte
// block c of row r stored at block c ^ (r & 7) of the row's 128-byte half
// (the 128-byte swizzle). A warp's 4-byte accesses along a row, 8 rows x 16
// bytes of one column block (ldmatrix, mma fragments) and 16-byte row
// segments (cp.async: each global 128-byte line lands on one 128-byte-aligned
// SMEM line) all hit 32 distinct banks without the padding's 16 bytes per row.
// Tiles start on 128-byte boundaries.
struct SwizzledRows {
  static constexpr int pitch = kda_plan::HEAD_DIM;
  __device__ __forceinline__ static int at(int row, int col) {
    return row * (2 * kda_plan::HEAD_DIM) + ((((col >> 3) ^ row) & 7) << 4) + ((col >> 6) << 7) + ((col & 7) << 1);
  }
  // at(row, 8 block) = row * 256 + block_offset(16 block, 16 (row & 7)): the
  // XOR swizzle of the 16-byte block inside its 128-byte half (bit 7, the
  // half, is block's bit 3), one LOP3 where both are kept pre-shifted
  __device__ __forceinline__ static int block_offset(int block16, int row7_16) { return block16 ^ row7_16; }
};

// This lane's ldmatrix.x4 row addresses (shared space) in a 16-row block of
// a tile (layout Rows) for the four 16-column steps j of a 64-column half:
// the A fragment (m16n8k16) of columns 16 j .. 16 j + 15 (matrix m = lane / 8
// is rows 8 (m % 2) .., columns 16 j + 8 (m / 2) ..) or the B fragments of a
// K-major tile (rows 8 (m / 2) .., columns 16 j + 8 (m % 2) ..: b[0], b[1]
// for rows 0-7, b[2], b[3] for rows 8-15). The other half of the row lies
// HALF_STEP bytes on, another tile of the same layout a constant distance
// away: computed once, each ldmatrix of a product is one register plus an
// immediate (the swizzle's XOR defeats the compiler's own strength reduction).
template <class Rows>
struct LdmatrixRows {
  static constexpr int HALF_STEP = 128; // Rows::at(r, c + 64) - Rows::at(r, c), both layouts
  u32 at[4];
  __device__ __forceinline__ LdmatrixRows(const u8* block, bool b_fragment) {
    static_assert(Rows::pitch * 2 >= 256, "rows of at least 128 columns");
    const int lane = threadIdx.x & 31;
    const int row = b_fragment ? 8 * (lane >> 4) + (lane & 7) : 8 * ((lane >> 3) & 1) + (lane & 7);
    const int col = b_fragment ? 8 * ((lane >> 3) & 1) : 8 * (lane >> 4);
    const u32 base = smem_address(block);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      at[j] = base + static_cast<u32>(Rows::at(row, col + 16 * j));
    }
  }
  // K step ks (columns 16 ks .. 16 ks + 15) of this tile, or of one `delta` bytes away
  __device__ __forceinline__ u32 step(int ks, int delta = 0) const {
    return at[ks & 3] + static_cast<u32>(HALF_STEP * (ks >> 2) + delta);
  }
  // the four matrices at a step's addresses (the key-major layout's: transposed)
  __device__ __forceinline__ static void load(u32 (&r)[4], u32 address) { ldmatrix_x4_shared(r, address); }
};

// A if B, else C (a type).
template <bool B, class A, class C>
struct Select {
  using type = A;
};
template <class A, class C>
struct Select<false, A, C> {
  using type = C;
};

// Key-major 16-row operand tiles (common/prepare_step with KEY_MAJOR): key
// k's 16 rows contiguous (32 bytes, HEAD_DIM keys: 4 KiB), rows 8h .. 8h + 7
// in 16-byte half h ^ ((k >> 2) & 1), so that a thread writes its key's rows
// with two 16-byte stores and eight consecutive keys' halves (a warp phase of
// those stores, an ldmatrix matrix) hit all 32 banks. The fragments are the
// transposed matrices of this layout (ldmatrix .trans).
struct KeyMajorRows16 {
  __device__ __forceinline__ static int half_at(int key, int half) { return 32 * key + 16 * (half ^ ((key >> 2) & 1)); }
};

template <>
struct LdmatrixRows<KeyMajorRows16> {
  u32 at;
  // matrix m = lane / 8: the A fragment's rows 8 (m % 2) .., keys 8 (m / 2) ..;
  // the B fragments' rows 8 (m / 2) .., keys 8 (m % 2) ..
  __device__ __forceinline__ LdmatrixRows(const u8* block, bool b_fragment) {
    const int lane = threadIdx.x & 31;
    const int m = lane >> 3;
    const int key = (b_fragment ? 8 * (m & 1) : 8 * (m >> 1)) + (lane & 7);
    const int half = b_fragment ? m >> 1 : m & 1;
    at = smem_address(block) + static_cast<u32>(KeyMajorRows16::half_at(key, half));
  }
  __device__ __forceinline__ u32 step(int ks, int delta = 0) const {
    return at + static_cast<u32>(32 * 16 * ks + delta); // 16 keys of 32 bytes
  }
  __device__ __forceinline__ static void load(u32 (&r)[4], u32 address) { ldmatrix_x4_trans_shared(r, address); }
};

// 16x16 product X Ki^T over K = HEAD_DIM by one warp from split operands
// k = k_hi + k_lo and, with X_SPLIT, x = x_hi + x_lo (otherwise x = x_hi):
// hi*hi + hi*lo + lo*hi, near-fp32. acc[nj] covers columns 8nj..8nj+7.
template <class Rows, bool X_SPLIT>
__device__ __forceinline__ void warp_product_16x16(const u8* x_hi, const u8* x_lo, const u8* k_hi, const u8* k_lo,
                                                   float (&acc)[2][4]) {
  static_assert(kda_plan::HEAD_DIM == 128, "two 64-column halves");
  for (int nj = 0; nj < 2; ++nj) {
    for (int e = 0; e < 4; ++e) {
      acc[nj][e] = 0.0f;
    }
  }
  const LdmatrixRows<Rows> a_rows(x_hi, false);
  const LdmatrixRows<Rows> b_rows(k_hi, true);
  const int x_lo_delta = X_SPLIT ? static_cast<int>(x_lo - x_hi) : 0;
  const int k_lo_delta = static_cast<int>(k_lo - k_hi);
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    u32 a_hi[4];
    u32 b_hi[4];
    u32 b_lo[4];
    LdmatrixRows<Rows>::load(a_hi, a_rows.step(ks));
    LdmatrixRows<Rows>::load(b_hi, b_rows.step(ks));
    LdmatrixRows<Rows>::load(b_lo, b_rows.step(ks, k_lo_delta));
    if constexpr (X_SPLIT) {
      u32 a_lo[4];
      LdmatrixRows<Rows>::load(a_lo, a_rows.step(ks, x_lo_delta));
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        mma_bf16_16816(acc[nj], a_lo, b_hi[2 * nj], b_hi[2 * nj + 1]);
      }
    }
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
      mma_bf16_16816(acc[nj], a_hi, b_lo[2 * nj], b_lo[2 * nj + 1]);
      mma_bf16_16816(acc[nj], a_hi, b_hi[2 * nj], b_hi[2 * nj + 1]);
    }
  }
}

// The 16x16 blocks Kd Ki^T and Qd Ki^T of one (row block, column block) by
// one warp from bf16 operands (rounding points kd_anchored, qd_anchored, ki),
// one load of Ki's B fragments for both: three ldmatrix.x4 and four MMAs per
// K step. acc[nj] covers columns 8nj..8nj+7.
template <class Rows>
__device__ __forceinline__ void warp_products_kq_16x16(const u8* kd, const u8* qd, const u8* ki, float (&l)[2][4],
                                                       float (&m)[2][4]) {
  static_assert(kda_plan::HEAD_DIM == 128, "two 64-column halves");
#pragma unroll
  for (int nj = 0; nj < 2; ++nj) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      l[nj][e] = 0.0f;
      m[nj][e] = 0.0f;
    }
  }
  const LdmatrixRows<Rows> a_rows(kd, false);
  const LdmatrixRows<Rows> b_rows(ki, true);
  const int qd_delta = static_cast<int>(qd - kd);
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    u32 b[4];
    u32 a_kd[4];
    u32 a_qd[4];
    ldmatrix_x4_shared(b, b_rows.step(ks));
    ldmatrix_x4_shared(a_kd, a_rows.step(ks));
    ldmatrix_x4_shared(a_qd, a_rows.step(ks, qd_delta));
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
      mma_bf16_16816(l[nj], a_kd, b[2 * nj], b[2 * nj + 1]);
      mma_bf16_16816(m[nj], a_qd, b[2 * nj], b[2 * nj + 1]);
    }
  }
}

// The diagonal sum_k x[r][k] y[r][k] of X Y^T for the 16 rows of two bf16
// SMEM tiles (layout Rows) by one warp, from m16n8k16 MMAs over K = HEAD_DIM
// (bf16 products are exact in the fp32 accumulator). The B fragments of Y^T
// are Y's A-fragment registers (B for columns n = rows 0-7 is {a0, a2}, for
// rows 8-15 {a1, a3}): with X = Y one ldmatrix per K step. The thread with
// t = g / 2 gets diagonal elements g (d.x) and g + 8 (d.y) and returns true.
template <class Rows, bool SAME>
__device__ __forceinline__ bool warp_row_diagonal(const u8* x, const u8* y, float2& d) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  float acc[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[nt][e] = 0.0f;
    }
  }
  const LdmatrixRows<Rows> x_rows(x, false);
  const LdmatrixRows<Rows> y_rows(y, false);
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    u32 a[4];
    ldmatrix_x4_shared(a, x_rows.step(ks));
    u32 b[4] = {a[0], a[1], a[2], a[3]};
    if constexpr (!SAME) {
      ldmatrix_x4_shared(b, y_rows.step(ks));
    }
    mma_bf16_16816(acc[0], a, b[0], b[2]);
    mma_bf16_16816(acc[1], a, b[1], b[3]);
  }
  // selected, not indexed by g: a run-time index would put acc in local memory
  const bool odd = (g & 1) != 0;
  d = make_float2(odd ? acc[0][1] : acc[0][0], odd ? acc[1][3] : acc[1][2]);
  return t == (g >> 1);
}

// 1 / sqrt(sum_k x[r][k]^2 + 1e-6) for the 16 rows of a bf16 SMEM tile (layout
// Rows) by one warp: the diagonal of X X^T.
template <class Rows>
__device__ __forceinline__ void warp_row_rnorms(const u8* x, float* rnorm) {
  const int g = (threadIdx.x & 31) >> 2;
  float2 d;
  if (warp_row_diagonal<Rows, true>(x, x, d)) {
    rnorm[g] = rsqrtf(d.x + 1e-6f);
    rnorm[g + 8] = rsqrtf(d.y + 1e-6f);
  }
}

// q . k (raw bf16 rows, fp32) for the 16 rows of the q and k tiles by one
// warp: the diagonal of Q K^T.
template <class Rows>
__device__ __forceinline__ void warp_row_dots(const u8* q, const u8* k, float* dot) {
  const int g = (threadIdx.x & 31) >> 2;
  float2 d;
  if (warp_row_diagonal<Rows, false>(q, k, d)) {
    dot[g] = d.x;
    dot[g + 8] = d.y;
  }
}

// The threads that prepare one chunk together, one per key column: the
// whole CTA of a prepare kernel (CtaTeam), or four warps of a larger kernel
// from warp FIRST_WARP, meeting at named barrier BARRIER (WarpGroupTeam).
// thread() is unsigned, as threadIdx.x is: index arithmetic on it stays
// unsigned (a signed index made the prepare kernels' address code longer).
struct CtaTeam {
  __device__ __forceinline__ static constexpr int threads() { return kda_plan::prepare::THREADS; }
  __device__ __forceinline__ static unsigned thread() { return threadIdx.x; }
  __device__ __forceinline__ static void sync() { __syncthreads(); }
};
template <int FIRST_WARP, int BARRIER>
struct WarpGroupTeam {
  __device__ __forceinline__ static constexpr int threads() { return 128; }
  __device__ __forceinline__ static unsigned thread() { return threadIdx.x - 32u * FIRST_WARP; }
  __device__ __forceinline__ static void sync() {
    asm volatile("bar.sync %0, %1;" ::"n"(BARRIER), "n"(threads()) : "memory");
  }
};

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
  if (sequence_of_chunk(p, chunk, c.seq) < 0) {
    return c;
  }
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
__device__ __forceinline__ int prepare_head_of_block(const kda_plan::KdaParams& p) {
  return p.chunk_major ? static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.y);
}
__device__ __forceinline__ PrepareChunk prepare_chunk_of_block(const kda_plan::KdaParams& p, int& h) {
  h = prepare_head_of_block(p);
  if (p.chunk_major) {
    return prepare_chunk_in_sequence(p, blockIdx.y, p.chunk_begin + static_cast<i64>(blockIdx.z));
  }
  return prepare_chunk_at(p, blockIdx.x);
}

// prepare_chunk_of_block of a packed layout found by warp 0 alone (the
// sequence search needs a whole warp; it and the span's dependent loads are
// the same for every warp) and handed to the CTA through `info` (7 i64 in
// SMEM) with one barrier, which every thread reaches.
__device__ __forceinline__ PrepareChunk prepare_chunk_of_block_once(const kda_plan::KdaParams& p, int& h, i64* info) {
  h = prepare_head_of_block(p);
  if (threadIdx.x < 32) {
    int warp_h = 0;
    const PrepareChunk c = prepare_chunk_of_block(p, warp_h);
    if (threadIdx.x == 0) {
      info[0] = c.chunk;
      info[1] = c.seq.start;
      info[2] = c.seq.length;
      info[3] = c.seq.first_chunk;
      info[4] = c.row0;
      info[5] = c.valid;
      info[6] = c.exists ? 1 : 0;
    }
  }
  __syncthreads();
  PrepareChunk c;
  c.chunk = info[0];
  c.seq.start = info[1];
  c.seq.length = info[2];
  c.seq.first_chunk = info[3];
  c.row0 = info[4];
  c.valid = static_cast<int>(info[5]);
  c.exists = info[6] != 0;
  return c;
}

// Column j of T = (I + L)^-1 for a 16 x 16 strictly lower L (fp32 rows at
// `l`, PITCH elements apart, 16-byte aligned) by forward substitution; zero
// above the diagonal. L's rows are read 4 elements per load (the lanes of a
// block read the same row: broadcasts); the sum runs over m in order.
template <int PITCH>
__device__ __forceinline__ void unit_lower_inverse_column16(const float* l, int j, float (&tcol)[16]) {
  static_assert(PITCH % 4 == 0, "16-byte row loads");
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    float s = i == j ? 1.0f : 0.0f;
#pragma unroll
    for (int m4 = 0; m4 < i; m4 += 4) {
      const float4 row = *reinterpret_cast<const float4*>(l + i * PITCH + m4);
      const float lm[4] = {row.x, row.y, row.z, row.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (m4 + e < i) {
          s -= lm[e] * tcol[m4 + e];
        }
      }
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

// The rows of one [tokens, H, HEAD_DIM] bf16 input (x = p.q, p.k or p.g) of
// chunk `c` into a raw tile (layout Rows) with 16-byte cp.async by the
// team's threads, rows past the sequence end zero-filled; no commit.
template <class Rows, class Team = CtaTeam>
__device__ __forceinline__ void load_chunk_tile(const kda_plan::KdaParams& p, const PrepareChunk& c, int h,
                                                const void* x, u8* tile) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  const i64 token_pitch = static_cast<i64>(p.heads) * D;
  const i64 row_bytes = token_pitch * 2;
  const i64 first = ((c.seq.start + c.row0) * token_pitch + static_cast<i64>(h) * D) * 2;
  constexpr int parts = 2 * D / 16;
  const int part = Team::thread() % parts;
#pragma unroll
  for (int pass = 0; pass < C * parts / Team::threads(); ++pass) {
    const int r = Team::thread() / parts + pass * (Team::threads() / parts);
    const bool ok = r < c.valid;
    const i64 at = ok ? first + r * row_bytes + 16 * part : 0;
    cp_async_16(tile + Rows::at(r, 8 * part), reinterpret_cast<const u8*>(x) + at, ok);
  }
}

// The q, k, g rows of chunk `c` into the raw tiles (layout Rows) of ring slot
// `stage` with 16-byte cp.async (rows past the sequence end zero-filled); one
// commit group.
template <class Rows, class Team = CtaTeam>
__device__ __forceinline__ void load_chunk_rows(const kda_plan::KdaParams& p, const PrepareChunk& c, int h, u8* smem,
                                                int stage) {
  namespace P = kda_plan::prepare;
  static_assert(P::Q_RAW_PITCH == Rows::pitch && P::K_RAW_PITCH == Rows::pitch && P::G_RAW_PITCH == Rows::pitch,
                "the raw tiles' pitch is the layout's");
  load_chunk_tile<Rows, Team>(p, c, h, p.q, prepare_buffer(smem, stage, P::Q_RAW_OFFSET, P::Q_RAW_STAGED));
  load_chunk_tile<Rows, Team>(p, c, h, p.k, prepare_buffer(smem, stage, P::K_RAW_OFFSET, P::K_RAW_STAGED));
  load_chunk_tile<Rows, Team>(p, c, h, p.g, prepare_buffer(smem, stage, P::G_RAW_OFFSET, P::G_RAW_STAGED));
}

} // namespace frag
} // namespace kda
