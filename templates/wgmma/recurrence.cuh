// kdajit fragment: wgmma/recurrence
// The serial chunk-to-chunk recurrence of one (sequence, head) on sm_90a
// (spec section 2.3) with warpgroup MMAs: a CTA owns M_TILE value rows
// [m0, m0 + M_TILE) (M_TILE / 64 warpgroups; M_TILE 64: two CTAs per pair);
// warp w holds value rows m0 + 16 w .. +15 of the fp32 state in registers,
// acc[0][nt] for key columns 8 nt .. 8 nt + 7 (nt < 16), the layout of
// wgmma's m64nN accumulator and, once packed to bf16, of its register A
// operand.
// Warp roles: MMA_WARPS warps hold the state; a producer warpgroup (4 warps)
// hands its registers to the MMA warpgroups with setmaxnreg and keeps them fed,
// one job per warp:
//   warp 0, lane 0: the records, into a STAGES-slot ring: per chunk one bulk
//           copy of the whole record, counted on the slot's `full` mbarrier;
//   warp 1: the chunk's V rows (the CTA's M_TILE value columns) into the same
//           slot, 16-byte cp.asyncs whose completion every lane adds to `full`
//           (cp.async.mbarrier.arrive.noinc: `full` expects 1 + 32 arrivals);
//   warp 2: the outputs, from a ring of SMEM tiles (one per out_full) the MMA
//           warps fill (`out_full`, one arrival per MMA thread) to global
//           memory, then frees the tile (`out_empty`, one per lane);
//   warp 3: the checkpoint rows (plans with kda_plan::CHECKPOINTS): the MMA
//           warps stage the state before a row's chunk in the checkpoint tile
//           (`checkpoint_full`, one arrival per MMA thread); it stores the
//           tile to the row in global memory, 16-byte loads and stores, and
//           frees it (`checkpoint_empty`, one arrival per lane);
// warps 0 and 1 refill a slot once every MMA warp has arrived on its `empty`
// mbarrier. The MMA warps issue no global loads or stores in the chunk loop
// (when they loaded their V columns and stored their output rows themselves,
// those address computations and 16-byte copies took 34 % of their time,
// longer than the projections they were meant to hide behind).
// The MMA warps never wait for each other beyond their warpgroup's wgmma: no
// CTA barrier inside the chunk loop.
// Per chunk (C = 16 or 32 tokens) and MMA warp:
//   project: P^T = S Kd^T, O0^T = S Qd^T     2 x 8 x m64nCk16 (K = 128)
//            from the packed bf16 state; then S diag(gamma) (decaying while
//            they run made ptxas inject waits: the state is the previous
//            update's accumulator)
//   residual: Delta^T = beta (V - P)^T; rows past the sequence end give 0
//            without a select: their beta is 0 in the record and their V
//            zero-filled, and P is finite
//   update:  [S | O^T] = [S diag(gamma) | O0^T] + Delta^T UPD^T
//            (UPD = T^T [Kr | Mqk^T] from the prepare kernel: the solve
//            U^T = Delta^T T^T is folded in, one dependent wgmma less per chunk)
//                                            C / 16 x (m64n128k16 + m64nCk16)
// O0^T lives in one accumulator from the projection to the update: copying
// it between accumulators (from an m64n32k16 [P^T | O0^T] into the tail of
// an m64n144k16 [S | O^T], or into a separate one) made ptxas serialize every
// wgmma (C7511, "insufficient register resources for the wgmma pipeline").
//   release: arrive on the slot's `empty` barrier
//   checkpoint (when a row is due before chunk c): the state's bf16 copy
//            into the warp's 16 rows of the checkpoint tile (stmatrix), while
//            the projections run; storing it to global memory from the
//            registers (8-byte stores, whole sectors) cost the H16 workloads
//            about 1 us of a CTA's chain per row
//   stage:   O (bf16) into the warp's 16 columns of an output tile
//            (transposing stmatrix), then arrive on its `out_full`; chunk c's
//            output is staged while chunk c + 1's projections run (off the
//            serial chain), the last one after the loop
// When the prepare kernel runs beside this one (schedule `prepare_overlap`),
// the producer waits for each record's ready flag before copying it
// (common/ready_flags); otherwise the flags are absent and it never waits.
// Uses kda_plan::recurrence::* (RECORD, V, OUT, FULL, EMPTY, OUT_FULL, OUT_EMPTY, CHECKPOINT,
// CHECKPOINT_FULL, CHECKPOINT_EMPTY (sized 0 without checkpoints), MMA_*, PRODUCER_*)
// and kda_plan::WS_*.
namespace kda {
namespace frag {

// The producer: the record of chunk `c` into ring slot `slot`, one bulk copy.
__device__ __forceinline__ void issue_record_copy(const kda_plan::KdaParams& p, u8* slot, u64* full,
                                                  const SequenceSpan& seq, int h, i64 c) {
  namespace R = kda_plan::recurrence;
  const u8* record =
      p.workspace + ((seq.first_chunk + c) * p.heads + h) * static_cast<i64>(kda_plan::WS_RECORD_BYTES);
  mbarrier_arrive_expect_tx(full, kda_plan::WS_RECORD_BYTES);
  bulk_copy_to_shared(slot + R::RECORD_OFFSET, record, kda_plan::WS_RECORD_BYTES, full);
}

// 16-byte pieces of one row's M_TILE value columns, and the rows one warp
// instruction covers with them (V loads, output stores).
constexpr int k_row_pieces = kda_plan::M_TILE / 8;
constexpr int k_rows_per_pass = 32 / k_row_pieces;
static_assert(32 % k_row_pieces == 0 && kda_plan::CHUNK_SIZE % k_rows_per_pass == 0,
              "whole rows per warp instruction, whole passes per chunk");

// A warp's walk over chunk c's rows, value columns m0 .. m0 + M_TILE (V loads,
// output stores): the lane takes 16-byte piece lane % k_row_pieces of rows
// lane / k_row_pieces + k_rows_per_pass i.
struct ChunkRowWalk {
  int col;        // the lane's first value column
  int row;        // the lane's first chunk row
  int valid;      // the chunk's rows inside the sequence
  i64 at;         // byte offset of (the lane's first row, head h, col) in v or out
  i64 pass_bytes; // from one of the lane's rows to its next
};

__device__ __forceinline__ ChunkRowWalk chunk_row_walk(const kda_plan::KdaParams& p, const SequenceSpan& seq, int h,
                                                       int m0, i64 c) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  const int lane = threadIdx.x & 31;
  ChunkRowWalk w;
  w.col = m0 + 8 * (lane % k_row_pieces);
  w.row = lane / k_row_pieces;
  w.valid = static_cast<int>(min(static_cast<i64>(C), seq.length - c * C));
  w.at = ((seq.start + c * C + w.row) * p.heads + h) * D * 2 + 2 * w.col;
  w.pass_bytes = k_rows_per_pass * p.heads * D * 2;
  return w;
}

// The V warp: chunk c's V rows into the slot's V tile, rows past the sequence
// end zero-filled; every lane's copies arrive on the slot's `full` barrier
// when they land.
__device__ __forceinline__ void load_v_rows(const kda_plan::KdaParams& p, u8* slot, u64* full, const SequenceSpan& seq,
                                            int h, int m0, i64 c) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  const ChunkRowWalk w = chunk_row_walk(p, seq, h, m0, c);
  const u8* const v = reinterpret_cast<const u8*>(p.v);
  const u8* src = v + w.at;
  u8* dst = slot + R::V_OFFSET + 2 * (w.row * R::V_PITCH + w.col);
#pragma unroll
  for (int r = w.row; r < C; r += k_rows_per_pass) {
    cp_async_16(dst, r < w.valid ? src : v, r < w.valid);
    src += w.pass_bytes;
    dst += 2 * k_rows_per_pass * R::V_PITCH;
  }
  cp_async_arrive_noinc(full);
}

// The output warp: chunk c's valid rows from an output tile to the output, one
// 16-byte load and store per piece.
__device__ __forceinline__ void store_output_rows(const kda_plan::KdaParams& p, const u8* tile, const SequenceSpan& seq,
                                                  int h, int m0, i64 c) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  const ChunkRowWalk w = chunk_row_walk(p, seq, h, m0, c);
  u8* dst = reinterpret_cast<u8*>(p.out) + w.at;
  const u8* src = tile + 2 * (w.row * R::OUT_PITCH + w.col);
#pragma unroll 4 // four 16-byte pieces in flight: the warp has 40 registers
  for (int r = w.row; r < C; r += k_rows_per_pass) {
    if (r < w.valid) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    }
    dst += w.pass_bytes;
    src += 2 * k_rows_per_pass * R::OUT_PITCH;
  }
}

// An MMA warp: its O^T fragment (value rows v_row .. v_row + 15, chunk rows c)
// into its 16 columns of an output tile O[c][v] by transposing stmatrix.x4
// (8x8 blocks (value half vb, chunk rows 8 nc ..)), then one arrival per lane
// on the tile's `out_full`.
__device__ __forceinline__ void stage_warp_output(u8* tile, u64* out_full, const float (&o)[kda_plan::CHUNK_SIZE / 8][4],
                                                  int v_row) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  static_assert(C % 16 == 0, "pairs of 8-row chunk blocks per stmatrix.x4");
  const int lane = threadIdx.x & 31;
  // matrix j of an x4: chunk block nc = 2 q + j / 2, value half vb = j % 2
  const int j = lane >> 3;
  const int i = lane & 7;
#pragma unroll
  for (int q = 0; q < C / 16; ++q) {
    const u32 r[4] = {pack_bf16x2(o[2 * q][0], o[2 * q][1]), pack_bf16x2(o[2 * q][2], o[2 * q][3]),
                      pack_bf16x2(o[2 * q + 1][0], o[2 * q + 1][1]), pack_bf16x2(o[2 * q + 1][2], o[2 * q + 1][3])};
    const int row = 8 * (2 * q + (j >> 1)) + i; // chunk row
    stmatrix_x4_trans(tile + 2 * (row * R::OUT_PITCH + v_row + 8 * (j & 1)), r);
  }
  mbarrier_arrive(out_full);
}

// The checkpoint tile: two TMA boxes of the CTA's M_TILE value rows, keys
// 0 .. 63 and 64 .. 127, each row 128 bytes with the 128-byte swizzle
// (16-byte piece q of row r at piece q ^ (r mod 8)); box 0 first.
constexpr int k_checkpoint_box_bytes = kda_plan::M_TILE * 128;

// An MMA warp: the state before the chunk of checkpoint row k, its bf16 copy
// as the projections' A fragments (value rows `row0` .. row0 + 15 of the
// CTA's M_TILE, key columns 16 ks .. 16 ks + 15 in a[ks]), into its rows of
// the swizzled checkpoint tile with stmatrix.x4 (matrix j: rows + 8 (j % 2),
// columns + 8 (j / 2); the swizzle puts a matrix's 8 rows in distinct banks),
// once the TMA stores of row k - 1 have read the tile; then each lane fences
// its writes for the async proxy and arrives on `full`.
__device__ __forceinline__ void stage_checkpoint(u8* tile, u64* full, u64* empty, int k, int row0,
                                                 const u32 (&a)[8][4]) {
  const int lane = threadIdx.x & 31;
  const int j = lane >> 3;
  const int i = lane & 7; // = row mod 8: row0 is a multiple of 16
  if (k > 0) {
    mbarrier_wait(empty, static_cast<u32>((k - 1) & 1));
  }
  u8* const row = tile + (row0 + 8 * (j & 1) + i) * 128;
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    const int piece = 2 * (ks & 3) + (j >> 1); // keys 16 ks + 8 (j / 2) in box ks / 4
    stmatrix_x4(row + (ks >> 2) * k_checkpoint_box_bytes + 16 * (piece ^ i), a[ks]);
  }
  fence_async_shared();
  mbarrier_arrive(full);
}

// Producer warp 3, lane 0: each checkpoint row of (sequence n, head h), the
// CTA's value rows m0 .. m0 + M_TILE, from the checkpoint tile once the MMA
// warps have staged it: two TMA tensor stores (matrix (checkpoint_starts[n]
// + k) H + h of the map tma_checkpoints), then, once they have read the
// tile, it goes back to the MMA warps. (Earlier versions: 16-byte loads and
// stores by the whole warp, a warp's 64 per row, ≈ 0.33 µs per row on an H16
// CTA's chain; one 256-byte bulk copy per value row made the MMA warps wait
// for the tile: H16 fixed 32768 2.71 ms against 1.16.) A template so that
// plans without checkpoints, whose ABI has no tma_checkpoints, never
// instantiate it.
template <class Params>
__device__ __forceinline__ void produce_checkpoints(const Params& p, const u8* tile, u64* full, u64* empty, int n, int h,
                                                    int m0, i64 chunks) {
  int k = 0;
  for (i64 c = 0; c < chunks; c += p.checkpoint_chunks, ++k) {
    mbarrier_wait(full, static_cast<u32>(k & 1));
    const int matrix = static_cast<int>((p.checkpoint_starts[n] + k) * p.heads + h);
    tma_store_box_3d(tile, p.tma_checkpoints, 0, m0, matrix);
    tma_store_box_3d(tile + k_checkpoint_box_bytes, p.tma_checkpoints, 64, m0, matrix);
    bulk_stores_wait_read();
    mbarrier_arrive(empty);
  }
}

// Producer warp 0 (lane 0): the records, each once its slot is free and (a
// prepare kernel running beside this one) once it is ready. With a
// programmatic launch the CTA may start while the prepare kernel finishes: this
// is the only thread that reads what that kernel writes, and it waits for it
// first (the others read inputs, write outputs the prepare kernel never
// touches, and read records only from the slots).
__device__ __forceinline__ void produce_records(const kda_plan::KdaParams& p, u8* smem, u64* full, u64* empty,
                                                const SequenceSpan& seq, int h, i64 chunks) {
  namespace R = kda_plan::recurrence;
  constexpr int S = R::STAGES;
  wait_prior_grid();
  for (i64 c = 0; c < chunks; ++c) {
    const int slot = static_cast<int>(c % S);
    if (c >= S) {
      mbarrier_wait(empty + slot, static_cast<u32>((c / S - 1) & 1)); // chunk c - S has left the slot
    }
    wait_record_ready(p, (seq.first_chunk + c) * p.heads + h);
    issue_record_copy(p, smem + slot * R::STAGE_BYTES, full + slot, seq, h, c);
  }
}

// Producer warp 1 (every lane): the V rows, each chunk's once its slot is free.
__device__ __forceinline__ void produce_v(const kda_plan::KdaParams& p, u8* smem, u64* full, u64* empty,
                                          const SequenceSpan& seq, int h, int m0, i64 chunks) {
  namespace R = kda_plan::recurrence;
  constexpr int S = R::STAGES;
  for (i64 c = 0; c < chunks; ++c) {
    const int slot = static_cast<int>(c % S);
    if (c >= S) {
      mbarrier_wait(empty + slot, static_cast<u32>((c / S - 1) & 1));
    }
    load_v_rows(p, smem + slot * R::STAGE_BYTES, full + slot, seq, h, m0, c);
  }
  cp_async_wait_all();
}

// Producer warp 2 (every lane): each chunk's output tile to the output once the
// MMA warps have staged it, then the tile back to them.
__device__ __forceinline__ void produce_outputs(const kda_plan::KdaParams& p, const u8* tiles, u64* out_full,
                                                u64* out_empty, const SequenceSpan& seq, int h, int m0, i64 chunks) {
  namespace R = kda_plan::recurrence;
  constexpr int T = R::OUT_FULL_BYTES / 8; // output tiles
  for (i64 c = 0; c < chunks; ++c) {
    const int b = static_cast<int>(c % T);
    mbarrier_wait(out_full + b, static_cast<u32>((c / T) & 1));
    store_output_rows(p, tiles + b * (R::OUT_BYTES / T), seq, h, m0, c);
    mbarrier_arrive(out_empty + b); // this lane's loads of the tile have returned: its stores used them
  }
}

// The chunk rings in SMEM: the record slots' full and empty mbarriers, the
// output tiles and their two mbarriers each, the checkpoint tile and its two.
struct ChunkRings {
  u64* full;
  u64* empty;
  u64* out_full;
  u64* out_empty;
  u8* out_tiles;
  u8* checkpoint_tile;
  u64* checkpoint_full;
  u64* checkpoint_empty;
};

__device__ __forceinline__ ChunkRings chunk_rings(u8* smem) {
  namespace R = kda_plan::recurrence;
  return {reinterpret_cast<u64*>(smem + R::FULL_OFFSET),
          reinterpret_cast<u64*>(smem + R::EMPTY_OFFSET),
          reinterpret_cast<u64*>(smem + R::OUT_FULL_OFFSET),
          reinterpret_cast<u64*>(smem + R::OUT_EMPTY_OFFSET),
          smem + R::OUT_OFFSET,
          smem + R::CHECKPOINT_OFFSET,
          reinterpret_cast<u64*>(smem + R::CHECKPOINT_FULL_OFFSET),
          reinterpret_cast<u64*>(smem + R::CHECKPOINT_EMPTY_OFFSET)};
}

// Thread 0, before the CTA-wide barrier after which the roles only meet at
// mbarriers (the caller fences the inits): a slot's full barrier counts one
// arrival by whoever provides its record (the record warp's expect_tx, or a
// fused kernel's prepare warp) and the V warp's lanes; checkpoint_empty the
// storing lane, once its stores have read the tile.
__device__ __forceinline__ void init_chunk_rings(const ChunkRings& r) {
  namespace R = kda_plan::recurrence;
  for (int s = 0; s < R::STAGES; ++s) {
    mbarrier_init(r.full + s, 1 + 32);
    mbarrier_init(r.empty + s, R::MMA_WARPS);
  }
  for (int b = 0; b < R::OUT_FULL_BYTES / 8; ++b) {
    mbarrier_init(r.out_full + b, 32 * R::MMA_WARPS);
    mbarrier_init(r.out_empty + b, 32);
  }
  if (kda_plan::CHECKPOINTS) {
    mbarrier_init(r.checkpoint_full, 32 * R::MMA_WARPS);
    mbarrier_init(r.checkpoint_empty, 1);
  }
}

// A CTA's position in its rings before a (sequence, head)'s chunks: chunks
// consumed (record slots, output tiles) and checkpoint rows staged
// (checkpoint tile); {0, 0} for a CTA of one (sequence, head), the CTA's
// items so far on the persistent grid.
struct RingPosition {
  i64 chunk;
  int row;
};

// An MMA thread's place in its fragments: its warp and lane, the thread's
// column pair t, the row and column its ldmatrix addresses start from, and
// the warp's first value row (of the M tile at m0).
struct MmaLane {
  int warp;
  int lane;
  int t;
  int lane_row;
  int lane_col8;
  int v_row;
};

__device__ __forceinline__ MmaLane mma_lane(int m0) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  return {warp, lane, lane & 3, 8 * (lane >> 4) + (lane & 7) /* ldmatrix: rows 8 (j / 2) + r */,
          8 * ((lane >> 3) & 1) /* columns 8 (j % 2) */, m0 + 16 * warp};
}

// An MMA warp: the chunks of one (sequence, head) on the fp32 state in `acc`
// (loaded before, stored after by the caller), from ring position `at`: per
// chunk project, residual, update, release, and meanwhile the checkpoint row
// and the chunk before's output (the header above says each part); the last
// chunk's output staged at the end. Returns the checkpoint rows staged.
__device__ __forceinline__ int mma_chunks(const kda_plan::KdaParams& p, u8* smem, float (&acc)[1][16][4],
                                          const MmaLane& l, i64 chunks, RingPosition at) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int S = R::STAGES;
  constexpr int NT = C / 8;  // 8-column tiles of the chunk dimension
  constexpr int KS = C / 16; // K steps over the chunk rows
  constexpr int T = R::OUT_FULL_BYTES / 8; // output tiles
  const int warp = l.warp;
  const int lane = l.lane;
  const int t = l.t;
  const int lane_row = l.lane_row;
  const int lane_col8 = l.lane_col8;
  const int v_row = l.v_row;
  const ChunkRings rings = chunk_rings(smem);

  float o_prev[NT][4]; // chunk c - 1's O^T: staged while chunk c's projections run
  // chunk c's output into tile (at.chunk + c) % T, once the output warp has stored the chunk T before it
  auto stage_output = [&](i64 c) {
    const i64 ring = at.chunk + c;
    const int b = static_cast<int>(ring % T);
    if (ring >= T) {
      mbarrier_wait(rings.out_empty + b, static_cast<u32>((ring / T - 1) & 1));
    }
    stage_warp_output(rings.out_tiles + b * (R::OUT_BYTES / T), rings.out_full + b, o_prev, v_row);
  };

  int checkpoint_due = 0;  // the chunk the next checkpoint row is due before
  int checkpoint_rows = 0; // rows staged so far
  for (i64 c = 0; c < chunks; ++c) {
    const i64 ring = at.chunk + c;
    const int slot_index = static_cast<int>(ring % S);
    const u32 parity = static_cast<u32>((ring / S) & 1);
    u8* const slot = smem + slot_index * R::STAGE_BYTES;
    mbarrier_wait(rings.full + slot_index, parity);
    const u8* const record = slot + R::RECORD_OFFSET;
    // project: P^T = S Kd^T, O0^T = S Qd^T from the state's bf16 copy
    u32 sa[8][4];
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      pack_a(acc[0][2 * ks], acc[0][2 * ks + 1], sa[ks]);
    }
    // decay: S diag(gamma), once the projections have the state's bf16 copy
    const float* const gamma = reinterpret_cast<const float*>(record + kda_plan::WS_GAMMA_OFFSET);
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      const float2 gm = *reinterpret_cast<const float2*>(gamma + 8 * nt + 2 * t);
      acc[0][nt][0] *= gm.x;
      acc[0][nt][1] *= gm.y;
      acc[0][nt][2] *= gm.x;
      acc[0][nt][3] *= gm.y;
    }
    float po[NT][4]; // P^T
    float o[NT][4];  // O0^T, then O^T
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        po[j][e] = 0.0f;
        o[j][e] = 0.0f;
      }
    }
    const u64 kq = descriptor_at(kda_plan::WS_KQ_DESC, record + kda_plan::WS_KQ_OFFSET);
    constexpr int k_qd_rows = C / 8 * kda_plan::WS_KQ_SBO; // Qd: N rows C .. 2C - 1
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const int k_bytes = 2 * ks * kda_plan::WS_KQ_LBO; // keys 16 ks .. 16 ks + 15
      wgmma_m64k16_rs(po, sa[ks], kq + (k_bytes >> 4), ks > 0 ? 1 : 0);
      wgmma_m64k16_rs(o, sa[ks], kq + ((k_bytes + k_qd_rows) >> 4), ks > 0 ? 1 : 0);
    }
    wgmma_commit();
    // off the chain while the projections are in flight: the state before
    // chunk c as a checkpoint row, from its bf16 copy (the projections only
    // read it), and chunk c - 1's output (o_prev is no wgmma operand)
    if (kda_plan::CHECKPOINTS && static_cast<int>(c) == checkpoint_due) {
      stage_checkpoint(rings.checkpoint_tile, rings.checkpoint_full, rings.checkpoint_empty,
                       at.row + checkpoint_rows++, 16 * warp, sa);
      checkpoint_due += p.checkpoint_chunks;
    }
    if (c > 0) {
      stage_output(c - 1);
    }
    wgmma_wait<0>();

    // residual: Delta^T[v][c] = beta_c (V[c][v] - P^T[v][c]) (beta_c = 0 past the end)
    const float* const beta = reinterpret_cast<const float*>(record + kda_plan::WS_BETA_OFFSET);
    u32 da[KS][4]; // Delta^T as A fragments, K step kc = chunk rows 16 kc ..
#pragma unroll
    for (int kc = 0; kc < KS; ++kc) {
      u32 vt[4];
      ldmatrix_x4_trans(vt, slot + R::V_OFFSET + 2 * ((16 * kc + lane_row) * R::V_PITCH + v_row + lane_col8));
      float dl[2][4];
#pragma unroll
      for (int nc = 0; nc < 2; ++nc) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const u32 pair = vt[2 * nc + half];
          const int col = 16 * kc + 8 * nc + 2 * t;
          const float d0 =
              beta[col] * (bf16_bits_to_float(static_cast<u16>(pair & 0xffffu)) - po[2 * kc + nc][2 * half]);
          const float d1 =
              beta[col + 1] * (bf16_bits_to_float(static_cast<u16>(pair >> 16)) - po[2 * kc + nc][2 * half + 1]);
          dl[nc][2 * half] = d0;
          dl[nc][2 * half + 1] = d1;
        }
      }
      pack_a(dl[0], dl[1], da[kc]);
    }

    // update: [S | O^T] += Delta^T UPD^T (the solve is folded into UPD:
    // U^T [Kr^T; Mqk]^T = Delta^T T^T [Kr^T; Mqk]^T), as N 128 (state) and N C
    // (output), one K step of 16 chunk rows at a time
    const u64 upd = descriptor_at(kda_plan::WS_UPD_DESC, record + kda_plan::WS_UPD_OFFSET);
    constexpr int k_output_rows = D / 8 * kda_plan::WS_UPD_SBO; // N rows D .. D + C - 1
    wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < KS; ++kc) {
      const int k_bytes = 2 * kc * kda_plan::WS_UPD_LBO;
      wgmma_m64n128k16_rs(acc[0], da[kc], upd + (k_bytes >> 4), 1);
      wgmma_m64k16_rs(o, da[kc], upd + ((k_bytes + k_output_rows) >> 4), 1);
    }
    wgmma_commit();
    wgmma_wait<0>();

    if (lane == 0) {
      mbarrier_arrive(rings.empty + slot_index); // this warp has read the slot (V, record) for the last time
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        o_prev[j][e] = o[j][e];
      }
    }
  }
  if (chunks > 0) {
    stage_output(chunks - 1);
  }
  return checkpoint_rows;
}

__device__ __forceinline__ void recurrence(const kda_plan::KdaParams& p) {
  namespace R = kda_plan::recurrence;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int S = R::STAGES;
  static_assert((C == 16 || C == 32) && D == 128, "wgmma recurrence: chunk 16 or 32, head dim 128");
  static_assert(rows_per_warp() == 16 && kda_plan::M_TILE % 64 == 0, "warpgroups of 64 value rows, 16 per warp");
  static_assert(R::MMA_FIRST_WARP == 0 && R::PRODUCER_FIRST_WARP == R::MMA_WARPS, "MMA warps first, then the producer");
  static_assert(R::MMA_REGISTERS > 0 && R::PRODUCER_REGISTERS > 0 && R::PRODUCER_WARPS == 4,
                "a producer warpgroup (records, V, outputs) giving its registers to the MMA warpgroups (setmaxnreg)");
  static_assert(R::RECORD_BYTES == kda_plan::WS_RECORD_BYTES, "one record per ring slot");
  static_assert(R::FULL_BYTES >= 8 * S && R::EMPTY_BYTES >= 8 * S, "one full and one empty mbarrier per ring slot");
  constexpr int T = R::OUT_FULL_BYTES / 8; // output tiles
  static_assert(T >= 1 && R::OUT_EMPTY_BYTES == R::OUT_FULL_BYTES, "one out_full and one out_empty mbarrier per tile");
  static_assert(R::OUT_BYTES == T * C * R::OUT_PITCH * 2, "OUT_FULL_BYTES / 8 output tiles of C rows");
  static_assert(R::STAGE_BYTES % 16 == 0 && R::V_PITCH * 2 % 16 == 0 && R::OUT_PITCH * 2 % 16 == 0,
                "bulk copy destinations and output rows 16-byte aligned");
  static_assert(!kda_plan::CHECKPOINTS ||
                    (R::CHECKPOINT_PITCH == 64 && R::CHECKPOINT_OFFSET % 1024 == 0 &&
                     R::CHECKPOINT_BYTES >= 2 * k_checkpoint_box_bytes && R::CHECKPOINT_FULL_BYTES >= 8 &&
                     R::CHECKPOINT_EMPTY_BYTES >= 8),
                "checkpoints: a 1024-byte aligned tile of two TMA boxes [M_TILE][64] (128-byte rows, the "
                "128-byte swizzle) and its two mbarriers");
  extern __shared__ __align__(1024) u8 smem[]; // the checkpoint tile's swizzle needs 1024-byte aligned boxes
  const auto [n, h, m0, seq] = recurrence_work(p);
  const i64 chunks = chunks_of(seq.length);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const MmaLane mma = mma_lane(m0);

  const ChunkRings rings = chunk_rings(smem);
  if (threadIdx.x == 0) {
    init_chunk_rings(rings);
    mbarrier_init_fence();
  }
  __syncthreads(); // the last CTA-wide barrier: from here on the roles only meet at mbarriers
  if (warp >= R::PRODUCER_FIRST_WARP) {
    setmaxnreg_dec<R::PRODUCER_REGISTERS>(); // the whole producer warpgroup
    const int job = warp - R::PRODUCER_FIRST_WARP;
    if (job == 0 && lane == 0) {
      produce_records(p, smem, rings.full, rings.empty, seq, h, chunks);
    } else if (job == 1) {
      produce_v(p, smem, rings.full, rings.empty, seq, h, m0, chunks);
    } else if (job == 2) {
      produce_outputs(p, rings.out_tiles, rings.out_full, rings.out_empty, seq, h, m0, chunks);
    } else if (job == 3 && lane == 0) {
      if constexpr (kda_plan::CHECKPOINTS != 0) {
        produce_checkpoints(p, rings.checkpoint_tile, rings.checkpoint_full, rings.checkpoint_empty, n, h, m0,
                            chunks);
      }
    }
    return;
  }
  setmaxnreg_inc<R::MMA_REGISTERS>();

  float acc[1][16][4];
  load_state(p, n, h, m0, acc);
  mma_chunks(p, smem, acc, mma, chunks, RingPosition{0, 0});
  if (p.state_out != nullptr) {
    store_state(p, n, h, m0, acc);
  }
}

} // namespace frag
} // namespace kda
