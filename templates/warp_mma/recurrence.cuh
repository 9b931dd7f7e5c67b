// kdajit fragment: warp_mma/recurrence
// The serial chunk-to-chunk recurrence of one (sequence, head) (spec section
// 2.3): 4 warps, warp w owns value rows 32w..32w+31 of the fp32 state, held in
// registers as m16n8k16 accumulator fragments (state[mt][nt]: rows
// 32w + 16mt + {g, g+8}, key columns 8nt + 2t + {0, 1}). Accumulator fragments
// of two adjacent n8 tiles are exactly an A fragment once packed to bf16, so
// S, Delta^T and U^T feed the next product without leaving registers.
// Per chunk (records streamed through a STAGES-slot cp.async ring):
//   project:  P^T = S Kd^T, O0^T = S Qd^T               (K = 128)
//   residual: Delta^T = beta (V - P)^T, rounded to bf16
//   solve:    U^T = Delta^T T^T                         (K = 16)
//   update:   O^T = O0^T + U^T Mqk^T; S = S diag(gamma) + U^T Kr
//   store:    O (bf16) through SMEM to the valid rows of the output
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

__device__ __forceinline__ u32 lds_u32(const u8* base, int element, int pitch, int row) {
  return *reinterpret_cast<const u32*>(base + 2 * (row * pitch + element));
}

__device__ __forceinline__ float lds_bf16(const u8* base, int element, int pitch, int row) {
  return bf16_bits_to_float(*reinterpret_cast<const u16*>(base + 2 * (row * pitch + element)));
}

// A fragment (16 rows x 16 k) from two adjacent fp32 accumulator tiles.
__device__ __forceinline__ void pack_a(const float (&lo)[4], const float (&hi)[4], u32 (&a)[4]) {
  a[0] = pack_bf16x2(lo[0], lo[1]);
  a[1] = pack_bf16x2(lo[2], lo[3]);
  a[2] = pack_bf16x2(hi[0], hi[1]);
  a[3] = pack_bf16x2(hi[2], hi[3]);
}

__device__ __forceinline__ void load_state(const kda_plan::KdaParams& p, int n, int h, float (&state)[2][16][4]) {
  constexpr int D = kda_plan::HEAD_DIM;
  const int warp = threadIdx.x >> 5;
  const int g = (threadIdx.x & 31) >> 2;
  const int t = threadIdx.x & 3;
  const i64 base = (static_cast<i64>(n) * p.heads + h) * D * D;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = 32 * warp + 16 * mt + g + 8 * (e >> 1);
        const int col = 8 * nt + 2 * t + (e & 1);
        float x = 0.0f;
        if (p.state_in != nullptr) {
          if (kda_plan::STATE_FP32) {
            x = static_cast<const float*>(p.state_in)[base + row * D + col];
          } else {
            x = bf16_to_float(static_cast<const bf16*>(p.state_in)[base + row * D + col]);
          }
        }
        state[mt][nt][e] = x;
      }
    }
  }
}

__device__ __forceinline__ void store_state(const kda_plan::KdaParams& p, int n, int h, const float (&state)[2][16][4]) {
  constexpr int D = kda_plan::HEAD_DIM;
  const int warp = threadIdx.x >> 5;
  const int g = (threadIdx.x & 31) >> 2;
  const int t = threadIdx.x & 3;
  const i64 base = (static_cast<i64>(n) * p.heads + h) * D * D;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = 32 * warp + 16 * mt + g + 8 * half;
        const int col = 8 * nt + 2 * t;
        const float x0 = state[mt][nt][2 * half];
        const float x1 = state[mt][nt][2 * half + 1];
        if (kda_plan::STATE_FP32) {
          float2 pair;
          pair.x = x0;
          pair.y = x1;
          *reinterpret_cast<float2*>(static_cast<float*>(p.state_out) + base + row * D + col) = pair;
        } else {
          *reinterpret_cast<u32*>(static_cast<bf16*>(p.state_out) + base + row * D + col) = pack_bf16x2(x0, x1);
        }
      }
    }
  }
}

__device__ __forceinline__ void recurrence(const kda_plan::KdaParams& p) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int S = R::STAGES;
  static_assert(C == 16 && D == 128 && R::THREADS == 128, "warp_mma recurrence: chunk 16, 4 warps x 32 rows");
  extern __shared__ __align__(128) u8 smem[];
  const int n = blockIdx.x;
  const int h = blockIdx.y;
  const SequenceSpan seq = sequence_span(p, n);
  const i64 chunks = chunks_of(seq.length);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;

  float state[2][16][4];
  load_state(p, n, h, state);

  for (int c = 0; c < S - 1; ++c) {
    if (c < chunks) {
      load_chunk_async(p, recurrence_slot(smem, c), seq, h, c);
    }
    cp_async_commit();
  }
  u8* out_s = smem + R::OUT_OFFSET;

  for (i64 c = 0; c < chunks; ++c) {
    cp_async_wait<S - 2>();
    __syncthreads();
    if (c + S - 1 < chunks) {
      load_chunk_async(p, recurrence_slot(smem, static_cast<int>((c + S - 1) % S)), seq, h, c + S - 1);
    }
    cp_async_commit();
    const RecurrenceSlot s = recurrence_slot(smem, static_cast<int>(c % S));

    // project
    float pt[2][2][4];
    float ot[2][2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
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
      u32 bk[2][2];
      u32 bq[2][2];
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
        bk[nc][0] = lds_u32(s.kd, 16 * ks + 2 * t, R::KD_PITCH, 8 * nc + g);
        bk[nc][1] = lds_u32(s.kd, 16 * ks + 2 * t + 8, R::KD_PITCH, 8 * nc + g);
        bq[nc][0] = lds_u32(s.qd, 16 * ks + 2 * t, R::QD_PITCH, 8 * nc + g);
        bq[nc][1] = lds_u32(s.qd, 16 * ks + 2 * t + 8, R::QD_PITCH, 8 * nc + g);
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        u32 a[4];
        pack_a(state[mt][2 * ks], state[mt][2 * ks + 1], a);
#pragma unroll
        for (int nc = 0; nc < 2; ++nc) {
          mma_bf16_16816(pt[mt][nc], a, bk[nc][0], bk[nc][1]);
          mma_bf16_16816(ot[mt][nc], a, bq[nc][0], bq[nc][1]);
        }
      }
    }

    // residual: Delta^T[v][c] = beta_c (V[c][v] - P^T[v][c]); reuse pt
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = 32 * warp + 16 * mt + g + 8 * (e >> 1);
          const int col = 8 * nc + 2 * t + (e & 1);
          pt[mt][nc][e] = s.beta[col] * (lds_bf16(s.v, row, R::V_PITCH, col) - pt[mt][nc][e]);
        }
      }
    }

    // solve: U^T = Delta^T T^T
    u32 bt[2][2];
#pragma unroll
    for (int ni = 0; ni < 2; ++ni) {
      bt[ni][0] = lds_u32(s.tinv, 2 * t, R::TINV_PITCH, 8 * ni + g);
      bt[ni][1] = lds_u32(s.tinv, 2 * t + 8, R::TINV_PITCH, 8 * ni + g);
    }
    u32 ua[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      u32 a[4];
      pack_a(pt[mt][0], pt[mt][1], a);
      float ut[2][4];
#pragma unroll
      for (int ni = 0; ni < 2; ++ni) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          ut[ni][e] = 0.0f;
        }
        mma_bf16_16816(ut[ni], a, bt[ni][0], bt[ni][1]);
      }
      pack_a(ut[0], ut[1], ua[mt]);
    }

    // update: O^T += U^T Mqk^T
#pragma unroll
    for (int nc = 0; nc < 2; ++nc) {
      const u32 b0 = lds_u32(s.mqk, 2 * t, R::MQK_PITCH, 8 * nc + g);
      const u32 b1 = lds_u32(s.mqk, 2 * t + 8, R::MQK_PITCH, 8 * nc + g);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        mma_bf16_16816(ot[mt][nc], ua[mt], b0, b1);
      }
    }
    // update: S = S diag(gamma) + U^T Kr
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const int col = 8 * nt + g;
      const u32 b0 = pack_bits(*reinterpret_cast<const u16*>(s.kr + 2 * ((2 * t) * R::KR_PITCH + col)),
                               *reinterpret_cast<const u16*>(s.kr + 2 * ((2 * t + 1) * R::KR_PITCH + col)));
      const u32 b1 = pack_bits(*reinterpret_cast<const u16*>(s.kr + 2 * ((2 * t + 8) * R::KR_PITCH + col)),
                               *reinterpret_cast<const u16*>(s.kr + 2 * ((2 * t + 9) * R::KR_PITCH + col)));
      const float g0 = s.gamma[8 * nt + 2 * t];
      const float g1 = s.gamma[8 * nt + 2 * t + 1];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        state[mt][nt][0] *= g0;
        state[mt][nt][1] *= g1;
        state[mt][nt][2] *= g0;
        state[mt][nt][3] *= g1;
        mma_bf16_16816(state[mt][nt], ua[mt], b0, b1);
      }
    }

    // store: O[c][v] through SMEM
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = 32 * warp + 16 * mt + g + 8 * (e >> 1);
          const int col = 8 * nc + 2 * t + (e & 1);
          reinterpret_cast<u16*>(out_s)[col * R::OUT_PITCH + row] = float_to_bf16_bits(ot[mt][nc][e]);
        }
      }
    }
    __syncthreads();
    const i64 row0 = c * C;
    const int valid = static_cast<int>(min(static_cast<i64>(C), seq.length - row0));
    for (int i = threadIdx.x; i < valid * (2 * D / 16); i += R::THREADS) {
      const int r = i / (2 * D / 16);
      const int part = i % (2 * D / 16);
      const i64 at = ((seq.start + row0 + r) * p.heads + h) * D * 2 + 16 * part;
      *reinterpret_cast<uint4*>(reinterpret_cast<u8*>(p.out) + at) =
          *reinterpret_cast<const uint4*>(out_s + 2 * r * R::OUT_PITCH + 16 * part);
    }
  }
  cp_async_wait<0>();
  if (p.state_out != nullptr) {
    store_state(p, n, h, state);
  }
}

} // namespace frag
} // namespace kda
