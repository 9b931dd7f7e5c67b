// kdajit fragment: common/fused_ring
// The ring of the fused kernels (tcgen05/fused_kernel, warp_mma/fused_kernel):
// STAGES slots of one chunk's operands each (chunk c in slot c mod STAGES),
// filled by the load warp and the producer groups (common/fused_prepare) and
// emptied in chunk order by the consumer roles. What every fused family
// shares: the two operand layouts the producers write, [C][128] tiles as TMA
// writes them (two 64-column halves, the 128-byte swizzle) and [rows][C]
// operands as K-major 8-row x 16-byte core matrices without swizzle (tcgen05
// descriptors describe exactly these; ldmatrix reads them through tile_at
// and narrow_at); TMA and cp.async tile loads; the ring's four barriers;
// where chunk c lives.
// Uses kda_plan::main::* (STAGES, STAGE_BYTES, the ring buffers) and TMA_BOX_COLS.
namespace kda {
namespace frag {

// Bytes of one 64-column half of a [C][128] tile (one TMA box: C rows of 128 B).
constexpr int TILE_HALF_BYTES = kda_plan::CHUNK_SIZE * 128;
// [rows][C] operands: core matrices adjacent along K (LBO), 8-row groups SBO apart.
constexpr int NARROW_LBO = 128;
constexpr int NARROW_SBO = kda_plan::CHUNK_SIZE / 8 * 128;
static_assert(kda_plan::TMA_BOX_COLS * 2 == 128 && TILE_HALF_BYTES % 1024 == 0,
              "tiles: 64-column halves of 128-byte rows, 8-row swizzle atoms of 1,024 B");

// Byte offset of element (row, k) of a [C][128] tile: half k / 64, row r at
// 128 r, its 16-byte chunk j at j ^ (r mod 8) (TMA's 128-byte swizzle on a
// 1,024-byte aligned half: the pattern follows address bits 7-9 = r mod 8).
__device__ __forceinline__ int tile_at(int row, int k) {
  return (k >> 6) * TILE_HALF_BYTES + row * 128 + ((((k & 63) >> 3) ^ (row & 7)) << 4) + (k & 7) * 2;
}

// Byte offset of element (row, k) of a [rows][C] K-major core-matrix operand.
__device__ __forceinline__ int narrow_at(int row, int k) {
  return (row >> 3) * NARROW_SBO + (k >> 3) * NARROW_LBO + (row & 7) * 16 + (k & 7) * 2;
}

// One TMA box (64 columns x C rows of head h from token row `row`) into `dst`,
// counted on `bar` (PTX ISA, cp.async.bulk.tensor; the map is a kernel parameter).
__device__ __forceinline__ void tma_load_box(void* dst, const TensorMapBytes& map, int col, int h, i64 row, u64* bar) {
  tma_load_box_3d(dst, map, col, h, static_cast<int>(row), bar);
}

// A [C][128] tile of x (rows row0 .. of head h) into `tile` and one arrival
// on `bar` per thread of a group of `threads`: a whole chunk by TMA (thread 0
// expects the bytes, the others arrive), a tail chunk by 16-byte cp.async with
// zero-fill past `valid` rows (one arrival each once its copies land).
__device__ __forceinline__ void load_tile(u8* tile, const TensorMapBytes& map, const void* x, int heads, int h, i64 row0,
                                          int valid, u64* bar, int thread, int threads) {
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int PARTS = kda_plan::HEAD_DIM / 8;
  if (valid == C) {
    if (thread == 0) {
      mbarrier_arrive_expect_tx(bar, 2 * TILE_HALF_BYTES);
      tma_load_box(tile, map, 0, h, row0, bar);
      tma_load_box(tile + TILE_HALF_BYTES, map, 64, h, row0, bar);
    } else {
      mbarrier_arrive(bar);
    }
    return;
  }
  for (int i = thread; i < C * PARTS; i += threads) {
    const int row = i / PARTS;
    const int part = i % PARTS;
    const bool ok = row < valid;
    const u8* src = reinterpret_cast<const u8*>(x) + ((row0 + row) * heads + h) * kda_plan::HEAD_DIM * 2 + 16 * part;
    cp_async_16(tile + tile_at(row, 8 * part), ok ? src : x, ok);
  }
  cp_async_arrive_noinc(bar);
}

// The ring's barriers, one per slot (slot s fills in rounds; chunk c waits
// for the parity of its round c / STAGES).
struct RingBarriers {
  u64* slot_ready;  // producer group -> consumer roles: the slot's operands are written
  u64* slot_free;   // consumer -> load warp: the slot may be refilled
  u64* tile_loaded; // load warp's copies -> producer group: raw q, k, g tiles
  u64* v_loaded;    // producer group's copies -> consumer: the V tile
};

// The block's SMEM as the plan lays it out (kda_plan::main::SmemLayout: the
// ring's slots first, then the block-wide buffers and barriers).
__device__ __forceinline__ kda_plan::main::SmemLayout& smem_layout(u8* smem) {
  return *reinterpret_cast<kda_plan::main::SmemLayout*>(smem);
}

__device__ __forceinline__ RingBarriers ring_barriers(u8* smem) {
  kda_plan::main::SmemLayout& layout = smem_layout(smem);
  RingBarriers b;
  b.slot_ready = layout.slot_ready;
  b.slot_free = layout.slot_free;
  b.tile_loaded = layout.tile_loaded;
  b.v_loaded = layout.v_loaded;
  return b;
}

// Arrival counts: one per thread of the role that signals (slot_ready: the
// group's elected thread); slot_free counts the consumer's `free_arrivals`
// (1 for a tcgen05 commit, one per warp of a warp_mma consumer), tile_loaded
// three tiles from each of `load_threads` (the load warp's, or a group's).
// The caller fences the initialisation once its own barriers are set up too.
__device__ __forceinline__ void init_ring_barriers(const RingBarriers& b, u32 free_arrivals, u32 load_threads) {
  namespace F = kda_plan::main;
  constexpr u32 group = 32u * F::PRODUCER_WARPS / F::PRODUCER_GROUPS;
  for (int s = 0; s < F::STAGES; ++s) {
    mbarrier_init(b.slot_ready + s, 1);
    mbarrier_init(b.slot_free + s, free_arrivals);
    mbarrier_init(b.tile_loaded + s, 3u * load_threads); // q, k, g
    mbarrier_init(b.v_loaded + s, group);
  }
}

// Where chunk c of a (sequence, head) lives: its ring slot and the slot's fill round.
struct RingChunk {
  int slot;
  u32 round_parity; // parity of the slot's fill round c / STAGES
  kda_plan::main::StageSlot* at; // the slot's buffers (the plan's layout)
  int valid;        // tokens of the chunk inside the sequence
};

__device__ __forceinline__ RingChunk ring_chunk(u8* smem, const SequenceSpan& seq, i64 c) {
  namespace F = kda_plan::main;
  RingChunk r;
  r.slot = static_cast<int>(c % F::STAGES);
  r.round_parity = static_cast<u32>((c / F::STAGES) & 1);
  // the slot by its byte offset: indexing smem_layout(smem).slot[] gives the
  // same address, but ptxas then spills on the register-bound warp_mma kernel
  r.at = reinterpret_cast<F::StageSlot*>(smem + r.slot * F::STAGE_BYTES);
  r.valid = static_cast<int>(min(static_cast<i64>(kda_plan::CHUNK_SIZE), seq.length - c * kda_plan::CHUNK_SIZE));
  return r;
}

} // namespace frag
} // namespace kda
