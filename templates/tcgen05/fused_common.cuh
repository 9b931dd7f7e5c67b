// kdajit fragment: tcgen05/fused_common
// What the roles of the fused kernel share (tcgen05/fused_*): the two SMEM
// operand layouts the descriptors describe (kda_plan::UMMA_*): the [C][128]
// tiles as TMA writes them (two 64-column halves, the 128-byte swizzle), and
// the [rows][C] operands as K-major 8-row x 16-byte core matrices without
// swizzle; TMA and cp.async loads; the ring's and the consumer's barriers,
// named barriers, and the fences between the generic proxy (thread stores)
// and the async proxy (TMA writes, the tensor core's operand reads).
// Uses kda_plan::main::* and kda_plan::UMMA_*, TMA_*, TMEM_*.
namespace kda {
namespace frag {

// Bytes of one 64-column half of a [C][128] tile (one TMA box: C rows of 128 B).
constexpr int TILE_HALF_BYTES = kda_plan::CHUNK_SIZE * 128;
static_assert(kda_plan::TMA_BOX_COLS * 2 == 128 && kda_plan::UMMA_TILE_SWIZZLE128 == 1 &&
                  kda_plan::UMMA_TILE_SBO == 8 * 128 && TILE_HALF_BYTES % 1024 == 0,
              "tiles: 64-column halves of 128-byte rows, 128-byte swizzle, 8-row atoms of 1,024 B");
static_assert(kda_plan::UMMA_NARROW_SWIZZLE128 == 0 && kda_plan::UMMA_NARROW_LBO == 128 &&
                  kda_plan::UMMA_NARROW_SBO == kda_plan::CHUNK_SIZE / 8 * 128,
              "[rows][C] operands: core matrices without swizzle, adjacent along K");

// Byte offset of element (row, k) of a [C][128] tile: half k / 64, row r at
// 128 r, its 16-byte chunk j at j ^ (r mod 8) (TMA's 128-byte swizzle on a
// 1,024-byte aligned half: the pattern follows address bits 7-9 = r mod 8).
__device__ __forceinline__ int tile_at(int row, int k) {
  return (k >> 6) * TILE_HALF_BYTES + row * 128 + ((((k & 63) >> 3) ^ (row & 7)) << 4) + (k & 7) * 2;
}

// The value row (inside the CTA's M_TILE rows) whose TMEM lane thread t of a
// 4-warp state or epilogue role reaches, or -1. M 128: lane t holds row t (the
// data-path layout of M = 128, cta_group::1). M 64 (cta_group::1, not .ws):
// rows 16 w .. 16 w + 15 are lanes 32 w .. 32 w + 15, the first half of warp
// w's lane quarter (PTX ISA, tcgen05 "Matrix fragments" data-path layout F,
// which the A operand in TMEM follows too); the other 16 lanes of each
// quarter are unused, their threads only join the warp-wide TMEM accesses.
__device__ __forceinline__ int tmem_row_of(int t) {
  static_assert(kda_plan::M_TILE == 128 || kda_plan::M_TILE == 64, "M 128 or M 64");
  if (kda_plan::M_TILE == 128) {
    return t;
  }
  return (t & 31) < 16 ? 16 * (t >> 5) + (t & 31) : -1;
}

// Byte offset of element (row, k) of a [rows][C] K-major core-matrix operand.
__device__ __forceinline__ int narrow_at(int row, int k) {
  return (row >> 3) * kda_plan::UMMA_NARROW_SBO + (k >> 3) * kda_plan::UMMA_NARROW_LBO + (row & 7) * 16 + (k & 7) * 2;
}

// One TMA box (64 columns x C rows of head h from token row `row`) into `dst`,
// counted on `bar` (PTX ISA, cp.async.bulk.tensor; the map is a kernel parameter).
__device__ __forceinline__ void tma_load_box(void* dst, const TensorMapBytes& map, int col, int h, i64 row, u64* bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
               "[%5];" ::"r"(smem_address(dst)),
               "l"(&map), "r"(col), "r"(h), "r"(static_cast<int>(row)), "r"(smem_address(bar))
               : "memory");
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

// The barriers of the fused kernel: per ring slot (index slot) and per chunk
// (one phase each; chunk c waits for parity c & 1).
struct FusedBarriers {
  u64* slot_ready;  // producer group -> consumer roles: the slot's operands are written
  u64* slot_free;   // the update's commit -> load warp: the slot may be refilled
  u64* tile_loaded; // load warp's cp.asyncs -> producer group: raw q, k, g tiles
  u64* v_loaded;    // producer group's cp.asyncs -> epilogue: the V tile
  u64* snapshot_ready; // state warps -> MMA warp: bf16 snapshot and decayed state in TMEM
  u64* projected;   // commit -> epilogue: P^T and O0^T in TMEM
  u64* delta_ready; // epilogue -> MMA warp: Delta^T in SMEM
  u64* solved;      // commit -> epilogue: U^T in TMEM
  u64* u_ready;     // epilogue -> MMA warp: U^T (bf16) in SMEM
  u64* updated;     // commit -> state warps and epilogue: [S | O^T] updated
  u64* o_drained;   // epilogue -> MMA warp: O^T read from TMEM (its columns may be overwritten)
};

__device__ __forceinline__ FusedBarriers fused_barriers(u8* smem) {
  namespace F = kda_plan::main;
  FusedBarriers b;
  b.slot_ready = reinterpret_cast<u64*>(smem + F::SLOT_READY_OFFSET);
  b.slot_free = reinterpret_cast<u64*>(smem + F::SLOT_FREE_OFFSET);
  b.tile_loaded = reinterpret_cast<u64*>(smem + F::TILE_LOADED_OFFSET);
  b.v_loaded = reinterpret_cast<u64*>(smem + F::V_LOADED_OFFSET);
  b.snapshot_ready = reinterpret_cast<u64*>(smem + F::SNAPSHOT_READY_OFFSET);
  b.projected = reinterpret_cast<u64*>(smem + F::PROJECTED_OFFSET);
  b.delta_ready = reinterpret_cast<u64*>(smem + F::DELTA_READY_OFFSET);
  b.solved = reinterpret_cast<u64*>(smem + F::SOLVED_OFFSET);
  b.u_ready = reinterpret_cast<u64*>(smem + F::U_READY_OFFSET);
  b.updated = reinterpret_cast<u64*>(smem + F::UPDATED_OFFSET);
  b.o_drained = reinterpret_cast<u64*>(smem + F::O_DRAINED_OFFSET);
  return b;
}

// Arrival counts: one per thread of the role that signals, 1 for a commit or an elected thread.
__device__ __forceinline__ void init_fused_barriers(const FusedBarriers& b) {
  namespace F = kda_plan::main;
  constexpr u32 group = 32u * F::PRODUCER_WARPS / F::PRODUCER_GROUPS;
  for (int s = 0; s < F::STAGES; ++s) {
    mbarrier_init(b.slot_ready + s, 1);
    mbarrier_init(b.slot_free + s, 1);
    mbarrier_init(b.tile_loaded + s, 3u * 32u * F::LOAD_WARPS); // q, k, g: one arrival per lane and tile
    mbarrier_init(b.v_loaded + s, group);
  }
  mbarrier_init(b.snapshot_ready, 32u * F::STATE_WARPS);
  mbarrier_init(b.projected, 1);
  mbarrier_init(b.delta_ready, 32u * F::EPILOGUE_WARPS);
  mbarrier_init(b.solved, 1);
  mbarrier_init(b.u_ready, 32u * F::EPILOGUE_WARPS);
  mbarrier_init(b.updated, 1);
  mbarrier_init(b.o_drained, 32u * F::EPILOGUE_WARPS);
  mbarrier_init_fence();
}

// Where chunk c of a (sequence, head) lives: its ring slot and the slot's fill round.
struct RingChunk {
  int slot;
  u32 round_parity; // parity of the slot's fill round c / STAGES
  u8* base;         // the slot's bytes
  int valid;        // tokens of the chunk inside the sequence
};

__device__ __forceinline__ RingChunk ring_chunk(u8* smem, const SequenceSpan& seq, i64 c) {
  namespace F = kda_plan::main;
  RingChunk r;
  r.slot = static_cast<int>(c % F::STAGES);
  r.round_parity = static_cast<u32>((c / F::STAGES) & 1);
  r.base = smem + r.slot * F::STAGE_BYTES;
  r.valid = static_cast<int>(min(static_cast<i64>(kda_plan::CHUNK_SIZE), seq.length - c * kda_plan::CHUNK_SIZE));
  return r;
}

} // namespace frag
} // namespace kda
