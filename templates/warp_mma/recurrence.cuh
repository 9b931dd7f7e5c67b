// kdajit fragment: warp_mma/recurrence
// The serial chunk-to-chunk recurrence of one (sequence, head) (spec section
// 2.3): a CTA owns M_TILE value rows [m0, m0 + M_TILE) of one (sequence,
// head) (M_TILE 64: two CTAs per pair, each half of V); W warps (THREADS / 32),
// warp w owns ROWS = M_TILE / W value rows (MT = ROWS / 16 row tiles) of the
// fp32 state, held in registers as m16n8k16 accumulator fragments
// (state[mt][nt]: rows m0 + ROWS w + 16 mt + {g, g+8}, key columns
// 8 nt + 2t + {0, 1}). Accumulator fragments
// of two adjacent n8 tiles are exactly an A fragment once packed to bf16, so
// S, Delta^T and U^T feed the next product without leaving registers.
// Per chunk (records streamed through a STAGES-slot cp.async ring):
//   project:  P^T = S Kd^T, O0^T = S Qd^T               (K = 128)
//   residual: Delta^T = beta (V - P)^T, rounded to bf16
//   solve:    U^T = Delta^T T^T                         (K = 16)
//   update:   O^T = O0^T + U^T Mqk^T; S = S diag(gamma) + U^T Kr
//   store:    O (bf16) into one of two SMEM output tiles; the next iteration
//             stores it to the valid rows of the output after its first
//             barrier, so no barrier waits for the stores
// Uses kda_plan::recurrence::* and kda_plan::WS_*.
namespace kda {
namespace frag {

struct RecurrenceSlot {
  u8* kd;
  u8* qd;
  u8* kr;
  u8* v;
  u8* tinv;
  u8* mqk;
  float* beta;
  float* gamma;
};

__device__ __forceinline__ RecurrenceSlot recurrence_slot(u8* smem, int slot) {
  namespace R = kda_plan::recurrence;
  u8* base = smem + slot * R::STAGE_BYTES;
  return {base + R::KD_OFFSET,  base + R::QD_OFFSET,  base + R::KR_OFFSET,
          base + R::V_OFFSET,   base + R::TINV_OFFSET, base + R::MQK_OFFSET,
          reinterpret_cast<float*>(base + R::BETA_OFFSET), reinterpret_cast<float*>(base + R::GAMMA_OFFSET)};
}

// Copies `rows` rows of `row_bytes` from global (pitch `src_pitch` bytes) into
// SMEM rows of pitch `dst_pitch` bytes; rows >= valid_rows are zero-filled.
__device__ __forceinline__ void copy_rows_async(u8* dst, int dst_pitch, const u8* src, i64 src_pitch, int rows,
                                                int row_bytes, int valid_rows) {
  const int per_row = row_bytes / 16;
  for (int i = threadIdx.x; i < rows * per_row; i += kda_plan::recurrence::THREADS) {
    const int r = i / per_row;
    const int c = i % per_row;
    const bool ok = r < valid_rows;
    cp_async_16(dst + r * dst_pitch + 16 * c, ok ? src + r * src_pitch + 16 * c : src, ok);
  }
}

__device__ __forceinline__ void load_chunk_async(const kda_plan::KdaParams& p, const RecurrenceSlot& s,
                                                 const SequenceSpan& seq, int h, i64 chunk_in_seq) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  const u8* record =
      p.workspace + ((seq.first_chunk + chunk_in_seq) * p.heads + h) * static_cast<i64>(kda_plan::WS_RECORD_BYTES);
  copy_rows_async(s.kd, 2 * R::KD_PITCH, record + kda_plan::WS_KD_OFFSET, 2 * D, C, 2 * D, C);
  copy_rows_async(s.qd, 2 * R::QD_PITCH, record + kda_plan::WS_QD_OFFSET, 2 * D, C, 2 * D, C);
  copy_rows_async(s.kr, 2 * R::KR_PITCH, record + kda_plan::WS_KR_OFFSET, 2 * D, C, 2 * D, C);
  copy_rows_async(s.tinv, 2 * R::TINV_PITCH, record + kda_plan::WS_TINV_OFFSET, 2 * C, C, 2 * C, C);
  copy_rows_async(s.mqk, 2 * R::MQK_PITCH, record + kda_plan::WS_MQK_OFFSET, 2 * C, C, 2 * C, C);
  copy_rows_async(reinterpret_cast<u8*>(s.beta), 4 * C, record + kda_plan::WS_BETA_OFFSET, 4 * C, 1, 4 * C, 1);
  copy_rows_async(reinterpret_cast<u8*>(s.gamma), 4 * D, record + kda_plan::WS_GAMMA_OFFSET, 4 * D, 1, 4 * D, 1);
  const i64 row0 = chunk_in_seq * C;
  const int valid = static_cast<int>(min(static_cast<i64>(C), seq.length - row0));
  const i64 token_pitch = static_cast<i64>(p.heads) * D * 2;
  const u8* v_src = reinterpret_cast<const u8*>(p.v) + (seq.start + row0) * token_pitch + static_cast<i64>(h) * D * 2;
  copy_rows_async(s.v, 2 * R::V_PITCH, v_src, token_pitch, C, 2 * D, valid);
}

__device__ __forceinline__ void recurrence(const kda_plan::KdaParams& p) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int S = R::STAGES;
  static_assert(C == 16 && D == 128, "warp_mma recurrence: chunk 16, head dim 128");
  static_assert(row_tiles() >= 1 && rows_per_warp() * recurrence_warps() == kda_plan::M_TILE,
                "the warps own the CTA's M_TILE value rows, 16 or more each");
  extern __shared__ __align__(128) u8 smem[];
  const auto [n, h, m0, seq] = recurrence_work(p);
  const i64 chunks = chunks_of(seq.length);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  // ldmatrix row addresses: matrix j = lane / 8, row lane % 8.
  const int lane_row = 8 * (lane >> 4) + (lane & 7);    // rows 8 (j / 2) + r
  const int lane_col8 = 8 * ((lane >> 3) & 1);          // columns 8 (j % 2)
  const int lane_row_t = 8 * ((lane >> 3) & 1) + (lane & 7); // rows 8 (j % 2) + r
  const int lane_col8_t = 8 * (lane >> 4);              // columns 8 (j / 2)

  float state[row_tiles()][16][4];
  load_state(p, n, h, m0, state);

  for (int c = 0; c < S - 1; ++c) {
    if (c < chunks) {
      load_chunk_async(p, recurrence_slot(smem, c), seq, h, c);
    }
    cp_async_commit();
  }
  // out: two tiles [2][C][OUT_PITCH]; chunk c uses tile c % 2
  static_assert(R::OUT_BYTES == 2 * C * R::OUT_PITCH * 2, "two output tiles");
  u8* const out_tiles = smem + R::OUT_OFFSET;
  constexpr int k_out_tile_bytes = C * R::OUT_PITCH * 2;

  CheckpointCursor checkpoints = checkpoint_cursor();
  for (i64 c = 0; c < chunks; ++c) {
    if (kda_plan::CHECKPOINTS) {
      store_checkpoint(p, checkpoints, n, h, m0, c, state); // the state before chunk c
    }
    cp_async_wait<S - 2>();
    __syncthreads();
    if (c > 0) {
      store_output_tile(p, out_tiles + ((c - 1) % 2) * k_out_tile_bytes, seq, h, m0, c - 1);
    }
    if (c + S - 1 < chunks) {
      load_chunk_async(p, recurrence_slot(smem, static_cast<int>((c + S - 1) % S)), seq, h, c + S - 1);
    }
    cp_async_commit();
    const RecurrenceSlot s = recurrence_slot(smem, static_cast<int>(c % S));

    // project
    float pt[row_tiles()][2][4];
    float ot[row_tiles()][2][4];
#pragma unroll
    for (int mt = 0; mt < row_tiles(); ++mt) {
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          pt[mt][nc][e] = 0.0f;
          ot[mt][nc][e] = 0.0f;
        }
      }
    }
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      // matrix j = lane / 8: rows 8 (j / 2) .. +7 (chunk rows c), columns
      // 16 ks + 8 (j % 2) .. +7 (keys): bk[nc][0..1] = b0b1, b2b3 of tile nc.
      u32 bk[4];
      u32 bq[4];
      ldmatrix_x4(bk, s.kd + 2 * (lane_row * R::KD_PITCH + 16 * ks + lane_col8));
      ldmatrix_x4(bq, s.qd + 2 * (lane_row * R::QD_PITCH + 16 * ks + lane_col8));
#pragma unroll
      for (int mt = 0; mt < row_tiles(); ++mt) {
        u32 a[4];
        pack_a(state[mt][2 * ks], state[mt][2 * ks + 1], a);
#pragma unroll
        for (int nc = 0; nc < 2; ++nc) {
          mma_bf16_16816(pt[mt][nc], a, bk[2 * nc], bk[2 * nc + 1]);
          mma_bf16_16816(ot[mt][nc], a, bq[2 * nc], bq[2 * nc + 1]);
        }
      }
    }

    // residual: Delta^T[v][c] = beta_c (V[c][v] - P^T[v][c]); reuse pt
#pragma unroll
    for (int mt = 0; mt < row_tiles(); ++mt) {
      // matrix j: chunk rows c = 8 (j / 2) .. +7, value columns
      // ROWS warp + 16 mt + 8 (j % 2) .. +7, transposed: V[c][v] pairs along c.
      u32 vt[4];
      ldmatrix_x4_trans(vt, s.v + 2 * (lane_row * R::V_PITCH + m0 + rows_per_warp() * warp + 16 * mt + lane_col8));
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const u32 pair = vt[2 * nc + half];
          const int col = 8 * nc + 2 * t;
          pt[mt][nc][2 * half] = s.beta[col] * (bf16_bits_to_float(static_cast<u16>(pair & 0xffffu)) - pt[mt][nc][2 * half]);
          pt[mt][nc][2 * half + 1] =
              s.beta[col + 1] * (bf16_bits_to_float(static_cast<u16>(pair >> 16)) - pt[mt][nc][2 * half + 1]);
        }
      }
    }

    // solve: U^T = Delta^T T^T
    u32 bt[4];
    ldmatrix_x4(bt, s.tinv + 2 * (lane_row * R::TINV_PITCH + lane_col8));
    u32 ua[row_tiles()][4];
#pragma unroll
    for (int mt = 0; mt < row_tiles(); ++mt) {
      u32 a[4];
      pack_a(pt[mt][0], pt[mt][1], a);
      float ut[2][4];
#pragma unroll
      for (int ni = 0; ni < 2; ++ni) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          ut[ni][e] = 0.0f;
        }
        mma_bf16_16816(ut[ni], a, bt[2 * ni], bt[2 * ni + 1]);
      }
      pack_a(ut[0], ut[1], ua[mt]);
    }

    // update: O^T += U^T Mqk^T
    u32 bm[4];
    ldmatrix_x4(bm, s.mqk + 2 * (lane_row * R::MQK_PITCH + lane_col8));
#pragma unroll
    for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
      for (int mt = 0; mt < row_tiles(); ++mt) {
        mma_bf16_16816(ot[mt][nc], ua[mt], bm[2 * nc], bm[2 * nc + 1]);
      }
    }
    // update: S = S diag(gamma) + U^T Kr
#pragma unroll
    for (int np = 0; np < 8; ++np) {
      // matrix j: chunk rows i = 8 (j % 2) .. +7, key columns 8 (2 np + j / 2)
      // .. +7, transposed: kb[2h] = b0b1, kb[2h+1] = b2b3 of tile 2 np + h.
      u32 kb[4];
      ldmatrix_x4_trans(kb, s.kr + 2 * (lane_row_t * R::KR_PITCH + 16 * np + lane_col8_t));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int nt = 2 * np + h;
        const float g0 = s.gamma[8 * nt + 2 * t];
        const float g1 = s.gamma[8 * nt + 2 * t + 1];
#pragma unroll
        for (int mt = 0; mt < row_tiles(); ++mt) {
          state[mt][nt][0] *= g0;
          state[mt][nt][1] *= g1;
          state[mt][nt][2] *= g0;
          state[mt][nt][3] *= g1;
          mma_bf16_16816(state[mt][nt], ua[mt], kb[2 * h], kb[2 * h + 1]);
        }
      }
    }

    // store: O[c][v] into tile c % 2 (stored by the next iteration)
    u8* const out_s = out_tiles + (c % 2) * k_out_tile_bytes;
#pragma unroll
    for (int mt = 0; mt < row_tiles(); ++mt) {
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = m0 + rows_per_warp() * warp + 16 * mt + g + 8 * (e >> 1);
          const int col = 8 * nc + 2 * t + (e & 1);
          reinterpret_cast<u16*>(out_s)[col * R::OUT_PITCH + row] = float_to_bf16_bits(ot[mt][nc][e]);
        }
      }
    }
  }
  __syncthreads();
  if (chunks > 0) {
    store_output_tile(p, out_tiles + ((chunks - 1) % 2) * k_out_tile_bytes, seq, h, m0, chunks - 1);
  }
  cp_async_wait<0>();
  if (p.state_out != nullptr) {
    store_state(p, n, h, m0, state);
  }
}

} // namespace frag
} // namespace kda
