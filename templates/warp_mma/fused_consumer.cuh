// kdajit fragment: warp_mma/fused_consumer
// The ordered consumer of the fused warp_mma kernel (spec 2.3 and 2.5): the
// MMA warps (role "mma", warps 0 .. MMA_WARPS - 1) keep the CTA's M_TILE
// value rows of the fp32 state in registers (common/state_rows: warp w owns
// rows m0 + 16 w ..) and take the ring's chunks in order. Per chunk, once its
// slot is ready and its V tile has landed:
//   project:  P^T = S Kd^T                          (K = 128, N = C)
//   residual: Delta^T = beta (V - P)^T, rounded to bf16 (the solve's A fragments)
//   solve:    U^T = Delta^T T^T                     (K = C), rounded to bf16
//   output:   O^T = S Qd^T + U^T Mqk^T              (K = 128, then K = C)
//   update:   S = S diag(2^G_tot) + U^T Kr          (K = C); then the slot is released
//   store:    O (bf16) into the output tile once every warp has copied the
//             previous chunk's out of it (a named barrier), then, after a
//             second one, the tile's valid rows to the output
// S enters the products as bf16 A fragments packed from the registers; P and
// O are formed 16 chunk rows at a time after each other, so beside the state
// only two accumulator tiles and the solve's A fragments are live (128
// registers a thread, no spills). Operands are read by ldmatrix in the producers'
// layouts (common/fused_ring): Kd, Qd and V as swizzled [C][128] tiles, T,
// Mqk and Kr^T as [rows][C] core matrices.
// Uses kda_plan::main::* and common/state_rows.
namespace kda {
namespace frag {

// This lane's ldmatrix.x4 row addresses (shared space, smem + ...) for the
// B fragments of 16 rows n0 .. n0 + 15 (matrix j = lane / 8: rows 8 (j / 2) ..,
// columns 8 (j % 2) ..; b[0], b[1] for rows n0 .. n0 + 7, b[2], b[3] for the next
// 8) and for the transposed V fragment of this warp's value columns. Computed
// once: each ldmatrix is then one of these plus the slot's offset and an
// immediate (the swizzle's XOR would otherwise keep the compiler from
// reducing the addresses, and it holds a register for each).
struct OperandLanes {
  u32 tile_row; // [C][128] tiles: this lane's row (rows 0 ..), keys 0 ..
  u32 tile_xor; // its 16-byte chunk's swizzle: keys 16 j .. lie at (32 j) ^ tile_xor
  u32 v_t;      // the V tile: rows 0 .., value columns vcol ..
  u32 narrow;   // [rows][C] operands: rows 0 .., k 0 ..

  __device__ __forceinline__ OperandLanes(const u8* smem, int vcol) {
    const int lane = threadIdx.x & 31;
    const int row = 8 * (lane >> 4) + (lane & 7);
    const int col = 8 * ((lane >> 3) & 1);
    const u32 base = smem_address(smem);
    tile_row = base + static_cast<u32>(128 * row);
    tile_xor = static_cast<u32>((((col >> 3) ^ (row & 7)) << 4)); // tile_at(row, 16 j + col) - 128 row = (32 j) ^ this
    v_t = base + static_cast<u32>(tile_at(row, vcol + col));
    narrow = base + static_cast<u32>(narrow_at(row, col));
  }
  // rows n0 .. of the tile at `tile_offset` (slot offset + buffer offset), keys 16 ks ..
  __device__ __forceinline__ u32 tile_rows(u32 tile_offset, int n0, int ks) const {
    return tile_row + ((32u * (ks & 3)) ^ tile_xor) + tile_offset + static_cast<u32>((ks >> 2) * TILE_HALF_BYTES + 128 * n0);
  }
  __device__ __forceinline__ u32 v_rows(u32 tile_offset, int n0) const {
    return v_t + tile_offset + static_cast<u32>(128 * n0);
  }
  // rows n0 .. (a multiple of 8) of the operand at `offset`, k 16 kc ..
  __device__ __forceinline__ u32 narrow_rows(u32 offset, int n0, int kc) const {
    return narrow + offset + static_cast<u32>((n0 >> 3) * NARROW_SBO + 2 * kc * NARROW_LBO);
  }
};

// The A fragment of S for keys 16 ks .. 16 ks + 15, packed anew at each use:
// the asm is volatile so that the compiler does not keep the packed state
// (32 more registers) live between the projections.
__device__ __forceinline__ void state_a_fragment(const float (&state)[1][16][4], int ks, u32 (&a)[4]) {
  const float(&lo)[4] = state[0][2 * ks];
  const float(&hi)[4] = state[0][2 * ks + 1];
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(a[0]) : "f"(lo[1]), "f"(lo[0]));
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(a[1]) : "f"(lo[3]), "f"(lo[2]));
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(a[2]) : "f"(hi[1]), "f"(hi[0]));
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(a[3]) : "f"(hi[3]), "f"(hi[2]));
}

// acc[0..1] += S B for the 16 columns n0 .. n0 + 15 of B, B[k][n] = row n of
// a [C][128] tile at key k (project: Kd or Qd), over the eight k steps of K = 128.
__device__ __forceinline__ void project_block(const float (&state)[1][16][4], const OperandLanes& lanes,
                                              u32 tile_offset, int n0, float (&acc)[2][4]) {
#pragma unroll
  for (int ks = 0; ks < kda_plan::HEAD_DIM / 16; ++ks) {
    u32 a[4];
    state_a_fragment(state, ks, a);
    u32 b[4];
    ldmatrix_x4_shared(b, lanes.tile_rows(tile_offset, n0, ks));
    mma_bf16_16816(acc[0], a, b[0], b[1]);
    mma_bf16_16816(acc[1], a, b[2], b[3]);
  }
}

// acc[0..1] += A B for the 16 columns n0 .. of B, B[k][n] = row n of a [C][C]
// core-matrix operand at k (T for the solve, Mqk for the output), a[kc] the
// A fragments of K = C.
__device__ __forceinline__ void multiply_narrow_block(const u32 (&a)[kda_plan::CHUNK_SIZE / 16][4],
                                                      const OperandLanes& lanes, u32 offset, int n0,
                                                      float (&acc)[2][4]) {
#pragma unroll
  for (int kc = 0; kc < kda_plan::CHUNK_SIZE / 16; ++kc) {
    u32 b[4];
    ldmatrix_x4_shared(b, lanes.narrow_rows(offset, n0, kc));
    mma_bf16_16816(acc[0], a[kc], b[0], b[1]);
    mma_bf16_16816(acc[1], a[kc], b[2], b[3]);
  }
}

__device__ __forceinline__ void zero_block(float (&acc)[2][4]) {
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[nt][e] = 0.0f;
    }
  }
}

// residual: Delta^T[v][i] = beta_i (V[i][v] - P^T[v][i]) in place of P^T for
// the chunk rows i = n0 .. n0 + 15; V read transposed from the tile (this
// warp's value columns vcol ..).
__device__ __forceinline__ void residual_block(const OperandLanes& lanes, u32 v_offset, const float* beta, int n0,
                                               float (&pt)[2][4]) {
  const int t = threadIdx.x & 3;
  // matrix j: chunk rows n0 + 8 (j / 2) .., value columns vcol + 8 (j % 2) ..;
  // transposed, vt[j] holds V[i][v] for i = n0 + 8 (j / 2) + 2t + {0, 1}, v = g + 8 (j % 2)
  u32 vt[4];
  ldmatrix_x4_trans_shared(vt, lanes.v_rows(v_offset, n0));
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int nt = j >> 1;
    const int half = j & 1;
    const int i = n0 + 8 * nt + 2 * t;
    pt[nt][2 * half] = beta[i] * (bf16_bits_to_float(static_cast<u16>(vt[j] & 0xffffu)) - pt[nt][2 * half]);
    pt[nt][2 * half + 1] = beta[i + 1] * (bf16_bits_to_float(static_cast<u16>(vt[j] >> 16)) - pt[nt][2 * half + 1]);
  }
}

// update: S = S diag(2^G_tot) + U^T Kr, Kr^T rows (keys) from kr_t; each
// 16-key pair of tiles decayed right before its products.
__device__ __forceinline__ void update_state(float (&state)[1][16][4], const u32 (&ua)[kda_plan::CHUNK_SIZE / 16][4],
                                             const OperandLanes& lanes, u32 kr_t_offset, const float* g_total) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int np = 0; np < 8; ++np) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int nt = 2 * np + h;
      const float g0 = fast_exp2(g_total[8 * nt + 2 * t]);
      const float g1 = fast_exp2(g_total[8 * nt + 2 * t + 1]);
      state[0][nt][0] *= g0;
      state[0][nt][1] *= g1;
      state[0][nt][2] *= g0;
      state[0][nt][3] *= g1;
    }
#pragma unroll
    for (int kc = 0; kc < C / 16; ++kc) {
      u32 b[4];
      ldmatrix_x4_shared(b, lanes.narrow_rows(kr_t_offset, 16 * np, kc));
      mma_bf16_16816(state[0][2 * np], ua[kc], b[0], b[1]);
      mma_bf16_16816(state[0][2 * np + 1], ua[kc], b[2], b[3]);
    }
  }
}

// store: O^T (this warp's 16 value rows, chunk rows n0 .. n0 + 15) as O[i][v] into the output tile.
__device__ __forceinline__ void stage_output(u8* tile, int vcol, int n0, const float (&ot)[2][4]) {
  constexpr int M = kda_plan::M_TILE;
  const int g = (threadIdx.x & 31) >> 2;
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = n0 + 8 * nt + 2 * t + (e & 1);
      const int v = vcol + g + 8 * (e >> 1);
      reinterpret_cast<u16*>(tile)[i * M + v] = float_to_bf16_bits(ot[nt][e]);
    }
  }
}

__device__ __forceinline__ void consume_chunks(const kda_plan::KdaParams& p, const RingBarriers& bar, u8* smem,
                                               const RecurrenceWork& w, i64 chunks) {
  namespace F = kda_plan::main;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int M = kda_plan::M_TILE;
  constexpr int THREADS = 32 * F::MMA_WARPS;
  constexpr int BARRIER_ID = 1 + F::PRODUCER_GROUPS; // after the producer groups' named barriers
  static_assert(F::MMA_FIRST_WARP == 0 && 16 * F::MMA_WARPS == M, "MMA warps 0 .. : 16 value rows each");
  static_assert(F::OUT_BYTES == C * M * 2, "one output tile [C][M_TILE]");
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int vcol = 16 * warp; // this warp's value rows inside the CTA's M_TILE
  const OperandLanes lanes(smem, vcol);
  float state[1][16][4];
  load_state(p, w.n, w.h, w.m0, state);
  CheckpointCursor checkpoints = checkpoint_cursor();
  const u8* const out_rows = reinterpret_cast<const u8*>(p.out) + (w.seq.start * p.heads + w.h) * D * 2 + 2 * w.m0;
  const i64 token_pitch = static_cast<i64>(p.heads) * D * 2;
  for (i64 c = 0; c < chunks; ++c) {
    const RingChunk r = ring_chunk(smem, w.seq, c);
    if (kda_plan::CHECKPOINTS) {
      store_checkpoint(p, checkpoints, w.n, w.h, w.m0, c, state); // the state before chunk c
    }
    mbarrier_wait(bar.slot_ready + r.slot, r.round_parity);
    mbarrier_wait(bar.v_loaded + r.slot, r.round_parity);
    // tensor-core operands by shared address: the slot's offset plus the plan's
    // buffer offsets (immediates of each ldmatrix); the rest through the layout
    const u32 slot = static_cast<u32>(r.slot * F::STAGE_BYTES);

    // P^T, then Delta^T, 16 chunk rows at a time: the solve's A fragments
    u32 da[C / 16][4];
#pragma unroll
    for (int kc = 0; kc < C / 16; ++kc) {
      float acc[2][4];
      zero_block(acc);
      project_block(state, lanes, slot + F::KD_OFFSET, 16 * kc, acc);
      residual_block(lanes, slot + F::V_OFFSET, r.at->beta, 16 * kc, acc);
      pack_a(acc[0], acc[1], da[kc]);
    }
    u32 ua[C / 16][4]; // U^T
#pragma unroll
    for (int kc = 0; kc < C / 16; ++kc) {
      float acc[2][4];
      zero_block(acc);
      multiply_narrow_block(da, lanes, slot + F::TINV_OFFSET, 16 * kc, acc);
      pack_a(acc[0], acc[1], ua[kc]);
    }
    u8* const tile = reinterpret_cast<u8*>(smem_layout(smem).out);
    named_barrier_sync(BARRIER_ID, THREADS); // the previous chunk's rows have left the output tile
#pragma unroll
    for (int nb = 0; nb < C / 16; ++nb) { // O^T, 16 chunk rows at a time
      float acc[2][4];
      zero_block(acc);
      project_block(state, lanes, slot + F::QD_OFFSET, 16 * nb, acc);
      multiply_narrow_block(ua, lanes, slot + F::MQK_OFFSET, 16 * nb, acc);
      stage_output(tile, vcol, 16 * nb, acc);
    }
    update_state(state, ua, lanes, slot + F::KR_T_OFFSET, r.at->g_total);
    __syncwarp();
    if (lane == 0) {
      mbarrier_arrive(bar.slot_free + r.slot); // this warp has read the slot
    }
    named_barrier_sync(BARRIER_ID, THREADS); // the tile holds the chunk's rows
    for (int i = threadIdx.x; i < r.valid * (M / 8); i += THREADS) {
      const int row = i / (M / 8);
      const int part = i % (M / 8);
      *reinterpret_cast<uint4*>(const_cast<u8*>(out_rows) + (c * C + row) * token_pitch + 16 * part) =
          *reinterpret_cast<const uint4*>(tile + 2 * (row * M + 8 * part));
    }
  }
  if (p.state_out != nullptr) {
    store_state(p, w.n, w.h, w.m0, state);
  }
}

} // namespace frag
} // namespace kda
