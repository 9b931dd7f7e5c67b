// kdajit fragment: wgmma/prepare_chunk32
// Chunk-parallel preparation of one 32-token (chunk, head) tile for the wgmma
// chunk-32 recurrence, with the fixed exponent anchor of spec section 8
// (decision 3): C_a = (C / 2) b, b = lower_bound log2 e = gate_scale, so that
// the operands of the in-chunk products stay within 2^(+-16 |b|).
// 8 warps; in gather and center thread (group, pair) =
// (threadIdx.x / 64, threadIdx.x % 64) owns key columns 2 pair, 2 pair + 1 of
// rows 8 group .. 8 group + 7 (4-byte bf16-pair accesses; a warp covers a row).
//   load:    (packed layout: warp 0 finds the chunk's sequence and hands it
//            over in chunk_info, one barrier) g rows, then q and k rows, with
//            16-byte cp.async in two commit groups (common/prepare_ops); warp
//            0 the betas meanwhile
//   gather:  the gates of a thread's elements as s = sigmoid(.) (the gate in
//            log2 is gate_scale s, the factor applied in center's FFMAs) and
//            their prefix S over its rows; each row group's sum to SMEM
//            (gsum); after the barrier every thread adds the group sums in one
//            order (never contracted), so all agree on G_tot bit for bit;
//            this runs while the q and k rows are still arriving
//   norm:    warps 0..3: diag(X X^T) of q rows 0-15, 16-31, k rows 0-15,
//            16-31; warps 4-5: diag(Q K^T) of rows 0-15, 16-31 (q . k from
//            the raw rows, exact bf16 products in fp32)
//   center:  Kda = k^ 2^(G - C_a), Qda = scale q^ 2^(G - C_a) and
//            Ki = k^ 2^(C_a - G) in bf16 (rounding points kd_anchored,
//            qd_anchored, ki), Kr = k^ 2^(G_tot - G) = Ki 2^(G_tot - C_a)
//            from Ki in fp32; gamma = 2^G_tot
//   mqk:     warps 0-2: the blocks (0,0), (1,0), (1,1) of Kda Ki^T and of
//            Qda Ki^T, 16 x 16 x 128 each, one warp both products of a block
//            (ldmatrix fragments, Ki's loaded once for both); then
//            L = diag(beta) strict-lower(.) and Mqk = lower-incl(.), both
//            in Ki's bytes, Mqk's diagonal as scale rq rk (q . k) from norm
//            (MQK_DIAGONAL_FROM_RAW_ROWS: the anchored bf16 operands cannot
//            resolve a near-cancelling q . k, which is a one-token
//            sequence's whole output)
//   inverse: warp 0: T11, T22 by forward substitution in fp32 (lanes 0-15 and
//            16-31 at once), writing T11^T and T22^T (bf16) and arriving on a
//            named barrier; then warps 0 and 1 each an 8-column slab of
//            X = L21 T11 and T21 = -T22 X (blocked 16 -> 32) by split-tf32
//            mma.sync (near fp32), writing T21^T and arriving on a second
//            one. Meanwhile warps 2-7 write the record's
//            Kd = Kda 2^C_a and Qd = Qda 2^C_a (restored from the bf16 tiles)
//            as core matrices
//   fold:    warps 2-7: UPD = [Kr^T T; Mqk T] (N HEAD_DIM + C, K C) by
//            mma.sync in 10 units of 16 rows (Kr^T by ldmatrix.trans from
//            the row tile): the T11 and T22 blocks after the first barrier,
//            the T21 block after the second (T12 = 0 skipped); stored as
//            core matrices
// The bf16 row tiles (q, k, g rows and the operands written over them, Kr)
// are SwizzledRows (common/prepare_ops): 256-byte rows, 128-byte
// swizzle, no padding. Uses kda_plan::prepare::* and
// wgmma/record_core_matrices (record_*_part, record_update_at).
namespace kda {
namespace frag {

// Kd or Qd rows of the record from an anchored hi tile: 8 keys per 16-byte
// store, restored by 2^C_a in fp32 and rounded once to bf16.
__device__ __forceinline__ uint4 restore_anchor_x8(uint4 v, float restore) {
  const u32 in[4] = {v.x, v.y, v.z, v.w};
  u32 out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[i] = pack_bf16x2(bf16_bits_to_float(static_cast<u16>(in[i] & 0xffffu)) * restore,
                         bf16_bits_to_float(static_cast<u16>(in[i] >> 16)) * restore);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// x = hi + lo as two tf32 operands, both by truncation (the low 13 bits
// cleared: valid tf32 encodings, one LOP3 each instead of cvt.rna's
// sequence): hi holds x to 2^-10, lo the rest to 2^-10 of itself, so hi + lo
// is x to about 2^-20 (relative).
__device__ __forceinline__ void split_tf32(float x, u32& hi, u32& lo) {
  constexpr u32 tf32_mask = 0xffffe000u;
  hi = __float_as_uint(x) & tf32_mask;
  lo = __float_as_uint(x - __uint_as_float(hi)) & tf32_mask;
}

// The 16 x 8 product of a 16 x 16 fp32 block (rows at `a`, A_PITCH elements
// apart) and the 16 x 8 fp32 block at `b` (B_PITCH) by one warp: two K steps of
// m16n8k8 tf32 MMAs on split operands x = hi + lo (split_tf32; hi*hi +
// hi*lo + lo*hi, error near fp32's). d in the m16n8 accumulator layout.
template <int A_PITCH, int B_PITCH>
__device__ __forceinline__ void warp_product_16x16x8_split_tf32(const float* a, const float* b, float (&d)[4]) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const float av[4] = {a[g * A_PITCH + 8 * ks + t], a[(g + 8) * A_PITCH + 8 * ks + t],
                         a[g * A_PITCH + 8 * ks + t + 4], a[(g + 8) * A_PITCH + 8 * ks + t + 4]};
    const float bv[2] = {b[(8 * ks + t) * B_PITCH + g], b[(8 * ks + t + 4) * B_PITCH + g]};
    u32 a_hi[4];
    u32 a_lo[4];
    u32 b_hi[2];
    u32 b_lo[2];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      split_tf32(av[e], a_hi[e], a_lo[e]);
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      split_tf32(bv[e], b_hi[e], b_lo[e]);
    }
    mma_tf32_1688(d, a_lo, b_hi[0], b_hi[1]);
    mma_tf32_1688(d, a_hi, b_lo[0], b_lo[1]);
    mma_tf32_1688(d, a_hi, b_hi[0], b_hi[1]);
  }
}

// The gate of one element without its factor gate_scale: the anchored gate
// (log2) is a2 = gate_scale sigmoid(a (g + bias)) = gate_scale s with
// s = 1 / (1 + 2^(g slope + offset)), slope = -a log2 e and offset = slope bias
// per key column: one FFMA and two MUFU operations. Prefix sums are kept in
// s; center applies gate_scale inside the FFMAs that form its exponents.
__device__ __forceinline__ float gate_sigmoid(float g, float slope, float offset) {
  return fast_rcp(1.0f + fast_exp2(fmaf(g, slope, offset)));
}

// The prefix sums S of s over a thread's ROWS rows (from row r0) for its two
// key columns, with the rows past the sequence end (r >= valid) adding 0
// unless FULL (every row valid: no selects). Returns the group sum.
template <bool FULL, class Rows, int ROWS>
__device__ __forceinline__ float2 gate_prefix(const u8* g_raw, int r0, int col, int valid, float slope,
                                              float2 offset, float2 (&S)[ROWS]) {
  float2 prefix = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int r = r0 + i;
    const u32 gp = *reinterpret_cast<const u32*>(g_raw + Rows::at(r, col));
    float s0 = gate_sigmoid(bf16_bits_to_float(static_cast<u16>(gp & 0xffffu)), slope, offset.x);
    float s1 = gate_sigmoid(bf16_bits_to_float(static_cast<u16>(gp >> 16)), slope, offset.y);
    if (!FULL) {
      s0 = r < valid ? s0 : 0.0f;
      s1 = r < valid ? s1 : 0.0f;
    }
    prefix.x = __fadd_rn(prefix.x, s0);
    prefix.y = __fadd_rn(prefix.y, s1);
    S[i] = prefix;
  }
  return prefix;
}

// One chunk of head h into its workspace record (all threads): the head's
// gate parameters are loaded while find_chunk() (every thread; it may hold a
// barrier) says which chunk, if any.
template <class FindChunk>
__device__ __forceinline__ void prepare_chunk32_of_head(const kda_plan::KdaParams& p, int h, FindChunk find_chunk) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int HALF = kda_plan::INVERSE_BLOCK; // T11, T22 by forward substitution, merged into T
  static_assert(C == 2 * HALF, "one 16 -> 32 merge");
  static_assert(kda_plan::ANCHOR_ROWS == C / 2, "C_a = (C / 2) gate_scale");
  constexpr int ROWS = 8; // rows per thread in gather and center
  constexpr int FOLD_DIAGONAL_BARRIER = 1;     // warp 0 arrives with T11^T, T22^T (warp 1 at once); warps 2-7 sync
  constexpr int FOLD_OFF_DIAGONAL_BARRIER = 2; // warps 0-1 arrive with their slabs of T21^T
  constexpr int INVERSE_DIAGONAL_BARRIER = 3;  // warp 0 hands T11, T22 (fp32) to warp 1
  constexpr int INVERSE_WARPS = 2;             // the inverse's off-diagonal slabs
  static_assert(C == 32 && D == 128 && P::THREADS == 2 * D, "chunk 32: 8 warps");
  static_assert(P::THREADS == (C / ROWS) * (D / 2), "one thread per (row group of 8, column pair)");
  static_assert(P::GSUM_BYTES >= 4 * (C / ROWS) * D, "one gate sum per row group and key column");
  static_assert(P::STAGES == 1 && P::CHUNKS_PER_CTA == 1, "one chunk per CTA");
  using Rows = SwizzledRows;
  static_assert(kda_plan::MQK_DIAGONAL_FROM_RAW_ROWS == 1, "this fragment forms Mqk's diagonal from the raw rows");
  static_assert(P::Q_RAW_PITCH == D && P::K_RAW_PITCH == D && P::G_RAW_PITCH == D && P::KDA_PITCH == D &&
                    P::QDA_PITCH == D && P::KI_PITCH == D && P::KR_PITCH == D,
                "the bf16 row tiles are unpadded 256-byte rows (SwizzledRows)");
  static_assert(P::Q_RAW_OFFSET % 128 == 0 && P::K_RAW_OFFSET % 128 == 0 && P::G_RAW_OFFSET % 128 == 0 &&
                    P::KR_OFFSET % 128 == 0,
                "swizzled tiles start on 128-byte lines");
  static_assert(P::QKDOT_BYTES >= 4 * C, "one q . k per row");
  static_assert(P::KI_OFFSET == P::Q_RAW_OFFSET && P::KDA_OFFSET == P::K_RAW_OFFSET && P::QDA_OFFSET == P::G_RAW_OFFSET,
                "center overwrites each thread's own raw elements: ki, kda, qda alias q_raw, k_raw, g_raw element for element");
  static_assert(P::RNORM_OFFSET % 16 == 0 && P::LMAT_OFFSET % 16 == 0 && P::TMAT_OFFSET % 16 == 0 &&
                    P::LMAT_PITCH % 4 == 0 && P::TMAT_PITCH % 4 == 0,
                "16-byte loads of rnorm and of L and T rows");
  extern __shared__ __align__(128) u8 smem[];
  const int col = 2 * (threadIdx.x % (D / 2)); // key columns col, col + 1
  const int group = threadIdx.x / (D / 2);      // rows 8 group .. 8 group + 7
  const int r0 = ROWS * group;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;

  static_assert(P::CHUNK_INFO_BYTES >= 7 * 8 && P::CHUNK_INFO_OFFSET % 8 == 0, "the chunk's 7 i64 for the CTA");
  // the head's gate parameters, loaded while the chunk's sequence is looked up
  const float a_log = p.a_log[h];
  const float2 bias = *reinterpret_cast<const float2*>(p.dt_bias + h * D + col);
  const PrepareChunk c = find_chunk();
  if (!c.exists) {
    return;
  }
  const u8* q_raw = smem + P::Q_RAW_OFFSET;
  const u8* k_raw = smem + P::K_RAW_OFFSET;
  const u8* g_raw = smem + P::G_RAW_OFFSET;
  // the g rows first (one commit group): gather runs while q and k arrive
  load_chunk_tile<Rows>(p, c, h, p.g, smem + P::G_RAW_OFFSET);
  cp_async_commit();
  load_chunk_tile<Rows>(p, c, h, p.q, smem + P::Q_RAW_OFFSET);
  load_chunk_tile<Rows>(p, c, h, p.k, smem + P::K_RAW_OFFSET);
  cp_async_commit();
  const float slope = -1.4426950408889634f * __expf(a_log); // -a log2 e
  const float2 offset = make_float2(slope * bias.x, slope * bias.y);
  const float anchor = static_cast<float>(kda_plan::ANCHOR_ROWS) * p.gate_scale; // C_a (log2)
  u8* record = p.workspace + (c.chunk * p.heads + h) * static_cast<i64>(kda_plan::WS_RECORD_BYTES);
  float* const beta = reinterpret_cast<float*>(smem + P::BETA_OFFSET);
  if (threadIdx.x < C) {
    const float b = chunk_row_beta(p, c, h, threadIdx.x);
    beta[threadIdx.x] = b;
    reinterpret_cast<float*>(record + kda_plan::WS_BETA_OFFSET)[threadIdx.x] = b;
  }
  cp_async_wait<1>();
  __syncthreads(); // the g rows

  // gather: the gates of this thread's 8 rows x 2 columns (as s, without
  // gate_scale), their prefix, and each row group's sum to `gsum` (q and k
  // are read again in center, from the bytes this thread then overwrites:
  // 4 CTAs per SM); the rows of a full chunk need no selects
  float* const gsum = reinterpret_cast<float*>(smem + P::GSUM_OFFSET); // [C / ROWS][D]
  float2 S[ROWS];
  *reinterpret_cast<float2*>(gsum + group * D + col) =
      c.valid >= C ? gate_prefix<true, Rows>(g_raw, r0, col, c.valid, slope, offset, S)
                   : gate_prefix<false, Rows>(g_raw, r0, col, c.valid, slope, offset, S);
  cp_async_wait<0>();
  __syncthreads(); // the q and k rows, gsum

  // norm: warps 0-3 the row norms, warps 4-5 q . k per row (the rest go on
  // to the group sums)
  float* const rnorm = reinterpret_cast<float*>(smem + P::RNORM_OFFSET); // [2][C]
  float* const qkdot = reinterpret_cast<float*>(smem + P::QKDOT_OFFSET); // [C]
  if (warp < 4) {
    const int rows = HALF * (warp & 1);
    warp_row_rnorms<Rows>((warp < 2 ? q_raw : k_raw) + Rows::at(rows, 0), rnorm + C * (warp >> 1) + rows);
  } else if (warp < 6) {
    const int rows = HALF * (warp & 1);
    warp_row_dots<Rows>(q_raw + Rows::at(rows, 0), k_raw + Rows::at(rows, 0), qkdot + rows);
  }

  // S before this group's first row and S_tot (G = gate_scale S): the group
  // sums added in one order by every thread (never contracted), so all
  // groups agree bit for bit
  const float gs = p.gate_scale;
  float2 base = make_float2(0.0f, 0.0f);
  float2 s_total = make_float2(0.0f, 0.0f);
#pragma unroll
  for (int q4 = 0; q4 < C / ROWS; ++q4) {
    if (q4 == group) {
      base = s_total;
    }
    const float2 part = *reinterpret_cast<const float2*>(gsum + q4 * D + col);
    s_total.x = __fadd_rn(s_total.x, part.x);
    s_total.y = __fadd_rn(s_total.y, part.y);
  }
  if (group == 0) { // gamma = 2^G_tot
    *reinterpret_cast<float2*>(record + kda_plan::WS_GAMMA_OFFSET + 4 * col) =
        make_float2(fast_exp2(gs * s_total.x), fast_exp2(gs * s_total.y));
  }

  __syncthreads(); // rnorm

  // center: each thread reads its own q, k elements, then writes the operands
  // over them (ki over q_raw, kda over k_raw, qda over g_raw: same elements,
  // same thread); bf16 pairs, one 4-byte access per tile and row
  u8* const kda_s = smem + P::KDA_OFFSET;
  u8* const qda_s = smem + P::QDA_OFFSET;
  u8* const ki_s = smem + P::KI_OFFSET;
  u8* const kr_s = smem + P::KR_OFFSET; // Kr = k^ 2^(G_tot - G) = Ki 2^(G_tot - C_a), from Ki in fp32
  const float kr_scale0 = fast_exp2(fmaf(gs, s_total.x, -anchor)); // 2^(G_tot - C_a)
  const float kr_scale1 = fast_exp2(fmaf(gs, s_total.y, -anchor));
  float4 qn4; // this thread's row norms by 16-byte loads, 4 rows at a time (registers)
  float4 kn4;
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int r = r0 + i;
    if (i % 4 == 0) {
      qn4 = *reinterpret_cast<const float4*>(rnorm + r);
      kn4 = *reinterpret_cast<const float4*>(rnorm + C + r);
    }
    const float kscale = i % 4 == 0 ? kn4.x : i % 4 == 1 ? kn4.y : i % 4 == 2 ? kn4.z : kn4.w;
    const float qscale = p.scale * (i % 4 == 0 ? qn4.x : i % 4 == 1 ? qn4.y : i % 4 == 2 ? qn4.z : qn4.w);
    const int at = Rows::at(r, col);
    const u32 kp = *reinterpret_cast<const u32*>(k_raw + at);
    const u32 qp = *reinterpret_cast<const u32*>(q_raw + at);
    float kda_f[2];
    float qda_f[2];
    float ki_f[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float Sr = (e == 0 ? base.x + S[i].x : base.y + S[i].y); // G = gate_scale Sr
      const float kn = bf16_bits_to_float(static_cast<u16>(kp >> (16 * e))) * kscale;
      const float qn = bf16_bits_to_float(static_cast<u16>(qp >> (16 * e))) * qscale;
      const float down = fast_exp2(fmaf(gs, Sr, -anchor)); // 2^(G - C_a)
      kda_f[e] = kn * down;
      qda_f[e] = qn * down;
      ki_f[e] = kn * fast_exp2(fmaf(-gs, Sr, anchor)); // 2^(C_a - G)
    }
    const u32 kda = pack_bf16x2(kda_f[0], kda_f[1]);
    const u32 qda = pack_bf16x2(qda_f[0], qda_f[1]);
    const u32 ki = pack_bf16x2(ki_f[0], ki_f[1]);
    *reinterpret_cast<u32*>(kda_s + at) = kda;
    *reinterpret_cast<u32*>(qda_s + at) = qda;
    *reinterpret_cast<u32*>(ki_s + at) = ki;
    *reinterpret_cast<u32*>(kr_s + at) = pack_bf16x2(ki_f[0] * kr_scale0, ki_f[1] * kr_scale1);
  }
  __syncthreads();

  // mqk: warps 0-2 the blocks (0,0), (1,0), (1,1) of both products, one
  // load of Ki's fragments for L and Mqk (warps 3-7 wait: the restore below
  // fills warp 0's inverse instead)
  const int ib = warp == 0 ? 0 : 1;
  const int jb = warp == 2 ? 1 : 0;
  float lprod[2][4];
  float mprod[2][4];
  if (warp < 3) {
    const int a_rows = Rows::at(HALF * ib, 0);
    const int b_rows = Rows::at(HALF * jb, 0);
    warp_products_kq_16x16<Rows>(kda_s + a_rows, qda_s + a_rows, ki_s + b_rows, lprod, mprod);
  }
  __syncthreads(); // ki is dead from here; kda and qda live on for the restore

  // L and Mqk blocks to SMEM (both over ki); Mqk's diagonal scale rq rk q . k
  float* const lmat = reinterpret_cast<float*>(smem + P::LMAT_OFFSET); // [C][LMAT_PITCH]
  u8* const mqk_s = smem + P::MQK_OFFSET;                               // bf16 [C][MQK_PITCH]
  if (warp < 3) {
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = HALF * ib + g + 8 * hf;
        const int j = HALF * jb + 8 * nj + 2 * t;
        lmat[i * P::LMAT_PITCH + j] = i > j ? beta[i] * lprod[nj][2 * hf] : 0.0f;
        lmat[i * P::LMAT_PITCH + j + 1] = i > j + 1 ? beta[i] * lprod[nj][2 * hf + 1] : 0.0f;
        const float m0 = i > j ? mprod[nj][2 * hf] : i == j ? p.scale * rnorm[i] * rnorm[C + i] * qkdot[i] : 0.0f;
        const float m1 = i > j + 1 ? mprod[nj][2 * hf + 1]
                         : i == j + 1 ? p.scale * rnorm[i] * rnorm[C + i] * qkdot[i]
                                      : 0.0f;
        *reinterpret_cast<u32*>(mqk_s + 2 * (i * P::MQK_PITCH + j)) = pack_bf16x2(m0, m1);
        if (warp == 0) { // the upper block (0, 1) of the lower-triangular Mqk
          *reinterpret_cast<u32*>(mqk_s + 2 * (i * P::MQK_PITCH + j + HALF)) = 0u;
        }
      }
    }
  }
  __syncthreads();

  // inverse: warps 0-1 invert I + L and write T^T (bf16) themselves; warps 2-7
  // meanwhile restore the record's Kd and Qd from the anchored tiles
  u8* const tt = smem + P::TT_OFFSET; // bf16 T^T [C][TT_PITCH]
  if (warp < INVERSE_WARPS) {
    float* const tmat = reinterpret_cast<float*>(smem + P::TMAT_OFFSET); // [C][TMAT_PITCH], fp32 T
    if (warp == 0) {
      // T11 and T22 by forward substitution (lanes 0-15 and 16-31): lane
      // (blk, j) holds column j of its block, i.e. row d0 + j of T^T
      const int j = lane & 15;
      const int blk = lane >> 4; // 0: T11, 1: T22
      const int d0 = HALF * blk;
      float tcol[HALF];
      unit_lower_inverse_column16<P::LMAT_PITCH>(lmat + d0 * P::LMAT_PITCH + d0, j, tcol);
#pragma unroll
      for (int i = 0; i < HALF; ++i) {
        tmat[(d0 + i) * P::TMAT_PITCH + d0 + j] = tcol[i];
      }
      u32 packed[HALF / 2];
#pragma unroll
      for (int e = 0; e < HALF / 2; ++e) {
        packed[e] = pack_bf16x2(tcol[2 * e], tcol[2 * e + 1]);
      }
      uint4* const row = reinterpret_cast<uint4*>(tt + 2 * ((d0 + j) * P::TT_PITCH + d0));
      row[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
      row[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
      named_barrier_arrive(INVERSE_DIAGONAL_BARRIER, 32 * INVERSE_WARPS); // T11, T22 (fp32) for warp 1
    } else {
      named_barrier_sync(INVERSE_DIAGONAL_BARRIER, 32 * INVERSE_WARPS);
    }
    named_barrier_arrive(FOLD_DIAGONAL_BARRIER, P::THREADS); // T11^T and T22^T are in tt
    // the off-diagonal block by split-tf32 mma.sync, warp w the 8-column slab
    // nt = w (each slab only its warp's own): X = L21 T11 into the zero
    // upper-right block of T as scratch, then T21 = -T22 X straight into T^T
    // (rows 0-15, columns 16-31)
    const int nt = warp;
    {
      float x[4];
      warp_product_16x16x8_split_tf32<P::LMAT_PITCH, P::TMAT_PITCH>(lmat + HALF * P::LMAT_PITCH, tmat + 8 * nt, x);
      float* const out = tmat + HALF + 8 * nt + 2 * t;
      *reinterpret_cast<float2*>(out + g * P::TMAT_PITCH) = make_float2(x[0], x[1]);
      *reinterpret_cast<float2*>(out + (g + 8) * P::TMAT_PITCH) = make_float2(x[2], x[3]);
    }
    __syncwarp();
    {
      float y[4];
      warp_product_16x16x8_split_tf32<P::TMAT_PITCH, P::TMAT_PITCH>(tmat + HALF * P::TMAT_PITCH + HALF,
                                                                   tmat + HALF + 8 * nt, y);
      // y = (T22 X)[g + 8 hf][8 nt + 2 t + e] = -T21 there = -T^T[8 nt + 2 t + e][HALF + g + 8 hf]
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          *reinterpret_cast<u16*>(tt + 2 * ((8 * nt + 2 * t + e) * P::TT_PITCH + HALF + g + 8 * hf)) =
              float_to_bf16_bits(-y[2 * hf + e]);
        }
      }
    }
    named_barrier_arrive(FOLD_OFF_DIAGONAL_BARRIER, P::THREADS); // this slab of T21^T is in tt
  } else {
    // the record's Kd = Kda 2^C_a and Qd = Qda 2^C_a: the 64 rows n of KQ
    // (Kd rows 0-31 from kda, Qd rows 32-63 from qda, the tile after it) in
    // 16 16-byte parts of 8 keys, over the 192 threads of warps 2-7: a thread
    // keeps its row n = worker % 64 and takes parts first_part + 3 k (first_part =
    // worker / 64), so a warp stores one part of 32 rows n, which the record
    // holds as 512 contiguous bytes (K-major core matrices, N groups adjacent:
    // SBO 128) and the swizzled tile serves as conflict-free 16-byte reads: a
    // warp's store covers 4 whole 128-byte lines, where 16 consecutive parts
    // of a row touched 16 lines one sector each
    constexpr int parts = D / 8;
    constexpr int workers = P::THREADS - 32 * INVERSE_WARPS;
    constexpr int part_step = workers / (2 * C); // a thread keeps its row n and takes parts first_part + 3 k
    static_assert(workers % (2 * C) == 0 && (2 * C) % 32 == 0,
                  "a warp's 32 items are 32 rows of one part; first_part is warp-uniform");
    static_assert(P::QDA_OFFSET == P::KDA_OFFSET + C * 2 * D, "qda's rows follow kda's");
    static_assert(kda_plan::WS_KQ_SBO == 128, "KQ's rows n of one part are contiguous in the record");
    const unsigned worker = threadIdx.x - 32u * INVERSE_WARPS;
    const int n = static_cast<int>(worker % (2 * C));
    const int first_part = static_cast<int>(worker / (2 * C));
    const float restore = fast_exp2(anchor);
    // record_kd_part(C + r, .) is record_qd_part(r, .): KQ's N rows run on into
    // Qd; parts advance by LBO (an immediate per k), the source block by the
    // swizzle's XOR (Rows::at(n, 8 part) = n 256 + block_offset(16 part, 16 (n & 7)))
    static_assert(Rows::pitch == D, "SwizzledRows: 256-byte rows");
    const u8* const src_row = kda_s + n * 2 * D;
    const int row7_16 = (n & 7) << 4;
    u8* const dst = record + record_kd_part(n, first_part);
#pragma unroll
    for (int k = 0; k < (parts + part_step - 1) / part_step; ++k) {
      if (first_part + part_step * k < parts) {
        const uint4 x = *reinterpret_cast<const uint4*>(
            src_row + Rows::block_offset(16 * (first_part + part_step * k), row7_16));
        *reinterpret_cast<uint4*>(dst + part_step * k * kda_plan::WS_KQ_LBO) = restore_anchor_x8(x, restore);
      }
    }

    // fold: UPD[n][c'] = sum_c A[n][c] T[c][c'] for 10 units of 16 rows n,
    // A = Kr^T (units 0-7: keys 16 u ..) or Mqk (units 8-9: output rows
    // 16 (u - 8) ..); fold warp f = w - 2 takes unit f, warps 2-5 also unit f + 6.
    // B = T^T rows c' (N), chunk rows c (K) in 16 x 16 blocks (np, kc) =
    // T[16 kc .., 16 np ..]^T: T11^T (0, 0) and T22^T (1, 1) as soon as warp 0
    // has them, T21^T (0, 1) after its off-diagonal step; T12 = 0 (1, 0) is
    // skipped. Matrix j = lane / 8 of a B block is rows 8 (j / 2) .., columns 8 (j % 2) ..
    const int b_row = 8 * (lane >> 4) + (lane & 7);
    const int b_col = 8 * ((lane >> 3) & 1);
    constexpr int FOLD_WARPS = 8 - INVERSE_WARPS;
    constexpr int UNITS = D / 16 + C / 16;
    static_assert(UNITS <= 2 * FOLD_WARPS && UNITS > FOLD_WARPS, "one or two units per fold warp");
    const int fold_warp = warp - INVERSE_WARPS;
    const int units = fold_warp < UNITS - FOLD_WARPS ? 2 : 1;
    u32 a[2][2][4];      // [unit][kc]: A fragments
    float part0[2][2][4]; // [unit][nt]: columns 0-15, waiting for T21
    auto t_block = [&](int np, int kc, u32 (&bt)[4]) { // loaded once per warp for its units
      ldmatrix_x4(bt, tt + 2 * ((HALF * np + b_row) * P::TT_PITCH + HALF * kc + b_col));
    };
    auto block_product = [&](const u32 (&x)[4], const u32 (&bt)[4], float (&acc)[2][4]) {
      mma_bf16_16816(acc[0], x, bt[0], bt[1]);
      mma_bf16_16816(acc[1], x, bt[2], bt[3]);
    };
    // UPD element (n0 + g + 8 hf, 16 np + 8 nt + 2 t) of a unit: this thread's
    // element of the core matrix (record_update_at(g, 2 t)) plus the matrix's
    // offset, (n0 / 8 + hf) SBO + (2 np + nt) LBO: one base per unit, the rest
    // immediates
    static_assert(kda_plan::WS_UPD_SBO > 0 && kda_plan::WS_UPD_LBO > 0, "UPD in K-major core matrices");
    u8* const upd_thread = record + record_update_at(g, 2 * t);
    auto store_columns = [&](int n0, int np, const float (&acc)[2][4]) {
      u8* const unit = upd_thread + (n0 / 8) * kda_plan::WS_UPD_SBO;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          *reinterpret_cast<u32*>(unit + hf * kda_plan::WS_UPD_SBO + (2 * np + nt) * kda_plan::WS_UPD_LBO) =
              pack_bf16x2(acc[nt][2 * hf], acc[nt][2 * hf + 1]);
        }
      }
    };
    auto unit_rows = [&](int k) { return k == 0 ? fold_warp : fold_warp + FOLD_WARPS; };
    auto unit_n0 = [&](int u) { return 16 * u; }; // Kr^T rows 16 u (u < 8), then Mqk rows D + 16 (u - 8)
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (k < units) {
        const int u = unit_rows(k);
        if (u < 8) { // Kr^T rows: matrix j holds A rows 8 (j % 2) .., columns 8 (j / 2) .. = Kr rows c, keys transposed
          const int c_row = 8 * (lane >> 4) + (lane & 7);
          const int key = 16 * u + 8 * ((lane >> 3) & 1);
#pragma unroll
          for (int kc = 0; kc < 2; ++kc) {
            ldmatrix_x4_trans(a[k][kc], kr_s + Rows::at(HALF * kc + c_row, key));
          }
        } else {
          const int a_row = 8 * ((lane >> 3) & 1) + (lane & 7);
          const int a_col = 8 * (lane >> 4);
#pragma unroll
          for (int kc = 0; kc < 2; ++kc) {
            ldmatrix_x4(a[k][kc], mqk_s + 2 * ((16 * (u - 8) + a_row) * P::MQK_PITCH + HALF * kc + a_col));
          }
        }
      }
    }
    named_barrier_sync(FOLD_DIAGONAL_BARRIER, P::THREADS);
    u32 t22t[4];
    u32 t11t[4];
    t_block(1, 1, t22t);
    t_block(0, 0, t11t);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (k < units) {
        float part1[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        block_product(a[k][1], t22t, part1); // columns 16-31: Kr^T[., 16..31] T22
        store_columns(unit_n0(unit_rows(k)), 1, part1);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            part0[k][nt][e] = 0.0f;
          }
        }
        block_product(a[k][0], t11t, part0[k]); // columns 0-15: Kr^T[., 0..15] T11 ...
      }
    }
    named_barrier_sync(FOLD_OFF_DIAGONAL_BARRIER, P::THREADS);
    u32 t21t[4];
    t_block(0, 1, t21t);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (k < units) {
        block_product(a[k][1], t21t, part0[k]); // ... + Kr^T[., 16..31] T21
        store_columns(unit_n0(unit_rows(k)), 0, part0[k]);
      }
    }
  }
  publish_record_ready(p, c.chunk * p.heads + h);
}

// Beside a persistent recurrence of R = p.prepare_streams CTAs (the split of
// runtime/prepare_overlap): CTA b of the R x K grid serves recurrence CTA
// s = b mod R, whose items are s, s + R, s + 2R, ... (persistent_work's
// order). The items' local chunks from p.chunk_begin on, item after item, are
// that CTA's sequence of records, and this CTA prepares its records b / R,
// b / R + K, b / R + 2K, ...: the K CTAs of a stream take turns, so records
// become ready in about the order the recurrence reads them. A CTA never
// waits for the recurrence (the overlap's deadlock argument). Warp 0 walks
// the items and hands each chunk to the CTA through `info` (8 i64, also the
// walk's position between chunks): the chunk, the span (start, length, first
// chunk), the item, the stream's records before it, its record count (-1:
// not looked up), and the head with "exists" in bit 32.
__device__ __forceinline__ void prepare_walk32(const kda_plan::KdaParams& p) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  static_assert(kda_plan::M_TILE == kda_plan::HEAD_DIM, "an item is a (sequence, head): one record per chunk");
  extern __shared__ __align__(128) u8 smem[];
  static_assert(P::CHUNK_INFO_BYTES >= 8 * 8 && P::CHUNK_INFO_OFFSET % 8 == 0, "the walk's 8 i64");
  // only the turn k lives across a chunk: the rest is recomputed from the
  // parameters each turn. Under the 64-register bound of four CTAs per SM the
  // loop still spills (ptxas: 176 B of spill stores, none without the loop;
  // a call of its own for the chunk spilled as much): the values the chunk
  // derives from its thread index, hoisted out of the loop, stay live.
#pragma unroll 1
  for (int k = 0;; ++k) {
    i64* const info = reinterpret_cast<i64*>(smem + P::CHUNK_INFO_OFFSET);
    if (threadIdx.x < 32) { // the whole warp: persistent_work may shuffle
      const unsigned streams = static_cast<unsigned>(p.prepare_streams);
      const i64 want = blockIdx.x / streams + static_cast<i64>(k) * (gridDim.x / streams);
      const i64 items = persistent_items(p);
      const bool first = k == 0;
      i64 item = first ? static_cast<i64>(blockIdx.x % streams) : info[4];
      i64 before = first ? 0 : info[5];
      i64 count = first ? -1 : info[6];
      SequenceSpan seq{first ? 0 : info[1], first ? 0 : info[2], first ? 0 : info[3]};
      int h = first ? 0 : static_cast<int>(info[7] & 0xffffffff);
      while (item < items) {
        if (count < 0) {
          const RecurrenceWork w = persistent_work(p, item);
          seq = w.seq;
          h = w.h;
          count = max(chunks_of(seq.length) - static_cast<i64>(p.chunk_begin), i64{0});
        }
        if (want < before + count) {
          break;
        }
        before += count;
        item += streams;
        count = -1;
      }
      __syncwarp(); // every lane has read the walk's position
      if (threadIdx.x == 0) {
        info[0] = seq.first_chunk + p.chunk_begin + (want - before);
        info[1] = seq.start;
        info[2] = seq.length;
        info[3] = seq.first_chunk;
        info[4] = item;
        info[5] = before;
        info[6] = count;
        info[7] = static_cast<i64>(static_cast<u32>(h)) | (item < items ? (i64{1} << 32) : 0);
      }
    }
    __syncthreads(); // the chunk for every warp
    const i64 head_and_exists = info[7];
    if ((head_and_exists >> 32) == 0) {
      return; // the stream has no more records for this CTA
    }
    PrepareChunk c;
    c.chunk = info[0];
    c.seq = {info[1], info[2], info[3]};
    c.row0 = (c.chunk - c.seq.first_chunk) * C;
    c.valid = static_cast<int>(min(static_cast<i64>(C), c.seq.length - c.row0));
    c.exists = true;
    prepare_chunk32_of_head(p, static_cast<int>(head_and_exists & 0xffffffff), [&] { return c; });
    __syncthreads(); // every warp is done with the chunk's SMEM before warp 0 writes the next `info`
  }
}

__device__ __forceinline__ void prepare_chunk32(const kda_plan::KdaParams& p) {
  namespace P = kda_plan::prepare;
  allow_dependent_launch(); // the recurrence may set up while the last chunks are prepared
  if constexpr (kda_plan::PREPARE_WALKS_ITEMS != 0) {
    if (p.prepare_streams > 0) {
      prepare_walk32(p);
      return;
    }
  }
  int h = prepare_head_of_block(p); // known before the chunk's sequence is looked up
  prepare_chunk32_of_head(p, h, [&] {
    extern __shared__ __align__(128) u8 smem[];
    return kda_plan::LAYOUT_PACKED
               ? prepare_chunk_of_block_once(p, h, reinterpret_cast<i64*>(smem + P::CHUNK_INFO_OFFSET))
               : prepare_chunk_of_block(p, h);
  });
}

} // namespace frag
} // namespace kda
