// kdajit fragment: tcgen05/fused_common
// What the roles of the fused tcgen05 kernel share beyond the ring
// (common/fused_ring): the descriptors' operand layouts checked against the
// ring's (kda_plan::UMMA_*), the TMEM lane of a state or epilogue thread, and
// the consumer's barriers beside the ring's.
// Uses kda_plan::main::* and kda_plan::UMMA_*, TMEM_*.
namespace kda {
namespace frag {

static_assert(kda_plan::UMMA_TILE_SWIZZLE128 == 1 && kda_plan::UMMA_TILE_SBO == 8 * 128,
              "the TILE descriptor: the ring's [C][128] tiles (128-byte swizzle, 8-row atoms of 1,024 B)");
static_assert(kda_plan::UMMA_NARROW_SWIZZLE128 == 0 && kda_plan::UMMA_NARROW_LBO == NARROW_LBO &&
                  kda_plan::UMMA_NARROW_SBO == NARROW_SBO,
              "the NARROW descriptor: the ring's [rows][C] core matrices without swizzle, adjacent along K");

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

// The barriers of the fused kernel: the ring's, and the consumer's per chunk
// (one phase each; chunk c waits for parity c & 1).
struct FusedBarriers {
  RingBarriers ring;   // slot_free: the update's second commit -> load warp
  u64* snapshot_ready; // state warps -> MMA warp: bf16 snapshot and decayed state in TMEM
  u64* projected;   // commit -> epilogue: P^T and O0^T in TMEM
  u64* delta_ready; // epilogue -> MMA warp: Delta^T in SMEM
  u64* solved;      // commit -> epilogue: U^T in TMEM
  u64* u_ready;     // epilogue -> MMA warp: U^T (bf16) in SMEM
  u64* updated;     // commit -> state warps and epilogue: [S | O^T] updated
  u64* o_drained;   // epilogue -> MMA warp: O^T read from TMEM (its columns may be overwritten)
};

__device__ __forceinline__ FusedBarriers fused_barriers(u8* smem) {
  kda_plan::main::SmemLayout& layout = smem_layout(smem);
  FusedBarriers b;
  b.ring = ring_barriers(smem);
  b.snapshot_ready = layout.snapshot_ready;
  b.projected = layout.projected;
  b.delta_ready = layout.delta_ready;
  b.solved = layout.solved;
  b.u_ready = layout.u_ready;
  b.updated = layout.updated;
  b.o_drained = layout.o_drained;
  return b;
}

// Arrival counts: one per thread of the role that signals, 1 for a commit or an elected thread.
__device__ __forceinline__ void init_fused_barriers(const FusedBarriers& b) {
  namespace F = kda_plan::main;
  init_ring_barriers(b.ring, 1, 32u * F::LOAD_WARPS); // slot_free: one commit; the load warp
  mbarrier_init(b.snapshot_ready, 32u * F::STATE_WARPS);
  mbarrier_init(b.projected, 1);
  mbarrier_init(b.delta_ready, 32u * F::EPILOGUE_WARPS);
  mbarrier_init(b.solved, 1);
  mbarrier_init(b.u_ready, 32u * F::EPILOGUE_WARPS);
  mbarrier_init(b.updated, 1);
  mbarrier_init(b.o_drained, 32u * F::EPILOGUE_WARPS);
  mbarrier_init_fence();
}

} // namespace frag
} // namespace kda
