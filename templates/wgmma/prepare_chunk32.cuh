// kdajit fragment: wgmma/prepare_chunk32
// Chunk-parallel preparation of one 32-token (chunk, head) tile for the wgmma
// chunk-32 recurrence, with the fixed exponent anchor of spec section 8
// (decision 3): C_a = (C / 2) b, b = lower_bound log2 e = gate_scale, so that
// the operands of the in-chunk products stay within 2^(+-16 |b|).
// 8 warps; thread (half, ch) = (threadIdx.x / 128, threadIdx.x % 128) owns key
// column ch of rows 16 half .. 16 half + 15.
//   load:    q, k, g rows with 16-byte cp.async (common/prepare_ops)
//   norm:    warps 0..3: diag(X X^T) of q rows 0-15, 16-31, k rows 0-15, 16-31
//   gather:  each thread takes its 16 rows of the column into registers; the
//            gate prefix G over its rows, and the other half's gate sum (the
//            same additions in the same order, never contracted: both halves
//            agree on G_tot bit for bit)
//   center:  Kda = k^ 2^(G - C_a), Qda = scale q^ 2^(G - C_a), Ki = k^ 2^(C_a - G)
//            as split operands hi + lo (bf16 each); Kr = k^ 2^(G_tot - G) kept
//            in registers; gamma = 2^G_tot
//   mqk:     warps 0-2: the blocks (0,0), (1,0), (1,1) of Kda Ki^T, warps 3-5
//            the same blocks of Qda Ki^T (16 x 16 x 128 each, hi*hi + hi*lo +
//            lo*hi); warps 6-7 write the record's Kd = Kda 2^C_a and
//            Qd = Qda 2^C_a (restored from the hi tiles) as core matrices
//   inverse: L = diag(beta) strict-lower(.) and Mqk = lower-incl(.) to SMEM;
//            warp 0: T11, T22 by forward substitution in fp32 (lanes 0-15 and
//            16-31 at once), X = L21 T11, T21 = -T22 X (blocked 16 -> 32)
//   fold:    UPD = [Kr^T T; Mqk T] (N HEAD_DIM + C, K C) by mma.sync: warp w
//            the keys 16 w .. 16 w + 15 (Kr^T by ldmatrix.trans from the row
//            tile), warps 0-1 the C output rows; stored as core matrices
// Uses kda_plan::prepare::* and wgmma/record_core_matrices (record_*_part,
// record_update_at).
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

__device__ __forceinline__ float anchored_gate(const kda_plan::KdaParams& p, float g, float a_scale, float bias) {
  return __fmul_rn(p.gate_scale, sigmoid(a_scale * (g + bias)));
}

__device__ __forceinline__ void prepare_chunk32(const kda_plan::KdaParams& p) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int HALF = 16;
  static_assert(C == 32 && D == 128 && P::THREADS == 2 * D, "chunk 32: two threads per key column, 8 warps");
  static_assert(P::STAGES == 1 && P::CHUNKS_PER_CTA == 1, "one chunk per CTA");
  static_assert(P::Q_RAW_PITCH == P::K_RAW_PITCH && P::KDA_PITCH == P::QDA_PITCH && P::KDA_PITCH == P::KI_PITCH &&
                    P::KDA_PITCH == P::KDA_LO_PITCH && P::KDA_PITCH == P::QDA_LO_PITCH &&
                    P::KDA_PITCH == P::KI_LO_PITCH,
                "one pitch for the raw tiles and one for the split operands");
  extern __shared__ __align__(128) u8 smem[];
  const int h = blockIdx.y;
  const int ch = threadIdx.x % D;
  const int half = threadIdx.x / D;
  const int r0 = HALF * half;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int t = lane & 3;

  const PrepareChunk c = prepare_chunk_at(p, blockIdx.x);
  if (!c.exists) {
    return;
  }
  load_chunk_rows(p, c, h, smem, 0);
  cp_async_commit();
  const float a_scale = __expf(p.a_log[h]);
  const float bias = p.dt_bias[h * D + ch];
  const float anchor = 0.5f * C * p.gate_scale; // C_a (log2)
  u8* record = p.workspace + (c.chunk * p.heads + h) * static_cast<i64>(kda_plan::WS_RECORD_BYTES);
  const u8* q_raw = smem + P::Q_RAW_OFFSET;
  const u8* k_raw = smem + P::K_RAW_OFFSET;
  const u8* g_raw = smem + P::G_RAW_OFFSET;
  cp_async_wait<0>();
  __syncthreads();

  // norm
  float* rnorm = reinterpret_cast<float*>(smem + P::RNORM_OFFSET); // [2][C]
  if (warp < 4) {
    const int rows = HALF * (warp & 1);
    warp_row_rnorms((warp < 2 ? q_raw : k_raw) + 2 * rows * P::Q_RAW_PITCH, P::Q_RAW_PITCH,
                    rnorm + C * (warp >> 1) + rows);
  }
  float* beta = reinterpret_cast<float*>(smem + P::BETA_OFFSET);
  if (threadIdx.x < C) {
    const int r = threadIdx.x;
    float b = 0.0f;
    if (r < c.valid) {
      b = sigmoid(bf16_to_float(p.beta[(c.seq.start + c.row0 + r) * p.beta_token_stride + h]));
    }
    beta[r] = b;
    reinterpret_cast<float*>(record + kda_plan::WS_BETA_OFFSET)[r] = b;
  }

  // gather
  float q[HALF];
  float k[HALF];
  float G[HALF];
  float prefix = 0.0f;
  float other = 0.0f; // the gate sum of the other half's rows
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    const int r = r0 + i;
    const int ro = HALF - r0 + i;
    q[i] = bf16_bits_to_float(reinterpret_cast<const u16*>(q_raw)[r * P::Q_RAW_PITCH + ch]);
    k[i] = bf16_bits_to_float(reinterpret_cast<const u16*>(k_raw)[r * P::K_RAW_PITCH + ch]);
    const float gr = bf16_bits_to_float(reinterpret_cast<const u16*>(g_raw)[r * P::G_RAW_PITCH + ch]);
    const float go = bf16_bits_to_float(reinterpret_cast<const u16*>(g_raw)[ro * P::G_RAW_PITCH + ch]);
    prefix = __fadd_rn(prefix, r < c.valid ? anchored_gate(p, gr, a_scale, bias) : 0.0f);
    other = __fadd_rn(other, ro < c.valid ? anchored_gate(p, go, a_scale, bias) : 0.0f);
    G[i] = prefix;
  }
  const float base = half == 0 ? 0.0f : other;    // G before the first own row
  const float g_total = __fadd_rn(prefix, other); // the same sum in both halves
  if (half == 1) {
    reinterpret_cast<float*>(record + kda_plan::WS_GAMMA_OFFSET)[ch] = fast_exp2(g_total);
  }
  __syncthreads(); // rnorm, beta; the raw tiles are dead from here

  // center
  u8* const kda_s = smem + P::KDA_OFFSET;
  u8* const qda_s = smem + P::QDA_OFFSET;
  u8* const ki_s = smem + P::KI_OFFSET;
  u8* const kda_lo_s = smem + P::KDA_LO_OFFSET;
  u8* const qda_lo_s = smem + P::QDA_LO_OFFSET;
  u8* const ki_lo_s = smem + P::KI_LO_OFFSET;
  u16 kr_column[HALF];
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    const int r = r0 + i;
    const float Gr = base + G[i];
    const float kn = k[i] * rnorm[C + r];
    const float qn = q[i] * rnorm[r];
    const float down = fast_exp2(Gr - anchor);
    const float kda_f = kn * down;
    const float qda_f = p.scale * qn * down;
    const float ki_f = kn * fast_exp2(anchor - Gr);
    const u16 kda = float_to_bf16_bits(kda_f);
    const u16 qda = float_to_bf16_bits(qda_f);
    const u16 ki = float_to_bf16_bits(ki_f);
    const int at = r * P::KDA_PITCH + ch;
    reinterpret_cast<u16*>(kda_s)[at] = kda;
    reinterpret_cast<u16*>(qda_s)[at] = qda;
    reinterpret_cast<u16*>(ki_s)[at] = ki;
    reinterpret_cast<u16*>(kda_lo_s)[at] = float_to_bf16_bits(kda_f - bf16_bits_to_float(kda));
    reinterpret_cast<u16*>(qda_lo_s)[at] = float_to_bf16_bits(qda_f - bf16_bits_to_float(qda));
    reinterpret_cast<u16*>(ki_lo_s)[at] = float_to_bf16_bits(ki_f - bf16_bits_to_float(ki));
    kr_column[i] = float_to_bf16_bits(kn * fast_exp2(g_total - Gr));
  }
  __syncthreads();

  // mqk: warps 0-5 the six 16 x 16 blocks; warps 6-7 the record's Kd and Qd
  const int block = warp % 3;
  const int ib = block == 0 ? 0 : 1;
  const int jb = block == 2 ? 1 : 0;
  float prod[2][4];
  if (warp < 6) {
    const bool is_l = warp < 3;
    const int a_rows = 2 * HALF * ib * P::KDA_PITCH;
    const int b_rows = 2 * HALF * jb * P::KDA_PITCH;
    warp_product_16x16((is_l ? kda_s : qda_s) + a_rows, (is_l ? kda_lo_s : qda_lo_s) + a_rows, ki_s + b_rows,
                       ki_lo_s + b_rows, P::KDA_PITCH, prod);
  } else {
    constexpr int parts = 2 * D / 16;
    constexpr int writers = P::THREADS - 192;
    static_assert(writers % parts == 0 && C % (writers / parts) == 0, "whole rows per pass");
    const float restore = fast_exp2(anchor);
    const int part = threadIdx.x % parts;
    const int w0 = (threadIdx.x - 192) / parts;
#pragma unroll
    for (int tile = 0; tile < 2; ++tile) {
#pragma unroll
      for (int pass = 0; pass < C / (writers / parts); ++pass) {
        const int r = w0 + pass * (writers / parts);
        const u8* src = (tile == 0 ? kda_s : qda_s) + 2 * r * P::KDA_PITCH + 16 * part;
        const int at = tile == 0 ? record_kd_part(r, part) : record_qd_part(r, part);
        *reinterpret_cast<uint4*>(record + at) = restore_anchor_x8(*reinterpret_cast<const uint4*>(src), restore);
      }
    }
  }
  __syncthreads(); // the operand tiles are dead from here

  // inverse: L and Mqk blocks to SMEM, Kr rows into ki's bytes
  float* const lmat = reinterpret_cast<float*>(smem + P::LMAT_OFFSET); // [C][LMAT_PITCH]
  u8* const mqk_s = smem + P::MQK_OFFSET;                               // bf16 [C][MQK_PITCH]
  u8* const kr_s = smem + P::KR_OFFSET;                                 // bf16 [C][KR_PITCH]
  if (warp < 6) {
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = HALF * ib + g + 8 * hf;
        const int j = HALF * jb + 8 * nj + 2 * t;
        if (warp < 3) {
          lmat[i * P::LMAT_PITCH + j] = i > j ? beta[i] * prod[nj][2 * hf] : 0.0f;
          lmat[i * P::LMAT_PITCH + j + 1] = i > j + 1 ? beta[i] * prod[nj][2 * hf + 1] : 0.0f;
        } else {
          const float m0 = i >= j ? prod[nj][2 * hf] : 0.0f;
          const float m1 = i >= j + 1 ? prod[nj][2 * hf + 1] : 0.0f;
          *reinterpret_cast<u32*>(mqk_s + 2 * (i * P::MQK_PITCH + j)) = pack_bf16x2(m0, m1);
          if (block == 0) { // the upper block (0, 1) of the lower-triangular Mqk
            *reinterpret_cast<u32*>(mqk_s + 2 * (i * P::MQK_PITCH + j + HALF)) = 0u;
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    reinterpret_cast<u16*>(kr_s)[(r0 + i) * P::KR_PITCH + ch] = kr_column[i];
  }
  __syncthreads();

  float* const tmat = reinterpret_cast<float*>(smem + P::TMAT_OFFSET); // [C][TMAT_PITCH], fp32 T
  u8* const tt = smem + P::TT_OFFSET;                                   // bf16 T^T [C][TT_PITCH]
  if (warp == 0) {
    const int j = lane & 15;
    const int blk = lane >> 4; // 0: T11, 1: T22
    const int d0 = HALF * blk;
    float tcol[HALF];
#pragma unroll
    for (int i = 0; i < HALF; ++i) {
      float s = i == j ? 1.0f : 0.0f;
#pragma unroll
      for (int m = 0; m < i; ++m) {
        s -= lmat[(d0 + i) * P::LMAT_PITCH + d0 + m] * tcol[m];
      }
      tcol[i] = i < j ? 0.0f : s;
      tmat[(d0 + i) * P::TMAT_PITCH + d0 + j] = tcol[i];
    }
    __syncwarp();
    // X = L21 T11 into the (zero) upper-right block as scratch: rows 8 blk ..
    float x[8];
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const int i = 8 * blk + ii;
      float s = 0.0f;
#pragma unroll
      for (int m = 0; m < HALF; ++m) {
        s += lmat[(HALF + i) * P::LMAT_PITCH + m] * tmat[m * P::TMAT_PITCH + j];
      }
      x[ii] = s;
    }
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      tmat[(8 * blk + ii) * P::TMAT_PITCH + HALF + j] = x[ii];
    }
    __syncwarp();
    // T21 = -T22 X
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      const int i = 8 * blk + ii;
      float s = 0.0f;
#pragma unroll
      for (int m = 0; m < HALF; ++m) {
        s += tmat[(HALF + i) * P::TMAT_PITCH + HALF + m] * tmat[m * P::TMAT_PITCH + HALF + j];
      }
      x[ii] = -s;
    }
#pragma unroll
    for (int ii = 0; ii < 8; ++ii) {
      tmat[(HALF + 8 * blk + ii) * P::TMAT_PITCH + j] = x[ii];
    }
    __syncwarp();
    // row `lane` of T^T (column `lane` of T; zero above the diagonal) as bf16
    u32 packed[C / 2];
#pragma unroll
    for (int i = 0; i < C; i += 2) {
      const float t0 = i >= lane ? tmat[i * P::TMAT_PITCH + lane] : 0.0f;
      const float t1 = i + 1 >= lane ? tmat[(i + 1) * P::TMAT_PITCH + lane] : 0.0f;
      packed[i / 2] = pack_bf16x2(t0, t1);
    }
#pragma unroll
    for (int q4 = 0; q4 < C / 8; ++q4) {
      *reinterpret_cast<uint4*>(tt + 2 * lane * P::TT_PITCH + 16 * q4) =
          make_uint4(packed[4 * q4], packed[4 * q4 + 1], packed[4 * q4 + 2], packed[4 * q4 + 3]);
    }
  }
  __syncthreads();

  // fold: UPD[n][c'] = sum_c A[n][c] T[c][c'], A = Kr^T (keys) or Mqk (output rows)
  u32 b[2][2][4]; // [K step][N pair]: T^T rows c', chunk rows c
  {
    const int b_row = 8 * (lane >> 4) + (lane & 7);
    const int b_col = 8 * ((lane >> 3) & 1);
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        ldmatrix_x4(b[kc][np], tt + 2 * ((HALF * np + b_row) * P::TT_PITCH + HALF * kc + b_col));
      }
    }
  }
  auto fold_rows = [&](int n0, const u32 (&a)[2][4]) {
    float acc[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[nt][e] = 0.0f;
      }
#pragma unroll
      for (int kc = 0; kc < 2; ++kc) {
        mma_bf16_16816(acc[nt], a[kc], b[kc][nt >> 1][2 * (nt & 1)], b[kc][nt >> 1][2 * (nt & 1) + 1]);
      }
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        *reinterpret_cast<u32*>(record + record_update_at(n0 + g + 8 * hf, 8 * nt + 2 * t)) =
            pack_bf16x2(acc[nt][2 * hf], acc[nt][2 * hf + 1]);
      }
    }
  };
  {
    // Kr^T rows n0 .. n0 + 15: matrix j = lane / 8 holds A rows 8 (j % 2) ..,
    // columns 8 (j / 2) .. = Kr rows c, keys transposed
    const int c_row = 8 * (lane >> 4) + (lane & 7);
    const int key = 16 * warp + 8 * ((lane >> 3) & 1);
    u32 a[2][4];
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      ldmatrix_x4_trans(a[kc], kr_s + 2 * ((HALF * kc + c_row) * P::KR_PITCH + key));
    }
    fold_rows(16 * warp, a);
  }
  if (warp < 2) {
    const int a_row = 8 * ((lane >> 3) & 1) + (lane & 7);
    const int a_col = 8 * (lane >> 4);
    u32 a[2][4];
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      ldmatrix_x4(a[kc], mqk_s + 2 * ((16 * warp + a_row) * P::MQK_PITCH + HALF * kc + a_col));
    }
    fold_rows(D + 16 * warp, a);
  }
}

} // namespace frag
} // namespace kda
