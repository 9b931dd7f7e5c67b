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

// Where the prepare group is in the CTA's sequence of chunks: chunk c of
// work item `item` (head h, sequence seq), whose first chunk is at ring
// position item_at. Kept small: two of them are live across a chunk's prepare.
struct PrepareCursor {
  SequenceSpan seq;
  i64 item;
  i64 item_at;
  i64 c;
  int h;
  bool exists;
  __device__ __forceinline__ i64 at() const { return item_at + c; }
};

// The chunk at ring position `at`, searching from work item `item` whose
// first chunk is at `item_at` (items of no chunks skipped). Whole warp.
__device__ __forceinline__ PrepareCursor find_chunk(const kda_plan::KdaParams& p, i64 at, i64 item, i64 item_at) {
  const i64 items = persistent_items(p);
  PrepareCursor cur{};
  for (; item < items; item += gridDim.x) {
    const RecurrenceWork w = persistent_work(p, item);
    const i64 chunks = chunks_of(w.seq.length);
    if (at < item_at + chunks) {
      cur.seq = w.seq;
      cur.item = item;
      cur.item_at = item_at;
      cur.c = at - item_at;
      cur.h = w.h;
      cur.exists = true;
      return cur;
    }
    item_at += chunks;
  }
  cur.exists = false;
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

// The per-head and per-row values a chunk's prepare reads from global
// memory besides its rows: exp(A_log), dt_bias of the thread's column,
// sigmoid(beta) of row `thread` (threads 0-15), issued a chunk ahead.
struct PrepareScalars {
  float a_scale;
  float bias;
  float beta;
};

template <class Team>
__device__ __forceinline__ PrepareScalars load_scalars(const kda_plan::KdaParams& p, const PrepareCursor& cur) {
  const int t = Team::thread();
  const int h = cur.h;
  PrepareScalars sc;
  sc.a_scale = __expf(p.a_log[h]);
  sc.bias = p.dt_bias[h * kda_plan::HEAD_DIM + t];
  sc.beta = t < kda_plan::CHUNK_SIZE ? chunk_row_beta(p, chunk_at(cur), h, t) : 0.0f;
  return sc;
}

// The prepare group (Team: the four prepare warps, named barrier 1): every
// chunk of the CTA, in ring order, into its slot's record.
template <class Team>
__device__ __forceinline__ void prepare_records_fused(const kda_plan::KdaParams& p, u8* smem) {
  namespace F = kda_plan::main;
  using Rows = PaddedRows<F::Q_RAW_PITCH>;
  u64* const full = reinterpret_cast<u64*>(smem + F::FULL_OFFSET);
  u64* const empty = reinterpret_cast<u64*>(smem + F::EMPTY_OFFSET);
  PrepareCursor cur = find_chunk(p, 0, blockIdx.x, 0);
  if (!cur.exists) {
    return;
  }
  PrepareScalars sc = load_scalars<Team>(p, cur);
  int slot = free_ring_slot(empty, cur.at());
  load_chunk_rows<Rows, Team>(p, chunk_at(cur), cur.h, smem, slot);
  cp_async_commit();
  while (true) {
    // the next chunk: its scalars, its slot (chunk next.at - STAGES left it), its rows
    const PrepareCursor next = find_chunk(p, cur.at() + 1, cur.item, cur.item_at);
    PrepareScalars next_scalars{};
    int next_slot = 0;
    if (next.exists) {
      next_scalars = load_scalars<Team>(p, next);
      next_slot = free_ring_slot(empty, next.at());
      load_chunk_rows<Rows, Team>(p, chunk_at(next), next.h, smem, next_slot);
    }
    cp_async_commit();
    cp_async_wait<1>(); // this chunk's rows
    Team::sync();
    u8* const slot_base = smem + slot * F::STAGE_BYTES;
    const float row_beta = sc.beta;
    prepare_one_chunk<Team>(p, chunk_at(cur), smem, slot, sc.a_scale, sc.bias, [row_beta] { return row_beta; },
                            [slot_base] { return slot_base + F::RECORD_OFFSET; });
    fence_async_shared(); // the record is read by wgmma (the async proxy)
    Team::sync();         // every thread's record writes are done
    if (Team::thread() == 0) {
      mbarrier_arrive(full + slot);
    }
    if (!next.exists) {
      break;
    }
    cur = next;
    sc = next_scalars;
    slot = next_slot;
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
    prepare_records_fused<WarpGroupTeam<F::PREPARE_FIRST_WARP, 1>>(p, smem); // registers as launched
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
