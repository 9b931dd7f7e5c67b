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
// The prepare role: one group of four warps (a warpgroup keeping the entry
// register count), one thread per key column, prepares the CTA's chunks in
// the order the MMA warps take them (items in order, chunks in order) with
// the prepare kernel's own step (common/prepare_step: prepare_one_chunk,
// its team meeting at named barrier 1 instead of the CTA barrier; the fold
// of wgmma/fold_c16), so the records have the prepare kernel's bits. Each
// chunk's raw q, k, g rows go into its ring slot (the raw tiles are stage
// buffers, beside the record and V), so that the rows of chunk i + 1 are in
// flight while chunk i is prepared; the split lows, L and T^T are shared.
// Per chunk: find the next chunk and issue its scalars' loads (exp(A_log),
// dt_bias, beta), wait for its slot to be free and cp.async its rows, then
// prepare this chunk into its slot's record, fence the writes for the async
// proxy (the MMA warps' wgmma reads them) and arrive on the slot's full
// barrier in place of the record's bulk copy.
// The producer warpgroup's first warp, which copies records in the
// decomposed design, loads the V rows here, so that the second one only
// brings the states' rows (each its own order of waits: a state tile frees
// once per item, a ring slot once per chunk).
// Uses kda_plan::main (= kda_plan::recurrence and kda_plan::prepare,
// wgmma/fused_persistent_names), common/prepare_step and what
// wgmma/recurrence_persistent uses.
namespace kda {
namespace frag {

// One chunk of the CTA's sequence of chunks: chunk c of a work item (head
// h, sequence seq), at ring position `at`.
struct PrepareCursor {
  SequenceSpan seq;
  i64 at;
  i64 c;
  int h;
  bool exists;
};

// The prepare group's walk over the CTA's items (uniform over the group):
// the item of the last chunk taken, its first ring position, its chunks and
// how many were taken, and the work of the next two items, looked up two
// items ahead so that their dependent loads (the sequence order, then the
// offsets) are in flight while a tile is prepared, not on its chain.
struct PrepareWalk {
  i64 item;
  i64 item_at;
  i64 chunks;
  i64 taken;
  RecurrenceWork w;
  RecurrenceWork ahead[2]; // items item + grid, item + 2 grid
};

__device__ __forceinline__ PrepareWalk start_walk(const kda_plan::KdaParams& p) {
  const i64 items = persistent_items(p);
  PrepareWalk walk{};
  walk.item = static_cast<i64>(blockIdx.x) - gridDim.x; // before the CTA's first item
  for (int k = 0; k < 2; ++k) {
    const i64 item = blockIdx.x + static_cast<i64>(k) * gridDim.x;
    if (item < items) {
      walk.ahead[k] = persistent_work(p, item);
    }
  }
  return walk;
}

// The next chunk of the walk (items of no chunks skipped; exists false past
// the CTA's last). Whole warp (persistent_work may shuffle).
__device__ __forceinline__ PrepareCursor take_chunk(const kda_plan::KdaParams& p, PrepareWalk& walk) {
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
      walk.ahead[1] = persistent_work(p, later);
    }
    walk.chunks = chunks_of(walk.w.seq.length);
    walk.taken = 0;
  }
  cur.seq = walk.w.seq;
  cur.at = walk.item_at + walk.taken;
  cur.c = walk.taken;
  cur.h = walk.w.h;
  cur.exists = true;
  ++walk.taken;
  return cur;
}

__device__ __forceinline__ PrepareChunk chunk_at(const PrepareCursor& cur) {
  PrepareChunk pc;
  pc.seq = cur.seq;
  pc.chunk = cur.seq.first_chunk + cur.c;
  pc.row0 = cur.c * kda_plan::CHUNK_SIZE;
  pc.valid = static_cast<int>(min(static_cast<i64>(kda_plan::CHUNK_SIZE), cur.seq.length - pc.row0));
  pc.exists = true;
  return pc;
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

__device__ __forceinline__ bool pairable(i64 length) {
  return length >= 1 && length <= k_pair_rows;
}

// The next tile of the walk: its next chunk, and the item after it where
// both are one chunk of at most 8 rows (the second judged by the walk's
// look-ahead: an item of no chunks in between ends the pair). Whole warp.
__device__ __forceinline__ PrepareTile take_tile(const kda_plan::KdaParams& p, PrepareWalk& walk) {
  PrepareTile t;
  t.a = take_chunk(p, walk);
  t.b.exists = false;
  const bool last_of_item = walk.taken >= walk.chunks;
  const bool more = walk.item + gridDim.x < persistent_items(p);
  if (t.a.exists && pairable(t.a.seq.length) && last_of_item && more && pairable(walk.ahead[0].seq.length)) {
    t.b = take_chunk(p, walk);
  }
  return t;
}

// The per-head and per-row values a tile's prepare reads from global memory
// besides its rows: exp(A_log) and dt_bias of the thread's column for each
// chunk of the tile, sigmoid(beta) of tile row `thread` (threads 0-15),
// issued a tile ahead.
struct PrepareScalars {
  float a_scale;
  float bias;
  float a_scale_b;
  float bias_b;
  float beta;
};

template <class Team>
__device__ __forceinline__ PrepareScalars load_scalars(const kda_plan::KdaParams& p, const PrepareTile& tile) {
  const int t = Team::thread();
  PrepareScalars sc{};
  sc.a_scale = __expf(p.a_log[tile.a.h]);
  sc.bias = p.dt_bias[tile.a.h * kda_plan::HEAD_DIM + t];
  if (tile.b.exists) {
    sc.a_scale_b = __expf(p.a_log[tile.b.h]);
    sc.bias_b = p.dt_bias[tile.b.h * kda_plan::HEAD_DIM + t];
    sc.beta = t < k_pair_rows                ? chunk_row_beta(p, chunk_at(tile.a), tile.a.h, t)
              : t < kda_plan::CHUNK_SIZE     ? chunk_row_beta(p, chunk_at(tile.b), tile.b.h, t - k_pair_rows)
                                             : 0.0f;
  } else {
    sc.beta = t < kda_plan::CHUNK_SIZE ? chunk_row_beta(p, chunk_at(tile.a), tile.a.h, t) : 0.0f;
  }
  return sc;
}

// A tile's q, k, g rows into the raw tiles of scratch set `scratch` (16-byte
// cp.async, rows past a chunk's end zero-filled): a paired tile's rows 0-7
// from its first chunk, 8-15 from its second; no commit.
template <class Rows, class Team>
__device__ __forceinline__ void load_tile_rows(const kda_plan::KdaParams& p, const PrepareTile& tile, u8* smem,
                                               int scratch) {
  namespace P = kda_plan::prepare;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int parts = 2 * D / 16;
  static_assert(Team::threads() / parts == k_pair_rows, "one pass per half of the tile");
  const void* const inputs[3] = {p.q, p.k, p.g};
  const int offsets[3] = {P::Q_RAW_OFFSET, P::K_RAW_OFFSET, P::G_RAW_OFFSET};
  const i64 token_pitch = static_cast<i64>(p.heads) * D;
  const int part = Team::thread() % parts;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    // half 1: the second chunk's rows 0-7, or the one chunk's rows 8-15
    const PrepareCursor& cur = half == 1 && tile.b.exists ? tile.b : tile.a;
    const PrepareChunk c = chunk_at(cur);
    const int r = Team::thread() / parts + half * k_pair_rows; // tile row
    const int src_row = tile.b.exists ? r - half * k_pair_rows : r;
    const bool ok = src_row < c.valid;
    const i64 first = ((c.seq.start + c.row0 + src_row) * token_pitch + static_cast<i64>(cur.h) * D) * 2 + 16 * part;
#pragma unroll
    for (int x = 0; x < 3; ++x) {
      u8* const tile_x = prepare_buffer(smem, scratch, offsets[x], 1);
      cp_async_16(tile_x + Rows::at(r, 8 * part), reinterpret_cast<const u8*>(inputs[x]) + (ok ? first : 0), ok);
    }
  }
}

// What a tile's prepare needs once its rows and scalars are on their way
// (the cursors are not kept live across the chain): its first chunk's ring
// position and valid rows, the second chunk's valid rows (0: not paired).
struct TileWork {
  i64 at;
  int valid;
  int valid_b;
};

__device__ __forceinline__ TileWork tile_work(const PrepareTile& t) {
  TileWork w;
  w.at = t.a.at;
  w.valid = chunk_at(t.a).valid;
  w.valid_b = t.b.exists ? chunk_at(t.b).valid : 0;
  return w;
}

// The prepare group (Team: the four prepare warps, named barrier 1): every
// chunk of the CTA, in ring order, into its slot's record, two one-chunk
// items of at most 8 rows at a time where they follow each other. A tile's
// rows and its working tiles (the raw tiles and the operands in their bytes)
// are in the stage buffers of ring slot 0 or 1, alternately (scratch sets
// that no other role reads), so the next tile's rows load while one is
// prepared; a chunk's record waits only for its own slot.
template <class Team>
__device__ __forceinline__ void prepare_records_fused(const kda_plan::KdaParams& p, u8* smem) {
  namespace F = kda_plan::main;
  using Rows = PaddedRows<F::Q_RAW_PITCH>;
  static_assert(F::STAGES >= 2, "two scratch sets in the ring's stage buffers");
  u64* const full = reinterpret_cast<u64*>(smem + F::FULL_OFFSET);
  u64* const empty = reinterpret_cast<u64*>(smem + F::EMPTY_OFFSET);
  PrepareWalk walk = start_walk(p);
  TileWork cur;
  PrepareScalars sc;
  {
    const PrepareTile first = take_tile(p, walk);
    if (!first.a.exists) {
      return;
    }
    sc = load_scalars<Team>(p, first);
    load_tile_rows<Rows, Team>(p, first, smem, 0);
    cp_async_commit();
    cur = tile_work(first);
  }
  int scratch = 0;
  while (true) {
    // the next tile: its scalars and rows, into the other scratch set (its
    // last reader, the tile before this one, passed the barriers below)
    PrepareScalars next_scalars{};
    TileWork next{};
    bool more = false;
    {
      const PrepareTile t = take_tile(p, walk);
      more = t.a.exists;
      if (more) {
        next_scalars = load_scalars<Team>(p, t);
        load_tile_rows<Rows, Team>(p, t, smem, scratch ^ 1);
        next = tile_work(t);
      }
    }
    cp_async_commit();
    const int slot = free_ring_slot(empty, cur.at);
    const int slot_b = cur.valid_b > 0 ? free_ring_slot(empty, cur.at + 1) : slot;
    cp_async_wait<1>(); // this tile's rows
    Team::sync();
    u8* const record = smem + slot * F::STAGE_BYTES + F::RECORD_OFFSET;
    SecondChunk second;
    if (cur.valid_b > 0) {
      second.exists = true;
      second.valid = cur.valid_b;
      second.a_scale = sc.a_scale_b;
      second.bias = sc.bias_b;
      second.record = smem + slot_b * F::STAGE_BYTES + F::RECORD_OFFSET;
    }
    PrepareChunk chunk;
    chunk.valid = cur.valid;
    chunk.exists = true;
    const float row_beta = sc.beta;
    prepare_one_chunk<Team, true>(p, chunk, smem, scratch, sc.a_scale, sc.bias, [row_beta] { return row_beta; },
                                  [record] { return record; }, second);
    fence_async_shared(); // the records are read by wgmma (the async proxy)
    Team::sync();         // every thread's record writes are done
    if (Team::thread() == 0) {
      mbarrier_arrive(full + slot);
      if (cur.valid_b > 0) {
        mbarrier_arrive(full + slot_b);
      }
    }
    if (!more) {
      break;
    }
    cur = next;
    sc = next_scalars;
    scratch ^= 1;
  }
  cp_async_wait_all();
}

__device__ __forceinline__ void fused_persistent(const kda_plan::KdaParams& p) {
  namespace F = kda_plan::main;
  static_assert(kda_plan::CHUNK_SIZE == 16 && kda_plan::HEAD_DIM == 128 && kda_plan::M_TILE == 128,
                "chunk 16, one item per (sequence, head)");
  static_assert(F::MMA_FIRST_WARP == 0 && F::PRODUCER_FIRST_WARP == F::MMA_WARPS && F::PRODUCER_WARPS == 4 &&
                    F::PREPARE_FIRST_WARP == F::PRODUCER_FIRST_WARP + 4 && F::PREPARE_WARPS == 4,
                "MMA warps, then a producer warpgroup of four warps, then a prepare group of four");
  static_assert(F::Q_RAW_STAGED && F::K_RAW_STAGED && F::G_RAW_STAGED && F::RECORD_STAGED,
                "each chunk's raw rows and record in its ring slot");
  static_assert(F::RECORD_BYTES == kda_plan::WS_RECORD_BYTES && F::RECORD_STAGED, "a record per ring slot");
  extern __shared__ __align__(1024) u8 smem[]; // the checkpoint tile's swizzle needs 1024-byte aligned boxes
  const int warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    init_persistent_barriers(smem);
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
      produce_v_persistent<false, true>(p, smem, full, empty); // the V rows (no records to copy here)
    } else if (job == 1) {
      produce_v_persistent<true, false>(p, smem, full, empty); // the states' rows
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
