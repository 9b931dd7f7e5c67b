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
//           Ki = k^ 2^-G, Kr = k^ 2^(G_tot - G), gamma = 2^G_tot; for the
//           core-matrix record (RECORD_FOLDS_T) the operand tiles are
//           key-major (KeyMajorRows16: a key's 16 rows in 32 bytes), each
//           thread converting two rows at a time (cvt.rn.bf16x2) and
//           storing its key's 8 rows of each operand in one 16-byte store;
//           for the row layouts' record row-major, 2-byte stores
//   mqk:    L = diag(beta) strict-lower(Kd Ki^T), Mqk = lower-incl(Qd Ki^T)
//           by mma.sync on split operands x = hi + lo (both bf16), summing
//           hi*hi + hi*lo + lo*hi: near-fp32 products, so a small q.k of a
//           short sequence is not lost to bf16 operand rounding; masked by
//           selection, never by multiplying with 0
//   inverse:T = (I + L)^-1 by forward substitution in fp32
//   fold:   (record layouts with RECORD_FOLDS_T) the update's B operand
//           T^T [Kr | Mqk^T] by mma.sync (Kr^T T per warp's 32 keys, Mqk T by
//           warp 1), so the recurrence needs no solve step
//   write:  Kd, Qd (and Kr in the row layout) from their SMEM tiles by
//           warps 2 and 3 while warps 0 and 1 form L and Mqk (key-major:
//           ldmatrix .trans, then stmatrix or 4-byte stores; row-major:
//           16-byte row segments); Kr^T in the core-matrix layout straight
//           from the registers (each thread's key column is 16 rows x 2 B
//           contiguous); T, Mqk (bf16), beta, gamma (fp32) directly: the
//           record
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
// SMEM_RECORDS: record_at() points into shared memory (a fused kernel's ring
// slot), else into the workspace.
template <class Team, bool PAIRS = false, bool NORMS_FIRST = false, bool SMEM_RECORDS = false, class RowBeta,
          class RecordAt>
__device__ __forceinline__ void prepare_one_chunk(const kda_plan::KdaParams& p, const PrepareChunk& c, u8* smem,
                                                  int stage, float a_scale, float bias, RowBeta row_beta,
                                                  RecordAt record_at, const SecondChunk& second = SecondChunk{}) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int HALF = C / 2;
  static_assert(!PAIRS || (C == 16 && RECORD_FOLDS_T && RECORD_PART_MAJOR), "pairs: the chunk-16 wgmma record");
  // the wgmma record (core matrices, T folded in): key-major operand tiles
  // (KeyMajorRows16), written two rows per conversion and 16 bytes per store,
  // read by ldmatrix .trans; the row layouts' record: row-major padded tiles
  constexpr bool KEY_MAJOR = RECORD_FOLDS_T;
  static_assert(KEY_MAJOR == RECORD_PART_MAJOR, "the core-matrix record is part-major and folds T");
  static_assert(!PAIRS || SMEM_RECORDS, "paired tiles write their records into SMEM (stmatrix)");
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
  u32 kr_pairs[C / 2]; // KEY_MAJOR: Kr^T's rows 2j, 2j + 1 of the thread's key (to the krt tile once ki is dead)
  if constexpr (KEY_MAJOR) {
    // rows two at a time, each operand as one paired conversion (the same
    // rounding per element), the key's 8 rows of a half in one 16-byte store
    // per operand (KeyMajorRows16)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 hi[3][4];
      u32 lo[3][4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = 8 * h + 2 * j;
        const float decay0 = fast_exp2(G[r]);
        const float decay1 = fast_exp2(G[r + 1]);
        const float growth0 = fast_exp2(-G[r]);
        const float growth1 = fast_exp2(-G[r + 1]);
        const float q0 = NORMS_FIRST ? q[r] : q[r] * rnorm[r];
        const float q1 = NORMS_FIRST ? q[r + 1] : q[r + 1] * rnorm[r + 1];
        const float k0 = NORMS_FIRST ? k[r] : k[r] * rnorm[C + r];
        const float k1 = NORMS_FIRST ? k[r + 1] : k[r + 1] * rnorm[C + r + 1];
        const float x[3][2] = {{k0 * decay0, k1 * decay1},
                               {p.scale * q0 * decay0, p.scale * q1 * decay1},
                               {k0 * growth0, k1 * growth1}};
#pragma unroll
        for (int o = 0; o < 3; ++o) {
          const u32 two = pack_bf16x2(x[o][0], x[o][1]);
          hi[o][j] = two;
          lo[o][j] = pack_bf16x2(x[o][0] - __uint_as_float(two << 16), x[o][1] - __uint_as_float(two & 0xffff0000u));
        }
        const float gamma = PAIRS && r < HALF ? gamma_first : gamma_total; // rows r, r + 1: one segment
        kr_pairs[4 * h + j] = pack_bf16x2(x[2][0] * gamma, x[2][1] * gamma); // k^ 2^(G_tot - G)
      }
      const int at = KeyMajorRows16::half_at(ch, h);
      *reinterpret_cast<uint4*>(kd_s + at) = make_uint4(hi[0][0], hi[0][1], hi[0][2], hi[0][3]);
      *reinterpret_cast<uint4*>(qd_s + at) = make_uint4(hi[1][0], hi[1][1], hi[1][2], hi[1][3]);
      *reinterpret_cast<uint4*>(ki_s + at) = make_uint4(hi[2][0], hi[2][1], hi[2][2], hi[2][3]);
      *reinterpret_cast<uint4*>(kd_lo_s + at) = make_uint4(lo[0][0], lo[0][1], lo[0][2], lo[0][3]);
      *reinterpret_cast<uint4*>(qd_lo_s + at) = make_uint4(lo[1][0], lo[1][1], lo[1][2], lo[1][3]);
      *reinterpret_cast<uint4*>(ki_lo_s + at) = make_uint4(lo[2][0], lo[2][1], lo[2][2], lo[2][3]);
    }
  } else {
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

  // write: Kd and Qd (and Kr) to the record by warps 2 and 3 while warps 0
  // and 1 form L and Mqk. Key-major tiles, per part (8 keys): one ldmatrix
  // .trans of the part's four 8x8 blocks (Kd, Qd x rows 0-7, 8-15) gives
  // thread (g, t) keys 2t, 2t + 1 of row g, the rows of the record's core
  // matrices, stored by one stmatrix where the record lies in SMEM (a fused
  // kernel's ring slot), else by 4-byte stores (a warp's store: a core
  // matrix, 128 contiguous bytes); a paired tile's rows 8-15 go to rows 0-7 of
  // its second record, zeros to rows 8-15 of both (paired tiles are a fused
  // kernel's, in SMEM). Row layouts: 16-byte row segments, whole rows per pass.
  if (warp >= 2) {
    constexpr int parts = 2 * D / 16;
    constexpr int writers = Team::threads() - 64;
    if constexpr (KEY_MAJOR) {
      static_assert(writers % 32 == 0, "whole warps of writers");
      constexpr int part_step = 32 * 8; // 8 keys of the key-major tile
      const int record_part_step = record_kd_part(0, 1) - record_kd_part(0, 0);
      const int m = lane >> 3; // the matrix this lane addresses
      const int half = m & 1;
      const bool qd_tile = (m >> 1) != 0;
      const u32 src = smem_address((qd_tile ? qd_s : kd_s) + KeyMajorRows16::half_at(lane & 7, half));
      if constexpr (SMEM_RECORDS) {
        u8* const own = paired && half == 1 ? second.record : record;
        const int row = paired ? (lane & 7) : 8 * half + (lane & 7);
        const u32 dst = smem_address(own + (qd_tile ? record_qd_part(row, 0) : record_kd_part(row, 0)));
        const u32 zero_dst = smem_address(own + (qd_tile ? record_qd_part(row + HALF, 0) : record_kd_part(row + HALF, 0)));
#pragma unroll
        for (int part = warp - 2; part < parts; part += writers / 32) {
          u32 v[4];
          ldmatrix_x4_trans_shared(v, src + part_step * part);
          stmatrix_x4_shared(dst + record_part_step * part, v);
          if (paired) {
            const u32 zeros[4] = {0u, 0u, 0u, 0u};
            stmatrix_x4_shared(zero_dst + record_part_step * part, zeros);
          }
        }
      } else {
        const int g = lane >> 2;
        const int t = lane & 3;
#pragma unroll
        for (int part = warp - 2; part < parts; part += writers / 32) {
          u32 v[4];
          ldmatrix_x4_trans_shared(v, src + part_step * part);
#pragma unroll
          for (int mm = 0; mm < 4; ++mm) {
            const int row = 8 * (mm & 1) + g;
            const int at = (mm >> 1 ? record_qd_part(row, part) : record_kd_part(row, part)) + 4 * t;
            *reinterpret_cast<u32*>(record + at) = v[mm];
          }
        }
      }
    } else {
      constexpr int tiles = 3;
      static_assert(writers % parts == 0 && C % (writers / parts) == 0, "whole rows per pass");
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
    using OperandRows = typename Select<KEY_MAJOR, KeyMajorRows16, PaddedRows<P::KD_PITCH>>::type;
    warp_product_16x16<OperandRows, true>(warp == 0 ? kd_s : qd_s, warp == 0 ? kd_lo_s : qd_lo_s, ki_s, ki_lo_s, prod);
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
    *reinterpret_cast<uint4*>(krt + 2 * ch * krt_pitch()) = make_uint4(kr_pairs[0], kr_pairs[1], kr_pairs[2], kr_pairs[3]);
    *reinterpret_cast<uint4*>(krt + 2 * ch * krt_pitch() + 16) = make_uint4(kr_pairs[4], kr_pairs[5], kr_pairs[6], kr_pairs[7]);
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
