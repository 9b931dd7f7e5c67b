// kdajit fragment: common/prepare_step
// Chunk-parallel preparation of one (chunk, head) tile (spec section 2.1-2.2),
// one thread per key column, 4 warps (the prepare kernel's CTA,
// common/prepare_chunk, or a fused kernel's prepare group,
// wgmma/fused_persistent):
//   load:   q, k, g rows into SMEM tiles with 16-byte cp.async (padded rows
//           zero-filled)
//   norm:   warps 0 and 1: diag(Q Q^T) and diag(K K^T) by mma.sync from the
//           raw tiles (bf16 products are exact in fp32) -> 1/sqrt(sum + 1e-6)
//   gather: each thread takes its column of the three tiles into registers;
//           the raw tiles are dead from here (the operands reuse their bytes)
//   center: gate a2 = gate_scale * sigmoid(exp(A_log) (g + dt_bias)) (log2
//           domain), prefix G over rows, Kd = k^ 2^G, Qd = scale q^ 2^G,
//           Ki = k^ 2^-G, Kr = k^ 2^(G_tot - G), gamma = 2^G_tot
//   mqk:    L = diag(beta) strict-lower(Kd Ki^T), Mqk = lower-incl(Qd Ki^T)
//           by mma.sync on split operands x = hi + lo (both bf16), summing
//           hi*hi + hi*lo + lo*hi: near-fp32 products, so a small q.k of a
//           short sequence is not lost to bf16 operand rounding; masked by
//           selection, never by multiplying with 0
//   inverse:T = (I + L)^-1 by forward substitution in fp32
//   fold:   (record layouts with RECORD_FOLDS_T) the update's B operand
//           T^T [Kr | Mqk^T] by mma.sync (Kr^T T per warp's 32 keys, Mqk T by
//           warp 1), so the recurrence needs no solve step
//   write:  Kd, Qd (and Kr in the row layout) from their SMEM tiles with
//           16-byte stores by warps 2 and 3 while warps 0 and 1 form L and
//           Mqk; Kr^T in the core-matrix layout straight from the registers
//           (each thread's key column is 8 rows x 2 B contiguous); T, Mqk
//           (bf16), beta, gamma (fp32) directly: the record
// Paired tiles (a fused kernel's prepare, PAIRS): a tile's rows 0-7 and
// 8-15 may be two short chunks of at most 8 rows each (two work items of one
// chunk), prepared together and written to two records. Each segment has its
// own gate parameters and a gate prefix that restarts at its first row; L and
// Mqk are masked to the diagonal blocks, so T is block-diagonal and each
// record holds exactly what a tile of that chunk alone would give (its rows at
// 0-7, rows 8-15 zero).
// Uses kda_plan::prepare::* (SMEM offsets and pitches), common/prepare_ops
// (loads, row norms, split products) and the record layout fragment
// (warp_mma/record_rows, or wgmma/record_core_matrices with wgmma/fold_c16):
// record_*().
namespace kda {
namespace frag {

// The second chunk of a paired tile (rows 8-15): its valid rows, its head's
// gate parameters for the thread's column, and its record.
struct SecondChunk {
  bool exists = false;
  int valid = 0;
  float a_scale = 0.0f;
  float bias = 0.0f;
  u8* record = nullptr;
};

// One chunk, from rows already in ring slot `stage` to its record, by the
// team's four warps (thread = key column). The caller says where the record
// goes and what beta is, each where the step needs it: record_at() (the
// workspace's record, or a fused kernel's ring slot) and row_beta()
// (sigmoid(beta) of row `thread`, called by the first C threads:
// chunk_row_beta, or a value loaded ahead). Starts with the team
// synchronised after the rows arrived; ends with warp 0 finishing T while the
// others may go on (the next chunk's first barrier waits for it), or, with
// RECORD_FOLDS_T, with the fold's writes. With PAIRS and second.exists, `c`
// is rows 0-7 of the tile and `second` rows 8-15 (row_beta gives the row of
// either). NORMS_FIRST (a team whose chain holds its kernel: the fused
// kernel's one group per SM) applies the rows' norms before the center's
// stores, so that their loads do not wait behind the row before's stores;
// it costs registers, which a prepare kernel's CTAs keep for occupancy.
template <class Team, bool PAIRS = false, bool NORMS_FIRST = false, class RowBeta, class RecordAt>
__device__ __forceinline__ void prepare_one_chunk(const kda_plan::KdaParams& p, const PrepareChunk& c, u8* smem,
                                                  int stage, float a_scale, float bias, RowBeta row_beta,
                                                  RecordAt record_at, const SecondChunk& second = SecondChunk{}) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int HALF = C / 2;
  static_assert(!PAIRS || (C == 16 && RECORD_FOLDS_T && RECORD_PART_MAJOR), "pairs: the chunk-16 wgmma record");
  const bool paired = PAIRS && second.exists;
  // segment of row r (compile-time r): 1 for rows 8-15 of a paired tile
  auto in_second = [paired](int r) { return paired && r >= HALF; };
  const int ch = Team::thread();
  const int warp = Team::thread() >> 5;
  const int lane = threadIdx.x & 31;
  const u8* q_raw = prepare_buffer(smem, stage, P::Q_RAW_OFFSET, P::Q_RAW_STAGED);
  const u8* k_raw = prepare_buffer(smem, stage, P::K_RAW_OFFSET, P::K_RAW_STAGED);
  const u8* g_raw = prepare_buffer(smem, stage, P::G_RAW_OFFSET, P::G_RAW_STAGED);

  // norm
  float* rnorm = reinterpret_cast<float*>(prepare_buffer(smem, stage, P::RNORM_OFFSET, P::RNORM_STAGED)); // [2][C]
  static_assert(P::Q_RAW_PITCH == P::K_RAW_PITCH, "one pitch for the raw tiles");
  if (warp < 2) {
    warp_row_rnorms<PaddedRows<P::Q_RAW_PITCH>>(warp == 0 ? q_raw : k_raw, rnorm + warp * C);
  }

  // gather
  float q[C];
  float k[C];
  float gate[C];
#pragma unroll
  for (int r = 0; r < C; ++r) {
    q[r] = bf16_bits_to_float(reinterpret_cast<const u16*>(q_raw)[r * P::Q_RAW_PITCH + ch]);
    k[r] = bf16_bits_to_float(reinterpret_cast<const u16*>(k_raw)[r * P::K_RAW_PITCH + ch]);
    const float g = bf16_bits_to_float(reinterpret_cast<const u16*>(g_raw)[r * P::G_RAW_PITCH + ch]);
    if constexpr (PAIRS) {
      const bool valid = in_second(r) ? r - HALF < second.valid : r < c.valid;
      const float seg_scale = in_second(r) ? second.a_scale : a_scale;
      const float seg_bias = in_second(r) ? second.bias : bias;
      gate[r] = valid ? p.gate_scale * sigmoid(seg_scale * (g + seg_bias)) : 0.0f;
    } else {
      gate[r] = r < c.valid ? p.gate_scale * sigmoid(a_scale * (g + bias)) : 0.0f;
    }
  }

  float* beta = reinterpret_cast<float*>(prepare_buffer(smem, stage, P::BETA_OFFSET, P::BETA_STAGED));
  if (Team::thread() < C) {
    beta[Team::thread()] = row_beta();
  }
  Team::sync();

  // center
  u8* kd_s = prepare_buffer(smem, stage, P::KD_OFFSET, P::KD_STAGED);
  u8* qd_s = prepare_buffer(smem, stage, P::QD_OFFSET, P::QD_STAGED);
  u8* ki_s = prepare_buffer(smem, stage, P::KI_OFFSET, P::KI_STAGED);
  u8* kd_lo_s = prepare_buffer(smem, stage, P::KD_LO_OFFSET, P::KD_LO_STAGED);
  u8* qd_lo_s = prepare_buffer(smem, stage, P::QD_LO_OFFSET, P::QD_LO_STAGED);
  u8* ki_lo_s = prepare_buffer(smem, stage, P::KI_LO_OFFSET, P::KI_LO_STAGED);
  u8* record = record_at();
  u8* kr_s = kr_tile(smem, stage);
  u16 kr_column[C];
  float G[C];
  float acc = 0.0f;
  float first_total = 0.0f; // a paired tile: the first segment's total
#pragma unroll
  for (int r = 0; r < C; ++r) {
    if (PAIRS && r == HALF && paired) {
      first_total = acc;
      acc = 0.0f; // the second chunk's prefix starts at its first row
    }
    acc += gate[r];
    G[r] = acc;
  }
  const float g_total = acc;
  const float gamma_total = fast_exp2(g_total);
  // gamma of row r's segment: a paired tile's first segment has its own
  const float gamma_first = PAIRS && paired ? fast_exp2(first_total) : gamma_total;
  if constexpr (NORMS_FIRST) {
    // the loads may not move past the stores below (the compiler cannot
    // tell the buffers apart): one per row after the row before's stores
    // puts their latency on each row
#pragma unroll
    for (int r = 0; r < C; ++r) {
      q[r] *= rnorm[r];
      k[r] *= rnorm[C + r];
    }
  }
#pragma unroll
  for (int r = 0; r < C; ++r) {
    const float qn = NORMS_FIRST ? q[r] : q[r] * rnorm[r];
    const float kn = NORMS_FIRST ? k[r] : k[r] * rnorm[C + r];
    const float decay = fast_exp2(G[r]);
    const float growth = fast_exp2(-G[r]);
    const float kd_f = kn * decay;
    const float qd_f = p.scale * qn * decay;
    const float ki_f = kn * growth;
    const u16 kd = float_to_bf16_bits_alu(kd_f);
    const u16 qd = float_to_bf16_bits_alu(qd_f);
    const u16 ki = float_to_bf16_bits_alu(ki_f);
    const u16 kr = float_to_bf16_bits_alu(ki_f * (PAIRS && r < HALF ? gamma_first : gamma_total)); // k^ 2^(G_tot - G)
    (void)growth;
    reinterpret_cast<u16*>(kd_s)[r * P::KD_PITCH + ch] = kd;
    reinterpret_cast<u16*>(qd_s)[r * P::QD_PITCH + ch] = qd;
    reinterpret_cast<u16*>(ki_s)[r * P::KI_PITCH + ch] = ki;
    reinterpret_cast<u16*>(kd_lo_s)[r * P::KD_LO_PITCH + ch] = float_to_bf16_bits_alu(kd_f - bf16_bits_to_float(kd));
    reinterpret_cast<u16*>(qd_lo_s)[r * P::QD_LO_PITCH + ch] = float_to_bf16_bits_alu(qd_f - bf16_bits_to_float(qd));
    reinterpret_cast<u16*>(ki_lo_s)[r * P::KI_LO_PITCH + ch] = float_to_bf16_bits_alu(ki_f - bf16_bits_to_float(ki));
    if constexpr (RECORD_FOLDS_T) {
      kr_column[r] = kr; // to the krt tile once ki is dead (after the products)
    } else {
      reinterpret_cast<u16*>(kr_s)[r * kr_tile_pitch() + ch] = kr;
    }
  }
  if (paired) {
    // each record: its gamma, its rows' beta at 0-7, zero at 8-15
    reinterpret_cast<float*>(record + kda_plan::WS_GAMMA_OFFSET)[ch] = gamma_first;
    reinterpret_cast<float*>(second.record + kda_plan::WS_GAMMA_OFFSET)[ch] = gamma_total;
    if (Team::thread() < C) {
      const int r = Team::thread();
      u8* const own = r < HALF ? record : second.record;
      reinterpret_cast<float*>(own + kda_plan::WS_BETA_OFFSET)[r % HALF] = beta[r];
      reinterpret_cast<float*>(own + kda_plan::WS_BETA_OFFSET)[r % HALF + HALF] = 0.0f;
    }
  } else {
    reinterpret_cast<float*>(record + kda_plan::WS_GAMMA_OFFSET)[ch] = gamma_total;
    if (Team::thread() < C) {
      reinterpret_cast<float*>(record + kda_plan::WS_BETA_OFFSET)[Team::thread()] = beta[Team::thread()];
    }
  }
  Team::sync();

  // write: Kd, Qd (and Kr) tiles to the record with 16-byte stores by warps
  // 2 and 3 (row r, 8 keys from 8 part) while warps 0 and 1 form L and Mqk,
  // in the record's contiguous order so that a warp's store covers whole
  // 128-byte lines: RECORD_PART_MAJOR, the 32 rows [Kd; Qd] of one part per
  // warp and store (512 contiguous bytes); else whole rows
  if (warp >= 2) {
    constexpr int tiles = RECORD_FOLDS_T ? 2 : 3;
    constexpr int parts = 2 * D / 16;
    constexpr int writers = Team::threads() - 64;
    static_assert(!RECORD_PART_MAJOR || (tiles * C == 32 && writers % 32 == 0), "a warp's lanes are the rows of [Kd; Qd]");
    if constexpr (RECORD_PART_MAJOR) {
      const int tile = lane / C;
      const int r = lane % C;
      const u8* src = tile == 0 ? kd_s + 2 * r * P::KD_PITCH : qd_s + 2 * r * P::QD_PITCH;
      // a paired tile: row r to row r % 8 of its segment's record, zero to row r % 8 + 8
      u8* const own = paired && r >= HALF ? second.record : record;
      const int row = paired ? r % HALF : r;
#pragma unroll
      for (int part = warp - 2; part < parts; part += writers / 32) {
        const int at = tile == 0 ? record_kd_part(row, part) : record_qd_part(row, part);
        *reinterpret_cast<uint4*>(own + at) = *reinterpret_cast<const uint4*>(src + 16 * part);
        if (paired) {
          const int zero_at = tile == 0 ? record_kd_part(row + HALF, part) : record_qd_part(row + HALF, part);
          *reinterpret_cast<uint4*>(own + zero_at) = make_uint4(0u, 0u, 0u, 0u);
        }
      }
    } else {
      static_assert(RECORD_PART_MAJOR || (writers % parts == 0 && C % (writers / parts) == 0), "whole rows per pass");
      const int part = Team::thread() % parts;
      const int r0 = (Team::thread() - 64) / parts;
#pragma unroll
      for (int tile = 0; tile < tiles; ++tile) {
#pragma unroll
        for (int pass = 0; pass < C / (writers / parts); ++pass) {
          const int r = r0 + pass * (writers / parts);
          const u8* src = tile == 0 ? kd_s + 2 * r * P::KD_PITCH : tile == 1 ? qd_s + 2 * r * P::QD_PITCH : kr_s + 2 * r * kr_tile_pitch();
          const int at = tile == 0 ? record_kd_part(r, part) : tile == 1 ? record_qd_part(r, part) : record_kr_part(r, part);
          *reinterpret_cast<uint4*>(record + at) = *reinterpret_cast<const uint4*>(src + 16 * part);
        }
      }
    }
  }

  // mqk: warp 0 forms L, warp 1 forms Mqk
  float* lmat = reinterpret_cast<float*>(prepare_buffer(smem, stage, P::LMAT_OFFSET, P::LMAT_STAGED)); // [C][LMAT_PITCH]
  const int g = lane >> 2;
  const int t = lane & 3;
  u32 mqk_a[4]; // warp 1: Mqk, bf16 A fragment
  if (warp < 2) {
    float prod[2][4];
    static_assert(P::KD_PITCH == P::QD_PITCH && P::KD_PITCH == P::KI_PITCH && P::KD_PITCH == P::KD_LO_PITCH &&
                      P::KD_PITCH == P::QD_LO_PITCH && P::KD_PITCH == P::KI_LO_PITCH,
                  "one pitch for the split operands");
    warp_product_16x16<PaddedRows<P::KD_PITCH>, true>(warp == 0 ? kd_s : qd_s, warp == 0 ? kd_lo_s : qd_lo_s, ki_s, ki_lo_s, prod);
#pragma unroll
    for (int nj = 0; nj < 2; ++nj) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = g + 8 * (e >> 1);
        const int j = 8 * nj + 2 * t + (e & 1);
        // a paired tile: only the diagonal blocks (rows and columns of one chunk)
        const bool same = !paired || (e >> 1) == nj;
        if (warp == 0) {
          lmat[i * P::LMAT_PITCH + j] = i > j && same ? beta[i] * prod[nj][e] : 0.0f;
        } else {
          prod[nj][e] = i >= j && same ? prod[nj][e] : 0.0f;
        }
      }
      if (warp == 1 && !RECORD_FOLDS_T) {
        *reinterpret_cast<u32*>(record + record_mqk_at(g, 8 * nj + 2 * t)) = pack_bf16x2(prod[nj][0], prod[nj][1]);
        *reinterpret_cast<u32*>(record + record_mqk_at(g + 8, 8 * nj + 2 * t)) = pack_bf16x2(prod[nj][2], prod[nj][3]);
      }
    }
    if (warp == 1) {
      pack_a(prod[0], prod[1], mqk_a); // Mqk as an A fragment (rows m, columns i) for the fold
    }
  }
  Team::sync();
  if constexpr (RECORD_FOLDS_T) {
    // Kr^T rows (key ch, chunk rows i) into the krt tile (ki's bytes, dead now)
    u8* krt = krt_tile(smem, stage);
    uint4 lo;
    uint4 hi;
    lo.x = pack_bits(kr_column[0], kr_column[1]);
    lo.y = pack_bits(kr_column[2], kr_column[3]);
    lo.z = pack_bits(kr_column[4], kr_column[5]);
    lo.w = pack_bits(kr_column[6], kr_column[7]);
    hi.x = pack_bits(kr_column[8], kr_column[9]);
    hi.y = pack_bits(kr_column[10], kr_column[11]);
    hi.z = pack_bits(kr_column[12], kr_column[13]);
    hi.w = pack_bits(kr_column[14], kr_column[15]);
    *reinterpret_cast<uint4*>(krt + 2 * ch * krt_pitch()) = lo;
    *reinterpret_cast<uint4*>(krt + 2 * ch * krt_pitch() + 16) = hi;
  }

  // inverse: T (I + L) = I, column j of T by lane j (forward substitution)
  if (warp == 0 && lane < C) {
    const int j = lane;
    float tcol[C];
    static_assert(P::LMAT_OFFSET % 16 == 0 && P::STAGE_BYTES % 16 == 0, "16-byte rows of L");
    unit_lower_inverse_column16<P::LMAT_PITCH>(lmat, j, tcol);
    if constexpr (!RECORD_FOLDS_T) {
#pragma unroll
      for (int i = 0; i < C; ++i) {
        *reinterpret_cast<u16*>(record + record_tinv_at(i, j)) = float_to_bf16_bits(tcol[i]);
      }
    }
    if constexpr (RECORD_FOLDS_T) {
      // row j of T^T into the tt tile: the fold's B operand (B[i][c] = T[i][c])
      u8* tt = tt_tile(smem, stage) + 2 * j * tt_pitch();
      uint4 lo;
      uint4 hi;
      lo.x = pack_bf16x2(tcol[0], tcol[1]);
      lo.y = pack_bf16x2(tcol[2], tcol[3]);
      lo.z = pack_bf16x2(tcol[4], tcol[5]);
      lo.w = pack_bf16x2(tcol[6], tcol[7]);
      hi.x = pack_bf16x2(tcol[8], tcol[9]);
      hi.y = pack_bf16x2(tcol[10], tcol[11]);
      hi.z = pack_bf16x2(tcol[12], tcol[13]);
      hi.w = pack_bf16x2(tcol[14], tcol[15]);
      *reinterpret_cast<uint4*>(tt) = lo;
      *reinterpret_cast<uint4*>(tt + 16) = hi;
    }
  }
  if constexpr (RECORD_FOLDS_T) {
    Team::sync();
    fold_t_into_update(record, krt_tile(smem, stage), tt_tile(smem, stage), mqk_a, warp == 1, warp,
                       paired ? second.record : nullptr);
  }
}

} // namespace frag
} // namespace kda
