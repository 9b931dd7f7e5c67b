// kdajit fragment: wgmma/fused_persistent
// The chunk-16 wgmma design with its prepare inside the persistent CTA
// (schedule sm90_wgmma_c16_fused): the persistent recurrence
// (wgmma/recurrence_persistent: MMA warps, the state, V, output and
// checkpoint producers, the ring) with the records formed in the ring's
// slots instead of copied from a workspace a prepare kernel wrote. For calls
// of many short sequences the records' round trip through DRAM (written by
// the prepare kernel, read back by the recurrence) and the prepare kernel's
// own time are most of what is left beside the state's bytes.
//
// The prepare role: one group of four warps (a warpgroup), one thread per
// key column, prepares the CTA's chunks in the order the MMA warps take them
// (items in order, chunks in order) with the prepare kernel's own step
// (common/prepare_step: prepare_one_chunk, its team meeting at named barrier
// 1 instead of the CTA barrier; the fold of wgmma/fold_c16), so the records
// have the prepare kernel's bits. It takes them as tiles: one chunk, or two
// consecutive work items of one chunk of at most 8 rows each, prepared
// together as rows 0-7 and 8-15 of one 16-row tile and written as two
// records (the step's paired tile), which halves the chains of calls of many
// tiny sequences. Per tile: wait for its scratch set, wait for its chunks'
// ring slots to be free, prepare it into their records, fence the writes for
// the async proxy (the MMA warps' wgmma reads them) and arrive on the slots'
// full barriers in place of the records' bulk copies, and free the set.
// The producer warpgroup's first warp, which copies records in the
// decomposed design, walks the CTA's items here (looked up two items ahead)
// and hands the group each tile in one of two scratch sets beside the ring
// (the raw tiles and the operands in their bytes: the prepare step's stage,
// wgmma/fused_persistent_names; a descriptor with the tile's ring position,
// valid rows, exp(A_log), dt_bias and sigmoid(beta)): the prepare chain holds
// no lookup and no global load. The ring's slots hold only the records and
// V, so four fit: the group forms a tile's two records while the MMA warps
// read the tile before. The second producer warp loads the states' and the
// V rows.
// Uses kda_plan::main (= kda_plan::recurrence; kda_plan::prepare its
// scratch-set view, wgmma/fused_persistent_names), common/prepare_step and what
// wgmma/recurrence_persistent uses.
namespace kda {
namespace frag {

// One chunk of the CTA's sequence of chunks: the token row of its first row,
// its ring position, its valid rows and its head.
struct PrepareCursor {
  i64 row;
  i64 at;
  int valid;
  int h;
  bool exists;
};

// A work item as the walk keeps it: its sequence's first token and length,
// its head.
struct WalkItem {
  i64 start;
  i64 length;
  int h;
};

// The producer warps' out-of-line lookup (the walk looks items up at four
// places, each a whole packed lookup when inlined).
__device__ __forceinline__ WalkItem walk_item(const kda_plan::KdaParams& p, i64 item) {
  const RecurrenceWork w = persistent_work_out_of_line(p, item);
  return WalkItem{w.seq.start, w.seq.length, w.h};
}

// The walk over the CTA's items in the MMA warps' order (items in order,
// chunks in order): the item of the last chunk taken, its first ring
// position, its chunks and how many were taken, and the next two items,
// looked up two items ahead so that their dependent loads (the sequence
// order, then the offsets) are in flight while the walker does other work.
struct PrepareWalk {
  i64 item;
  i64 item_at;
  WalkItem w;
  WalkItem ahead[2]; // items item + grid, item + 2 grid
  i64 chunks;
  i64 taken;
};

__device__ __forceinline__ PrepareWalk start_walk(const kda_plan::KdaParams& p) {
  const i64 items = persistent_items(p);
  PrepareWalk walk{};
  walk.item = static_cast<i64>(blockIdx.x) - gridDim.x; // before the CTA's first item
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const i64 item = blockIdx.x + static_cast<i64>(k) * gridDim.x;
    if (item < items) {
      walk.ahead[k] = walk_item(p, item);
    }
  }
  return walk;
}

// The next chunk of the walk (items of no chunks skipped; exists false past
// the CTA's last). Whole warp (persistent_work may shuffle).
__device__ __forceinline__ PrepareCursor take_chunk(const kda_plan::KdaParams& p, PrepareWalk& walk) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  const i64 items = persistent_items(p);
  PrepareCursor cur{};
  while (walk.taken >= walk.chunks) {
    walk.item_at += walk.chunks;
    walk.item += gridDim.x;
    if (walk.item >= items) {
      walk.chunks = 0;
      walk.taken = 0;
      return cur; // exists false
    }
    walk.w = walk.ahead[0];
    walk.ahead[0] = walk.ahead[1];
    const i64 later = walk.item + 2 * static_cast<i64>(gridDim.x);
    if (later < items) {
      walk.ahead[1] = walk_item(p, later);
    }
    walk.chunks = chunks_of(walk.w.length);
    walk.taken = 0;
  }
  cur.row = walk.w.start + walk.taken * C;
  cur.at = walk.item_at + walk.taken;
  cur.valid = static_cast<int>(min(static_cast<i64>(C), walk.w.length - walk.taken * C));
  cur.h = walk.w.h;
  cur.exists = true;
  ++walk.taken;
  return cur;
}

// What the prepare group takes as one tile: one chunk, or two work items of
// one chunk of at most 8 rows each (rows 0-7 and 8-15 of the tile, two
// records; common/prepare_step's paired tile), which halves the prepare
// chains of calls of many short sequences.
struct PrepareTile {
  PrepareCursor a;
  PrepareCursor b; // b.exists: a paired tile
};

constexpr int k_pair_rows = kda_plan::CHUNK_SIZE / 2;

// The next tile of the walk: its next chunk, and the item after it where
// both are one chunk of at most 8 rows (the second judged by the walk's
// look-ahead: an item of no chunks in between ends the pair). Whole warp.
__device__ __forceinline__ PrepareTile take_tile(const kda_plan::KdaParams& p, PrepareWalk& walk) {
  PrepareTile t;
  t.a = take_chunk(p, walk);
  t.b.exists = false;
  const bool one_short_chunk = t.a.exists && walk.chunks == 1 && t.a.valid <= k_pair_rows;
  const bool next_short = walk.item + gridDim.x < persistent_items(p) && walk.ahead[0].length >= 1 &&
                          walk.ahead[0].length <= k_pair_rows;
  if (one_short_chunk && next_short) {
    t.b = take_chunk(p, walk);
  }
  return t;
}

// A cursor's chunk as common/prepare_ops describes one: a sequence of its
// own valid rows (for chunk_row_beta).
__device__ __forceinline__ PrepareChunk chunk_of(const PrepareCursor& c) {
  PrepareChunk pc;
  pc.seq = SequenceSpan{c.row, c.valid, 0};
  pc.valid = c.valid;
  pc.exists = true;
  return pc;
}

// The scratch sets' tile descriptors (tile_* buffers): what the first
// producer warp hands the prepare group with each tile besides its rows.
struct TileBuffers {
  i64* at;       // [2]: the first chunk's ring position
  int* valid;    // [2][2]: valid rows of the first and second chunk (0: none)
  float* gate;   // [2][2]: exp(A_log) of each chunk's head
  float* bias;   // [2][2][HEAD_DIM]: dt_bias of each chunk's head
  float* beta;   // [2][CHUNK_SIZE]: sigmoid(beta) of the tile's rows
  u64* full;     // [2]
  u64* empty;    // [2]
};

__device__ __forceinline__ TileBuffers tile_buffers(u8* smem) {
  namespace F = kda_plan::main;
  static_assert(F::TILE_AT_BYTES == 2 * 8 && F::TILE_VALID_BYTES == 4 * 4 && F::TILE_GATE_BYTES == 4 * 4 &&
                    F::TILE_BIAS_BYTES == 4 * 4 * kda_plan::HEAD_DIM &&
                    F::TILE_BETA_BYTES == 2 * 4 * kda_plan::CHUNK_SIZE && F::TILE_FULL_BYTES == 16 &&
                    F::TILE_EMPTY_BYTES == 16,
                "two scratch sets' descriptors");
  TileBuffers b;
  b.at = reinterpret_cast<i64*>(smem + F::TILE_AT_OFFSET);
  b.valid = reinterpret_cast<int*>(smem + F::TILE_VALID_OFFSET);
  b.gate = reinterpret_cast<float*>(smem + F::TILE_GATE_OFFSET);
  b.bias = reinterpret_cast<float*>(smem + F::TILE_BIAS_OFFSET);
  b.beta = reinterpret_cast<float*>(smem + F::TILE_BETA_OFFSET);
  b.full = reinterpret_cast<u64*>(smem + F::TILE_FULL_OFFSET);
  b.empty = reinterpret_cast<u64*>(smem + F::TILE_EMPTY_OFFSET);
  return b;
}

// Tile `t` (t.a.exists false: the end marker) into scratch set `set` by the
// first producer warp: lane 0 writes the descriptor, lanes 0-15 the rows'
// sigmoid(beta), lanes 0 and 1 the chunks' exp(A_log), every lane 4 columns
// of each chunk's dt_bias; then the q, k, g rows by 16-byte cp.async into
// the set's raw tiles (a paired tile's rows 0-7 from its first chunk, 8-15
// from its second; rows past a chunk's end zero-filled); one arrival per lane
// once its copies land and lane 0's after the warp's stores.
__device__ __forceinline__ void write_tile(const kda_plan::KdaParams& p, const PrepareTile& t, u8* smem,
                                           const TileBuffers& tb, int set) {
  namespace F = kda_plan::main;
  using Rows = PaddedRows<F::Q_RAW_PITCH>;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int parts = 2 * D / 16;
  const int lane = threadIdx.x & 31;
  if (t.a.exists) {
    const PrepareCursor a = t.a;
    const PrepareCursor b = t.b.exists ? t.b : t.a; // copies: a selected reference would put both in memory
    if (lane == 0) {
      tb.at[set] = t.a.at;
      tb.valid[2 * set] = a.valid;
      tb.valid[2 * set + 1] = t.b.exists ? b.valid : 0;
    }
    if (lane < 2 && (lane == 0 || t.b.exists)) {
      tb.gate[2 * set + lane] = __expf(p.a_log[lane == 0 ? t.a.h : t.b.h]);
    }
    if (lane < C) {
      const bool second = t.b.exists && lane >= k_pair_rows;
      tb.beta[C * set + lane] =
          second ? chunk_row_beta(p, chunk_of(b), b.h, lane - k_pair_rows) : chunk_row_beta(p, chunk_of(a), a.h, lane);
    }
#pragma unroll
    for (int seg = 0; seg < 2; ++seg) {
      if (seg == 0 || t.b.exists) {
        const float* bias = p.dt_bias + (seg == 0 ? t.a.h : t.b.h) * D;
#pragma unroll
        for (int k = 0; k < D / 32; ++k) {
          tb.bias[(2 * set + seg) * D + lane + 32 * k] = bias[lane + 32 * k];
        }
      }
    }
    const i64 token_pitch = static_cast<i64>(p.heads) * D;
    u8* const set_base = smem + set * kda_plan::prepare::STAGE_BYTES; // the scratch set's raw tiles
    const int part = lane % parts;
#pragma unroll 1 // the warp's registers are few (the producer warpgroup's count)
    for (int r = lane / parts; r < C; r += 32 / parts) {
      const bool second = t.b.exists && r >= k_pair_rows;
      const int src_row = second ? r - k_pair_rows : r;
      const bool ok = src_row < (second ? b.valid : a.valid);
      const i64 first = (((second ? b.row : a.row) + src_row) * token_pitch + static_cast<i64>(second ? b.h : a.h) * D) * 2 +
                        16 * part;
      const i64 from = ok ? first : 0;
      const int to = Rows::at(r, 8 * part);
      cp_async_16(set_base + F::Q_RAW_OFFSET + to, reinterpret_cast<const u8*>(p.q) + from, ok);
      cp_async_16(set_base + F::K_RAW_OFFSET + to, reinterpret_cast<const u8*>(p.k) + from, ok);
      cp_async_16(set_base + F::G_RAW_OFFSET + to, reinterpret_cast<const u8*>(p.g) + from, ok);
    }
  } else if (lane == 0) {
    tb.valid[2 * set] = 0; // the end
    tb.valid[2 * set + 1] = 0;
  }
  cp_async_arrive_noinc(tb.full + set);
  __syncwarp(); // every lane's stores before lane 0's arrival (release)
  if (lane == 0) {
    mbarrier_arrive(tb.full + set);
  }
}

// The first producer warp (every lane): the CTA's chunks as the prepare
// group takes them, tile i into scratch set i mod 2 once the group is done
// with tile i - 2 (tile_empty); after the last tile an end marker. The
// walk's lookups (two items ahead) and the tiles' loads are this warp's,
// off the prepare chain.
__device__ __forceinline__ void produce_tiles_fused(const kda_plan::KdaParams& p, u8* smem) {
  const TileBuffers tb = tile_buffers(smem);
  PrepareWalk walk = start_walk(p);
  for (i64 i = 0;; ++i) {
    const int set = static_cast<int>(i & 1);
    const PrepareTile t = take_tile(p, walk);
    if (i >= 2) {
      mbarrier_wait(tb.empty + set, static_cast<u32>(((i >> 1) - 1) & 1));
    }
    write_tile(p, t, smem, tb, set);
    if (!t.a.exists) {
      break;
    }
  }
  cp_async_wait_all();
}

// The prepare group (Team: the four prepare warps, named barrier 1): each
// tile the first producer warp hands it (scratch set i mod 2 for tile i, its
// rows and scalars counted on tile_full), into the records of its chunks'
// ring slots once they are free: a chunk, or two one-chunk items of at most
// 8 rows (common/prepare_step's paired tile). Its chain holds no global
// memory access and no lookup.
template <class Team>
__device__ __forceinline__ void prepare_records_fused(const kda_plan::KdaParams& p, u8* smem) {
  namespace F = kda_plan::main;
  constexpr int D = kda_plan::HEAD_DIM;
  static_assert(F::STAGES >= 4, "a tile's two records while the MMA warps read the tile before");
  u64* const full = reinterpret_cast<u64*>(smem + F::FULL_OFFSET);
  u64* const empty = reinterpret_cast<u64*>(smem + F::EMPTY_OFFSET);
  const TileBuffers tb = tile_buffers(smem);
  const int ch = Team::thread();
  for (i64 i = 0;; ++i) {
    const int set = static_cast<int>(i & 1);
    mbarrier_wait(tb.full + set, static_cast<u32>((i >> 1) & 1));
    const int valid = tb.valid[2 * set];
    if (valid == 0) {
      break; // the end marker
    }
    const int valid_b = tb.valid[2 * set + 1];
    const i64 at = tb.at[set];
    const int slot = free_ring_slot(empty, at);
    const int slot_b = valid_b > 0 ? free_ring_slot(empty, at + 1) : slot;
    u8* const record = smem + slot * F::STAGE_BYTES + F::RECORD_OFFSET;
    SecondChunk second;
    if (valid_b > 0) {
      second.exists = true;
      second.valid = valid_b;
      second.a_scale = tb.gate[2 * set + 1];
      second.bias = tb.bias[(2 * set + 1) * D + ch];
      second.record = smem + slot_b * F::STAGE_BYTES + F::RECORD_OFFSET;
    }
    PrepareChunk chunk;
    chunk.valid = valid;
    chunk.exists = true;
    const float* const beta = tb.beta + kda_plan::CHUNK_SIZE * set;
    prepare_one_chunk<Team, true, true, true>(p, chunk, smem, set, tb.gate[2 * set], tb.bias[2 * set * D + ch],
                                              [beta, ch] { return beta[ch]; }, [record] { return record; }, second);
    fence_async_shared(); // the records are read by wgmma (the async proxy)
    Team::sync();         // every thread's record writes and scratch reads are done
    if (Team::thread() == 0) {
      mbarrier_arrive(full + slot);
      if (valid_b > 0) {
        mbarrier_arrive(full + slot_b);
      }
      mbarrier_arrive(tb.empty + set);
    }
  }
}

__device__ __forceinline__ void fused_persistent(const kda_plan::KdaParams& p) {
  namespace F = kda_plan::main;
  static_assert(kda_plan::CHUNK_SIZE == 16 && kda_plan::HEAD_DIM == 128 && kda_plan::M_TILE == 128,
                "chunk 16, one item per (sequence, head)");
  static_assert(F::MMA_FIRST_WARP == 0 && F::PRODUCER_FIRST_WARP == F::MMA_WARPS && F::PRODUCER_WARPS == 4 &&
                    F::PREPARE_FIRST_WARP == F::PRODUCER_FIRST_WARP + 4 && F::PREPARE_WARPS == 4,
                "MMA warps, then a producer warpgroup of four warps, then a prepare group of four");
  static_assert(!F::Q_RAW_STAGED && !F::K_RAW_STAGED && !F::G_RAW_STAGED && F::RECORD_STAGED,
                "raw tiles in two scratch sets beside the ring, a record per ring slot");
  static_assert(F::RECORD_BYTES == kda_plan::WS_RECORD_BYTES && F::RECORD_STAGED, "a record per ring slot");
  extern __shared__ __align__(1024) u8 smem[]; // the checkpoint tile's swizzle needs 1024-byte aligned boxes
  const int warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    const TileBuffers tb = tile_buffers(smem);
    for (int set = 0; set < 2; ++set) {
      mbarrier_init(tb.full + set, 1 + 32); // the first producer warp's lane 0, its lanes' copies
      mbarrier_init(tb.empty + set, 1);     // the prepare group
    }
    init_persistent_barriers(p, smem); // ends with the fence that publishes the inits
  }
  __syncthreads(); // the last CTA-wide barrier: from here on the roles only meet at mbarriers
  wait_prior_grid(); // packed layouts: the sequence table is the chunk-offsets kernel's
  if (warp >= F::PREPARE_FIRST_WARP) {
    // the entry count (plan_launch: the roles' total over the threads, rounded up to 8)
    constexpr int roles_total = 32 * (F::MMA_WARPS * F::MMA_REGISTERS + F::PRODUCER_WARPS * F::PRODUCER_REGISTERS +
                                      F::PREPARE_WARPS * F::PREPARE_REGISTERS);
    constexpr int threads = 32 * (F::MMA_WARPS + F::PRODUCER_WARPS + F::PREPARE_WARPS);
    constexpr int entry_registers = (roles_total + threads * 8 - 1) / (threads * 8) * 8;
    if constexpr (F::PREPARE_REGISTERS > entry_registers) {
      setmaxnreg_inc<F::PREPARE_REGISTERS>(); // the whole prepare group
    } else if constexpr (F::PREPARE_REGISTERS < entry_registers) {
      setmaxnreg_dec<F::PREPARE_REGISTERS>();
    }
    prepare_records_fused<WarpGroupTeam<F::PREPARE_FIRST_WARP, 1>>(p, smem);
    return;
  }
  if (warp >= F::PRODUCER_FIRST_WARP) {
    setmaxnreg_dec<F::PRODUCER_REGISTERS>(); // the whole producer warpgroup
    const int job = warp - F::PRODUCER_FIRST_WARP;
    u64* const full = reinterpret_cast<u64*>(smem + F::FULL_OFFSET);
    u64* const empty = reinterpret_cast<u64*>(smem + F::EMPTY_OFFSET);
    if (job == 0) {
      produce_tiles_fused(p, smem); // the prepare group's tiles (no records to copy here)
    } else if (job == 1) {
      // the states' rows (the next one's into L2 too, where no checkpoint
      // rows fill DRAM's write side: with them the prefetch measured slower)
      // and the V rows
      produce_v_persistent<true, true, kda_plan::CHECKPOINTS == 0>(p, smem, full, empty);
    } else {
      produce_persistent_rows(p, smem, job);
    }
    return;
  }
  setmaxnreg_inc<F::MMA_REGISTERS>();
  mma_items_persistent(p, smem);
}

} // namespace frag
} // namespace kda
