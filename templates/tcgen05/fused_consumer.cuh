// kdajit fragment: tcgen05/fused_consumer
// The ordered consumer of the fused chunk-32 kernel (seed note 000, spec 2.3
// and 2.5): per chunk c, in order, three roles hand off through mbarriers
// (chunk c waits for parity c & 1) around the MMA warp's three GEMMs. TMEM
// columns (kda_plan::TMEM_*): the fp32 state S (value rows = lanes) and O^T
// side by side, so that one accumulator holds [S | O^T]; a work block (P^T,
// then U^T); the bf16 snapshot of S (the A operand of the projections).
//   state warps:    once the slot is ready and the previous update committed:
//                   snapshot = bf16(S) into TMEM, S <- S diag(2^G_tot) (fp32)
//   MMA warp:       project  P^T = S Kd^T, O0^T = S Qd^T   (M 128, N C, K 128: 8 K steps each,
//                                                            A = the snapshot in TMEM)
//                   solve    U^T = Delta^T T^T             (M 128, N C, K C)
//                   update   [S | O^T] += U^T [Kr | Mqk^T] (M 128, N 128 + C, K C: C / 16 K steps
//                                                            on one accumulator, then one commit;
//                                                            a second commit frees the ring slot)
//   epilogue warps: Delta^T = bf16((V - P)^T diag(beta)) (rows past the sequence end 0) to SMEM,
//                   U^T to SMEM as bf16, then O^T from TMEM: bf16 through the
//                   output tile (half c mod 2) to the output rows
// The state is loaded from and stored to the caller's buffer in place (spec 1.4).
// Uses kda_plan::main::*, UMMA_*, TMEM_*.
namespace kda {
namespace frag {

__device__ __forceinline__ void consume_mma(const FusedBarriers& bar, const TmemSpace& t, u8* smem,
                                            const SequenceSpan& seq, i64 chunks) {
  namespace F = kda_plan::main;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int K_STEP = 2 * kda_plan::UMMA_NARROW_LBO; // [rows][C] operands: 16 k = two core matrices along K
  constexpr int TILE_K_STEP = 32;                      // [C][128] tiles: 16 k = 32 B inside a swizzled 128-byte row
  for (i64 c = 0; c < chunks; ++c) {
    const RingChunk r = ring_chunk(smem, seq, c);
    const u32 parity = static_cast<u32>(c & 1);
    u8* const delta_half = reinterpret_cast<u8*>(smem_layout(smem).delta_t) + static_cast<int>(c & 1) * (F::DELTA_T_BYTES / 2);
    u8* const u_half = reinterpret_cast<u8*>(smem_layout(smem).u_t) + static_cast<int>(c & 1) * (F::U_T_BYTES / 2);
    mbarrier_wait(bar.ring.slot_ready + r.slot, r.round_parity);
    mbarrier_wait(bar.snapshot_ready, parity);
    if (c > 0) {
      mbarrier_wait(bar.o_drained, parity ^ 1u); // O^T of chunk c - 1 has been read
    }
    tcgen05_fence_after_thread_sync();
#pragma unroll
    for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
      const u32 a_col = kda_plan::TMEM_SNAPSHOT_COL + 8 * ks; // 16 bf16 of each lane in 8 columns
      const int at = (ks / 4) * TILE_HALF_BYTES + (ks % 4) * TILE_K_STEP; // keys 16 ks ..: half, then 32 B steps
      umma_ts_warp(t, kda_plan::TMEM_WORK_COL, a_col, descriptor_at(kda_plan::UMMA_DESC_TILE, reinterpret_cast<u8*>(r.at->kd) + at),
                   kda_plan::UMMA_IDESC_PROJECT, ks > 0);
      umma_ts_warp(t, kda_plan::TMEM_OUT_COL, a_col, descriptor_at(kda_plan::UMMA_DESC_TILE, reinterpret_cast<u8*>(r.at->qd) + at),
                   kda_plan::UMMA_IDESC_PROJECT, ks > 0);
    }
    umma_commit_warp(bar.projected);

    mbarrier_wait(bar.delta_ready, parity);
    tcgen05_fence_after_thread_sync();
#pragma unroll
    for (int kc = 0; kc < C / 16; ++kc) {
      umma_ss_warp(t, kda_plan::TMEM_WORK_COL, descriptor_at(kda_plan::UMMA_DESC_NARROW, delta_half + kc * K_STEP),
                   descriptor_at(kda_plan::UMMA_DESC_NARROW, reinterpret_cast<u8*>(r.at->tinv_at.tinv) + kc * K_STEP),
                   kda_plan::UMMA_IDESC_SOLVE, kc > 0);
    }
    umma_commit_warp(bar.solved);

    mbarrier_wait(bar.u_ready, parity);
    tcgen05_fence_after_thread_sync();
#pragma unroll
    for (int kc = 0; kc < C / 16; ++kc) {
      umma_ss_warp(t, kda_plan::TMEM_STATE_COL,
                   descriptor_at(kda_plan::UMMA_DESC_NARROW, u_half + kc * K_STEP),
                   descriptor_at(kda_plan::UMMA_DESC_NARROW, reinterpret_cast<u8*>(r.at->kr_t) + kc * K_STEP), // [Kr | Mqk^T]
                   kda_plan::UMMA_IDESC_UPDATE, 1);
    }
    umma_commit_warp(bar.updated);
    umma_commit_warp(bar.ring.slot_free + r.slot);
  }
}

// Eight columns of a lane as raw bits (for TMEM stores).
__device__ __forceinline__ void bits8(const float (&x)[8], u32 (&w)[8]) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    w[e] = __float_as_uint(x[e]);
  }
}

// This lane's row of the bf16 state snapshot (TMEM_SNAPSHOT_COL: two values
// a column) to `row`, a checkpoint row's value row. Every lane of the warp
// loads (tcgen05.ld is warp-wide); only `active` lanes store.
__device__ __forceinline__ void store_snapshot_row(const TmemSpace& t, bf16* row, bool active) {
#pragma unroll 1
  for (int j = 0; j < kda_plan::HEAD_DIM / 16; ++j) {
    float w[8];
    tmem_load8(t, kda_plan::TMEM_SNAPSHOT_COL + 8 * j, w);
    if (active) {
      uint4* const dst = reinterpret_cast<uint4*>(row + 16 * j);
      dst[0] = make_uint4(__float_as_uint(w[0]), __float_as_uint(w[1]), __float_as_uint(w[2]), __float_as_uint(w[3]));
      dst[1] = make_uint4(__float_as_uint(w[4]), __float_as_uint(w[5]), __float_as_uint(w[6]), __float_as_uint(w[7]));
    }
  }
}

__device__ __forceinline__ void consume_state(const kda_plan::KdaParams& p, const FusedBarriers& bar,
                                              const TmemSpace& t, u8* smem, const SequenceSpan& seq, int n, int h,
                                              int m0, i64 chunks, int thread) {
  constexpr int D = kda_plan::HEAD_DIM;
  const int local = tmem_row_of(thread); // -1: this lane holds no value row (M 64)
  const bool active = local >= 0;
  const int lane_row = m0 + (active ? local : 0); // the value row of this lane
  // where the lane's state row lies (computed again for the final store: a
  // pool slot is a load, and keeping its result live through the chunk loop
  // costs registers the 64-register kernel does not have)
  const i64 row = p.state_in != nullptr ? state_base(p, n, h) + static_cast<i64>(lane_row) * D : 0;
#pragma unroll 1
  for (int j = 0; j < D / 8; ++j) {
    float s[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      s[e] = p.state_in == nullptr || !active ? 0.0f
             : kda_plan::STATE_FP32            ? static_cast<const float*>(p.state_in)[row + 8 * j + e]
                                               : bf16_to_float(static_cast<const bf16*>(p.state_in)[row + 8 * j + e]);
    }
    u32 w[8];
    bits8(s, w);
    tmem_store8(t, kda_plan::TMEM_STATE_COL + 8 * j, w);
  }
  tmem_wait_store();
  CheckpointCursor checkpoints = checkpoint_cursor();
  for (i64 c = 0; c < chunks; ++c) {
    const RingChunk r = ring_chunk(smem, seq, c);
    const float* const g_total = r.at->g_total;
    mbarrier_wait(bar.ring.slot_ready + r.slot, r.round_parity);
    if (c > 0) {
      mbarrier_wait(bar.updated, static_cast<u32>((c - 1) & 1));
    }
    tcgen05_fence_after_thread_sync();
#pragma unroll 1
    for (int j = 0; j < D / 8; ++j) {
      float s[8];
      tmem_load8(t, kda_plan::TMEM_STATE_COL + 8 * j, s);
      const u32 snap[4] = {pack_bf16x2(s[0], s[1]), pack_bf16x2(s[2], s[3]), pack_bf16x2(s[4], s[5]),
                           pack_bf16x2(s[6], s[7])};
      tmem_store4(t, kda_plan::TMEM_SNAPSHOT_COL + 4 * j, snap);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        s[e] *= fast_exp2(g_total[8 * j + e]);
      }
      u32 w[8];
      bits8(s, w);
      tmem_store8(t, kda_plan::TMEM_STATE_COL + 8 * j, w);
    }
    tmem_wait_store();
    tcgen05_fence_before_thread_sync();
    mbarrier_arrive(bar.snapshot_ready);
    // the state before chunk c as a checkpoint row: the snapshot read back
    // while the MMA warp reads it too (we rewrite it only after `updated`)
    if (bf16* const checkpoint = checkpoint_take(p, checkpoints, n, h, c)) {
      store_snapshot_row(t, checkpoint + static_cast<i64>(lane_row) * D, active);
    }
  }
  if (chunks > 0) {
    mbarrier_wait(bar.updated, static_cast<u32>((chunks - 1) & 1));
    tcgen05_fence_after_thread_sync();
  }
  if (p.state_out == nullptr) {
    return;
  }
  const i64 out_row = state_base(p, n, h) + static_cast<i64>(lane_row) * D;
#pragma unroll 1
  for (int j = 0; j < D / 8; ++j) {
    float s[8];
    tmem_load8(t, kda_plan::TMEM_STATE_COL + 8 * j, s);
    if (!active) {
      continue;
    }
    if (kda_plan::STATE_FP32) {
      float4* const out = reinterpret_cast<float4*>(static_cast<float*>(p.state_out) + out_row + 8 * j);
      out[0] = make_float4(s[0], s[1], s[2], s[3]);
      out[1] = make_float4(s[4], s[5], s[6], s[7]);
    } else {
      *reinterpret_cast<uint4*>(static_cast<bf16*>(p.state_out) + out_row + 8 * j) =
          make_uint4(pack_bf16x2(s[0], s[1]), pack_bf16x2(s[2], s[3]), pack_bf16x2(s[4], s[5]), pack_bf16x2(s[6], s[7]));
    }
  }
}

// The 32 work columns (P^T or U^T) of this thread's lane.
__device__ __forceinline__ void load_lane32(const TmemSpace& t, u32 column, float (&x)[kda_plan::CHUNK_SIZE]) {
#pragma unroll
  for (int q = 0; q < kda_plan::CHUNK_SIZE / 8; ++q) {
    float part[8];
    tmem_load8(t, column + 8 * q, part);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      x[8 * q + e] = part[e];
    }
  }
}

// Row v of an [M_TILE][C] K-major operand (core matrices) from C values, rounded once to bf16.
__device__ __forceinline__ void store_operand_row(u8* operand, int v, const float (&x)[kda_plan::CHUNK_SIZE]) {
#pragma unroll
  for (int q = 0; q < kda_plan::CHUNK_SIZE / 8; ++q) {
    *reinterpret_cast<uint4*>(operand + narrow_at(v, 8 * q)) =
        make_uint4(pack_bf16x2(x[8 * q], x[8 * q + 1]), pack_bf16x2(x[8 * q + 2], x[8 * q + 3]),
                   pack_bf16x2(x[8 * q + 4], x[8 * q + 5]), pack_bf16x2(x[8 * q + 6], x[8 * q + 7]));
  }
}

__device__ __forceinline__ void consume_epilogue(const kda_plan::KdaParams& p, const FusedBarriers& bar,
                                                 const TmemSpace& t, u8* smem, const SequenceSpan& seq, int h, int m0,
                                                 i64 chunks, int thread) {
  namespace F = kda_plan::main;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int M = kda_plan::M_TILE;
  constexpr int THREADS = 32 * F::EPILOGUE_WARPS;
  constexpr int BARRIER_ID = 1 + F::PRODUCER_GROUPS; // after the producer groups' named barriers
  static_assert(THREADS == 128 && F::STATE_WARPS == F::EPILOGUE_WARPS,
                "four state and four epilogue warps: one thread per TMEM lane");
  static_assert(F::DELTA_T_OFFSET == F::OUT_OFFSET && F::U_T_OFFSET == F::OUT_OFFSET &&
                    F::OUT_BYTES == 2 * C * M * 2 && F::DELTA_T_BYTES == F::OUT_BYTES,
                "Delta^T, U^T and the output tile share two halves (chunk c uses half c mod 2)");
  const int local = tmem_row_of(thread); // -1: this lane holds no value row (M 64)
  const bool active = local >= 0;
  const int v = m0 + (active ? local : 0);
  for (i64 c = 0; c < chunks; ++c) {
    const RingChunk r = ring_chunk(smem, seq, c);
    const u32 parity = static_cast<u32>(c & 1);
    u8* const half = reinterpret_cast<u8*>(smem_layout(smem).out) + static_cast<int>(c & 1) * (F::OUT_BYTES / 2);
    const float* const beta = r.at->beta;
    const u8* const v_tile = reinterpret_cast<const u8*>(r.at->v);
    mbarrier_wait(bar.ring.slot_ready + r.slot, r.round_parity);
    mbarrier_wait(bar.ring.v_loaded + r.slot, r.round_parity);
    mbarrier_wait(bar.projected, parity);
    tcgen05_fence_after_thread_sync();
    float x[C];
    load_lane32(t, kda_plan::TMEM_WORK_COL, x); // P^T[v][.]
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const float vi = bf16_bits_to_float(*reinterpret_cast<const u16*>(v_tile + tile_at(i, v)));
      x[i] = i < r.valid ? (vi - x[i]) * beta[i] : 0.0f;
    }
    if (active) {
      store_operand_row(half, local, x); // Delta^T (delta_t)
    }
    fence_async_shared();
    tcgen05_fence_before_thread_sync();
    mbarrier_arrive(bar.delta_ready);

    mbarrier_wait(bar.solved, parity);
    tcgen05_fence_after_thread_sync();
    load_lane32(t, kda_plan::TMEM_WORK_COL, x); // U^T[v][.]
    if (active) {
      store_operand_row(half, local, x); // u_t over delta_t (the solve has read it)
    }
    fence_async_shared();
    tcgen05_fence_before_thread_sync();
    mbarrier_arrive(bar.u_ready);

    mbarrier_wait(bar.updated, parity);
    tcgen05_fence_after_thread_sync();
    load_lane32(t, kda_plan::TMEM_OUT_COL, x); // O^T[v][.]
    tcgen05_fence_before_thread_sync();
    mbarrier_arrive(bar.o_drained);
    if (active) {
#pragma unroll
      for (int i = 0; i < C; ++i) {
        reinterpret_cast<u16*>(half)[i * M + local] = float_to_bf16_bits(x[i]); // out[i][v] over u_t (read by the update)
      }
    }
    named_barrier_sync(BARRIER_ID, THREADS);
    for (int i = thread; i < C * (M / 8); i += THREADS) {
      const int row = i / (M / 8);
      const int part = i % (M / 8);
      if (row < r.valid) {
        *reinterpret_cast<uint4*>(reinterpret_cast<u8*>(p.out) + ((seq.start + c * C + row) * p.heads + h) * D * 2 +
                                  2 * m0 + 16 * part) = *reinterpret_cast<const uint4*>(half + 2 * (row * M + 8 * part));
      }
    }
  }
}

} // namespace frag
} // namespace kda
