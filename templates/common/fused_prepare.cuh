// kdajit fragment: common/fused_prepare
// The load warp and the producer groups of the fused kernels (seed note 000;
// tcgen05 chunk C = 32 or 16, warp_mma chunk 32): producer group p prepares chunks p, p + G, p + 2G, ...
// (G = PRODUCER_GROUPS, a divisor of STAGES) in ring slot c mod STAGES while
// the consumer roles take the chunks in order. Per chunk:
//   load (the load warp, chunks in order, or the group itself): once the
//            slot is free (the consumer is done with chunk c - STAGES), the raw q, k, g tiles: a whole
//            chunk by TMA (two 64-column boxes per tile, 128-byte swizzle), a
//            tail chunk by 16-byte cp.async with the rows past the sequence end
//            zero-filled (TMA would read the next sequence's rows)
//   norm:    1 / sqrt(sum x^2 + 1e-6) of the q and k rows (128 / 2C threads a row);
//            beta = sigmoid(logit) of the valid rows
//   gate:    thread j owns key column j: a2 = gate_scale sigmoid(exp(A_log) (g + dt_bias)),
//            G_i its prefix over the rows (fp32, in order), g_total = G_(C-1)
//   center:  anchored operands over the raw tiles, element for element by the
//            thread that read them: Kda = k^ 2^(G - C_a) rounded once to bf16;
//            Qda = scale q^ 2^(G - C_a) and Ki = k^ 2^(C_a - G) as split pairs
//            hi = bf16(x) (over the raw tiles) and lo = bf16(x - hi) (qd_lo, ki_lo)
//            (C_a = ANCHOR_ROWS x gate_scale; 0 without an anchor, chunk 16)
//   mqk:     warp w < 2C / 16: rows 16 (w % (C / 16)) .. of Kda Ki^T (hi x hi + hi x lo)
//            or Qda Ki^T (hi x hi + hi x lo + lo x hi) by mma.sync m16n8k16
//            over K = 128 (near-fp32 Mqk: with bf16 Qda and Ki a one-token
//            sequence misses spec section 8, see schedules/README.md); once
//            the group is past the lo tiles: L = diag(beta) strict-lower, bf16,
//            to lmat; Mqk = lower-incl, bf16, to mqk (rows 128 .. of the fused
//            GEMM's B operand [Kr | Mqk^T], right after kr_t)
//   inverse: T = (I + L)^-1 blocked 8 -> 16 (-> 32) (inverse_scratch, fp32):
//            8 x 8 diagonal blocks by forward substitution in fp32, then per
//            merge X = L21 T11 and T21 = -T22 X by mma.sync m16n8k16 (bf16
//            operands, one warp per merged block); T rounded to bf16 into tinv (over lmat)
//   restore: Kd = Kda 2^C_a, Qd = Qda_hi 2^C_a (bf16, in place), Kr = Ki_hi 2^(G_tot - C_a)
//            (bf16) to kr_t (Kr^T rows); then V over ki (TMA, or cp.async for a
//            tail chunk), and slot_ready once the group has fenced its operand
//            stores for the async proxy (the tensor core of tcgen05 reads
//            them there; ldmatrix readers need no more than the barrier)
// Uses kda_plan::main::*, tile_at / narrow_at / load_tile (common/fused_ring).
namespace kda {
namespace frag {

// Once chunk c - STAGES has left the slot (the consumer released it), the raw
// q, k, g tiles of chunk c into it, counted on tile_loaded: one arrival per
// thread of the `threads` issuing them and tile.
__device__ __forceinline__ void load_raw_chunk(const kda_plan::KdaParams& p, const RingBarriers& bar,
                                               const RingChunk& r, const SequenceSpan& seq, int h, i64 c, int thread,
                                               int threads) {
  namespace F = kda_plan::main;
  if (c >= F::STAGES) {
    mbarrier_wait(bar.slot_free + r.slot, r.round_parity ^ 1u);
  }
  const i64 row0 = seq.start + c * kda_plan::CHUNK_SIZE;
  u64* const loaded = bar.tile_loaded + r.slot;
  load_tile(reinterpret_cast<u8*>(r.at->q_raw), p.tma_q, p.q, p.heads, h, row0, r.valid, loaded, thread, threads);
  load_tile(reinterpret_cast<u8*>(r.at->k_raw), p.tma_k, p.k, p.heads, h, row0, r.valid, loaded, thread, threads);
  load_tile(reinterpret_cast<u8*>(r.at->g_raw), p.tma_g, p.g, p.heads, h, row0, r.valid, loaded, thread, threads);
}

// The load warp: every chunk's raw tiles, in order, as slots come free.
__device__ __forceinline__ void load_raw_tiles(const kda_plan::KdaParams& p, const RingBarriers& bar, u8* smem,
                                               const SequenceSpan& seq, int h, i64 chunks) {
  for (i64 c = 0; c < chunks; ++c) {
    load_raw_chunk(p, bar, ring_chunk(smem, seq, c), seq, h, c, threadIdx.x & 31, 32);
  }
}

// One warp: out(i, j, (A B)[i][j]) for size x size blocks (size 8 or 16) by
// mma.sync m16n8k16: bf16 operands (zero past `size`), fp32 accumulation;
// a(i, k) and b(k, j) give the operands in fp32 (rounded here).
template <class OperandA, class OperandB, class Out>
__device__ __forceinline__ void warp_block_product(int size, OperandA a, OperandB b, Out out) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  auto av = [&](int i, int k) { return i < size && k < size ? a(i, k) : 0.0f; };
  auto bv = [&](int k, int j) { return k < size && j < size ? b(k, j) : 0.0f; };
  const u32 fa[4] = {pack_bf16x2(av(g, 2 * t), av(g, 2 * t + 1)), pack_bf16x2(av(g + 8, 2 * t), av(g + 8, 2 * t + 1)),
                     pack_bf16x2(av(g, 2 * t + 8), av(g, 2 * t + 9)),
                     pack_bf16x2(av(g + 8, 2 * t + 8), av(g + 8, 2 * t + 9))};
  for (int nt = 0; nt < size / 8; ++nt) {
    const int j = 8 * nt + g;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_bf16_16816(d, fa, pack_bf16x2(bv(2 * t, j), bv(2 * t + 1, j)), pack_bf16x2(bv(2 * t + 8, j), bv(2 * t + 9, j)));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e >> 1);
      const int col = 8 * nt + 2 * t + (e & 1);
      if (row < size && col < size) {
        out(row, col, d[e]);
      }
    }
  }
}

// Rows 8 b .. 8 b + 7 of T = (I + L)^-1 restricted to the diagonal block b, column j (forward substitution).
__device__ __forceinline__ void diagonal_block_inverse(const u16* lmat, float* t, int b, int j) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int B = kda_plan::INVERSE_BLOCK;
  float col[B];
#pragma unroll
  for (int i = 0; i < B; ++i) {
    float s = i == j ? 1.0f : 0.0f;
    if (i > j) {
#pragma unroll
      for (int m = 0; m < i; ++m) {
        if (m >= j) {
          s -= bf16_bits_to_float(lmat[(B * b + i) * C + B * b + m]) * col[m];
        }
      }
    }
    col[i] = s;
    t[(B * b + i) * C + B * b + j] = s;
  }
}

// OWN_LOADS: the group loads its chunks' raw tiles itself, no load warp (the
// group waits for the slot of chunk c to come free before it loads c; a load
// warp would load ahead only when the group is still busy with an earlier
// chunk, and costs a warp's registers).
template <bool OWN_LOADS>
__device__ __forceinline__ void prepare_group(const kda_plan::KdaParams& p, const RingBarriers& bar, u8* smem,
                                              const SequenceSpan& seq, int h, i64 chunks, int group, int gt) {
  namespace F = kda_plan::main;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int B = kda_plan::INVERSE_BLOCK;
  constexpr int THREADS = 32 * F::PRODUCER_WARPS / F::PRODUCER_GROUPS;
  static_assert((C == 16 || C == 32) && D == 128 && THREADS == D,
                "chunk 16 or 32: a producer group of 128 threads, one per key column");
  static_assert(F::STAGES % F::PRODUCER_GROUPS == 0, "producer group p fills the ring slots p, p + G, ...");
  static_assert(B == 8 && (C / B == 2 || C / B == 4), "the inverse: 8 x 8 blocks, merged 8 -> 16 (-> 32)");
  static_assert(kda_plan::ANCHOR_ROWS == C / 2 || kda_plan::ANCHOR_ROWS == 0, "C_a = (C / 2) gate_scale, or none");
  constexpr int ROW_THREADS = THREADS / (2 * C); // threads per q or k row in norm
  constexpr int ROW_BLOCKS = C / 16;             // 16-row blocks of L and Mqk
  static_assert(F::KI_OFFSET == F::Q_RAW_OFFSET && F::KD_ANCHORED_OFFSET == F::K_RAW_OFFSET &&
                    F::QD_ANCHORED_OFFSET == F::G_RAW_OFFSET && F::KD_OFFSET == F::KD_ANCHORED_OFFSET &&
                    F::QD_OFFSET == F::QD_ANCHORED_OFFSET && F::V_OFFSET == F::KI_OFFSET &&
                    F::TINV_OFFSET == F::LMAT_OFFSET,
                "center, restore and the inverse work in place; V arrives over ki");
  static_assert(F::MQK_OFFSET == F::KR_T_OFFSET + F::KR_T_BYTES && F::KR_T_BYTES == (D / 8) * NARROW_SBO,
                "kr_t and mqk are one operand: [Kr | Mqk^T], N = D + C rows of C keys");
  const int barrier_id = 1 + group;
  const int warp = gt >> 5;
  const int lane = gt & 31;
  const int j = gt; // key column of gate, center and restore
  const float a_scale = __expf(p.a_log[h]);
  const float bias = p.dt_bias[h * D + j];
  const float anchor = static_cast<float>(kda_plan::ANCHOR_ROWS) * p.gate_scale;
  for (i64 c = group; c < chunks; c += F::PRODUCER_GROUPS) {
    const RingChunk r = ring_chunk(smem, seq, c);
    F::StageSlot& slot = *r.at;
    u8* const q_raw = reinterpret_cast<u8*>(slot.q_raw);
    u8* const k_raw = reinterpret_cast<u8*>(slot.k_raw);
    u8* const g_raw = reinterpret_cast<u8*>(slot.g_raw);
    float* const rnorm = slot.row_rnorm; // [q, k][C]
    float* const beta = slot.beta;
    float* const g_total = slot.g_total;
    u16* const lmat = slot.lmat_at.lmat;                   // [C][C] row-major
    float* const tf = slot.inverse_scratch_at.inverse_scratch; // [C][C]
    u8* const kr_t = reinterpret_cast<u8*>(slot.kr_t); // [D][C] core matrices: Kr^T
    u8* const mqk = reinterpret_cast<u8*>(slot.mqk);   // [C][C] core matrices: Mqk (rows D .. of the operand)
    u8* const qd_lo = reinterpret_cast<u8*>(slot.qd_lo);
    u8* const ki_lo = reinterpret_cast<u8*>(slot.ki_lo);
    if (OWN_LOADS) {
      load_raw_chunk(p, bar, r, seq, h, c, gt, THREADS);
    }
    mbarrier_wait(bar.tile_loaded + r.slot, r.round_parity);

    // norm: thread (tile, row, piece) sums D / ROW_THREADS squares, the row's threads add theirs
    {
      const int tile = gt / (C * ROW_THREADS);
      const int row = (gt % (C * ROW_THREADS)) / ROW_THREADS;
      const int piece = gt % ROW_THREADS;
      const u8* x = tile == 0 ? q_raw : k_raw;
      float s = 0.0f;
#pragma unroll
      for (int part = 0; part < D / ROW_THREADS / 8; ++part) {
        const uint4 v = *reinterpret_cast<const uint4*>(x + tile_at(row, (D / ROW_THREADS) * piece + 8 * part));
        const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float lo = bf16_bits_to_float(static_cast<u16>(w[e] & 0xffffu));
          const float hi = bf16_bits_to_float(static_cast<u16>(w[e] >> 16));
          s = fmaf(lo, lo, s);
          s = fmaf(hi, hi, s);
        }
      }
#pragma unroll
      for (int step = 1; step < ROW_THREADS; step *= 2) {
        s += __shfl_xor_sync(0xffffffffu, s, step);
      }
      if (piece == 0) {
        rnorm[tile * C + row] = 1.0f / sqrtf(s + 1e-6f);
      }
      if (gt < C) {
        beta[gt] = gt < r.valid ? sigmoid(bf16_to_float(p.beta[(seq.start + c * C + gt) * p.beta_token_stride + h]))
                                : 0.0f;
      }
    }
    // gate: column j's prefix over the rows, kept in registers for center
    float G[C];
    {
      float prefix = 0.0f;
#pragma unroll
      for (int i = 0; i < C; ++i) {
        const float gi = bf16_bits_to_float(*reinterpret_cast<const u16*>(g_raw + tile_at(i, j)));
        const float a2 = i < r.valid ? __fmul_rn(p.gate_scale, sigmoid(a_scale * (gi + bias))) : 0.0f;
        prefix = __fadd_rn(prefix, a2);
        G[i] = prefix;
      }
      g_total[j] = prefix;
    }
    named_barrier_sync(barrier_id, THREADS); // rnorm, beta

    // center: each thread rewrites the elements of column j it read
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const int at = tile_at(i, j);
      const float kn = bf16_bits_to_float(*reinterpret_cast<const u16*>(k_raw + at)) * rnorm[C + i];
      const float qn = bf16_bits_to_float(*reinterpret_cast<const u16*>(q_raw + at)) * rnorm[i] * p.scale;
      const float down = fast_exp2(G[i] - anchor);
      const float qda = qn * down;
      const float ki = kn * fast_exp2(anchor - G[i]);
      const u16 qda_hi = float_to_bf16_bits(qda);
      const u16 ki_hi = float_to_bf16_bits(ki);
      *reinterpret_cast<u16*>(k_raw + at) = float_to_bf16_bits(kn * down); // kd_anchored
      *reinterpret_cast<u16*>(g_raw + at) = qda_hi;                        // qd_anchored (hi)
      *reinterpret_cast<u16*>(q_raw + at) = ki_hi;                         // ki (hi)
      *reinterpret_cast<u16*>(qd_lo + at) = float_to_bf16_bits(qda - bf16_bits_to_float(qda_hi));
      *reinterpret_cast<u16*>(ki_lo + at) = float_to_bf16_bits(ki - bf16_bits_to_float(ki_hi));
    }
    named_barrier_sync(barrier_id, THREADS);

    // mqk: warp w < 2 ROW_BLOCKS, rows 16 (w % ROW_BLOCKS) .., of Kda Ki^T or Qda Ki^T
    {
      const bool works = warp < 2 * ROW_BLOCKS;
      const bool is_l = warp < ROW_BLOCKS;
      const u8* const a_tile = is_l ? k_raw : g_raw;
      const int r0 = 16 * (warp % ROW_BLOCKS);
      const int g = lane >> 2;
      const int t = lane & 3;
      const int mj = lane >> 3;
      float acc[C / 8][4];
#pragma unroll
      for (int nt = 0; nt < C / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc[nt][e] = 0.0f;
        }
      }
#pragma unroll 2
      for (int ks = 0; ks < D / 16 && works; ++ks) {
        const int a_at = tile_at(r0 + 8 * (mj & 1) + (lane & 7), 16 * ks + 8 * (mj >> 1));
        u32 a[4];
        u32 a_lo[4];
        ldmatrix_x4(a, a_tile + a_at);
        if (!is_l) {
          ldmatrix_x4(a_lo, qd_lo + a_at);
        }
#pragma unroll
        for (int np = 0; np < C / 16; ++np) {
          const int b_at = tile_at(16 * np + 8 * (mj >> 1) + (lane & 7), 16 * ks + 8 * (mj & 1));
          u32 b[4];
          u32 b_lo[4];
          ldmatrix_x4(b, q_raw + b_at);
          ldmatrix_x4(b_lo, ki_lo + b_at);
          mma_bf16_16816(acc[2 * np], a, b[0], b[1]);
          mma_bf16_16816(acc[2 * np + 1], a, b[2], b[3]);
          mma_bf16_16816(acc[2 * np], a, b_lo[0], b_lo[1]);
          mma_bf16_16816(acc[2 * np + 1], a, b_lo[2], b_lo[3]);
          if (!is_l) {
            mma_bf16_16816(acc[2 * np], a_lo, b[0], b[1]);
            mma_bf16_16816(acc[2 * np + 1], a_lo, b[2], b[3]);
          }
        }
      }
      named_barrier_sync(barrier_id, THREADS); // every warp is past qd_lo and ki_lo: mqk and lmat reuse their bytes
      if (works) {
#pragma unroll
        for (int nt = 0; nt < C / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = r0 + g + 8 * (e >> 1);
            const int col = 8 * nt + 2 * t + (e & 1);
            if (is_l) {
              lmat[i * C + col] = float_to_bf16_bits(i > col ? beta[i] * acc[nt][e] : 0.0f);
            } else {
              *reinterpret_cast<u16*>(mqk + narrow_at(i, col)) = float_to_bf16_bits(i >= col ? acc[nt][e] : 0.0f);
            }
          }
        }
      }
    }
    named_barrier_sync(barrier_id, THREADS); // lmat; the anchored tiles' last reads

    // inverse: diagonal blocks by forward substitution (fp32), then each merge
    // of two blocks [[T11, 0], [L21, T22]] by one warp with mma.sync (bf16
    // operands, the seed's plan): X = L21 T11 into the merged block's zero
    // upper block, then T21 = -T22 X
    if (gt < C) {
      diagonal_block_inverse(lmat, tf, gt / B, gt % B);
    }
    named_barrier_sync(barrier_id, THREADS);
#pragma unroll 1
    for (int size = B; size < C; size *= 2) {
      const int o = 2 * size * warp; // the merged block of warp w
      const bool merges = warp < C / (2 * size);
      if (merges) { // X = L21 T11 (T11 lower triangular)
        warp_block_product(
            size, [&](int i, int k) { return bf16_bits_to_float(lmat[(o + size + i) * C + o + k]); },
            [&](int k, int j) { return k >= j ? tf[(o + k) * C + o + j] : 0.0f; },
            [&](int i, int j, float x) { tf[(o + i) * C + o + size + j] = x; });
      }
      named_barrier_sync(barrier_id, THREADS);
      if (merges) { // T21 = -T22 X (T22 lower triangular)
        warp_block_product(
            size, [&](int i, int k) { return k <= i ? tf[(o + size + i) * C + o + size + k] : 0.0f; },
            [&](int k, int j) { return tf[(o + k) * C + o + size + j]; },
            [&](int i, int j, float x) { tf[(o + size + i) * C + o + j] = -x; });
      }
      named_barrier_sync(barrier_id, THREADS);
    }
    // tinv over lmat: row c' = gt / (C / 8), columns 8 (gt % (C / 8)) .., T (lower triangular) in bf16
    if (gt < C * C / 8) {
      const int row = gt / (C / 8);
      const int k0 = 8 * (gt % (C / 8));
      u32 w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int k = k0 + 2 * e;
        w[e] = pack_bf16x2(k <= row ? tf[row * C + k] : 0.0f, k + 1 <= row ? tf[row * C + k + 1] : 0.0f);
      }
      *reinterpret_cast<uint4*>(reinterpret_cast<u8*>(slot.tinv_at.tinv) + narrow_at(row, k0)) = make_uint4(w[0], w[1], w[2], w[3]);
    }

    // restore: Kd, Qd in place (column j), Kr^T row j of kr_t
    {
      const float up = fast_exp2(anchor);
      const float kr_scale = fast_exp2(g_total[j] - anchor);
      u32 kr[C / 2];
#pragma unroll
      for (int i = 0; i < C; ++i) {
        const int at = tile_at(i, j);
        u16* const kd = reinterpret_cast<u16*>(k_raw + at);
        u16* const qd = reinterpret_cast<u16*>(g_raw + at);
        *kd = float_to_bf16_bits(bf16_bits_to_float(*kd) * up);
        *qd = float_to_bf16_bits(bf16_bits_to_float(*qd) * up);
        const u32 ki = float_to_bf16_bits(bf16_bits_to_float(*reinterpret_cast<const u16*>(q_raw + at)) * kr_scale);
        kr[i / 2] = (i % 2 == 0) ? ki : (kr[i / 2] | (ki << 16));
      }
#pragma unroll
      for (int part = 0; part < C / 8; ++part) {
        *reinterpret_cast<uint4*>(kr_t + narrow_at(j, 8 * part)) =
            make_uint4(kr[4 * part], kr[4 * part + 1], kr[4 * part + 2], kr[4 * part + 3]);
      }
    }
    fence_async_shared();                    // kd, qd, kr_t, mqk, tinv: read by a tensor core (tcgen05)
    named_barrier_sync(barrier_id, THREADS); // ki is dead: V may land over it
    load_tile(reinterpret_cast<u8*>(slot.v), p.tma_v, p.v, p.heads, h, seq.start + c * C, r.valid, bar.v_loaded + r.slot, gt,
              THREADS);
    if (gt == 0) {
      mbarrier_arrive(bar.slot_ready + r.slot);
    }
  }
}

} // namespace frag
} // namespace kda
