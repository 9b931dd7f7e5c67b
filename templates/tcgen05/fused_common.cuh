// kdajit fragment: tcgen05/fused_common
// What the roles of the fused chunk-32 kernel share (tcgen05/fused_*):
// operand tiles as K-major 8-row x 16-byte core matrices without swizzle (the
// layout the SMEM descriptors describe: UMMA_CORE_LBO bytes between core
// matrices along K, an operand's SBO between 8-row groups), the ring's and the
// consumer's barriers, named barriers, and the fences between the generic
// proxy (thread stores) and the async proxy (the tensor core's operand reads).
// Uses kda_plan::main::* and kda_plan::UMMA_*, TMEM_*.
namespace kda {
namespace frag {

// Byte offset of element (row, k) in a K-major core-matrix operand whose 8-row groups are `sbo` bytes apart.
__device__ __forceinline__ int core_at(int row, int k, int sbo) {
  return (row >> 3) * sbo + (k >> 3) * kda_plan::UMMA_CORE_LBO + (row & 7) * 16 + (k & 7) * 2;
}

// bar.sync on a named barrier (0 is __syncthreads).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// This thread's earlier stores to SMEM become visible to the async proxy (tensor-core operand reads).
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// One arrival on `bar` once this thread's earlier cp.asyncs have landed (the barrier counts it at init).
__device__ __forceinline__ void cp_async_arrive_noinc(u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_address(bar)) : "memory");
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
    mbarrier_init(b.tile_loaded + s, 32u * F::LOAD_WARPS);
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

// Row `row` of token tensor x ([tokens, H, 128] bf16) for head h, 16 bytes at key columns 8 part ..
__device__ __forceinline__ const u8* token_row(const void* x, const SequenceSpan& seq, i64 row, int heads, int h,
                                               int part) {
  return reinterpret_cast<const u8*>(x) + ((seq.start + row) * heads + h) * kda_plan::HEAD_DIM * 2 + 16 * part;
}

} // namespace frag
} // namespace kda
