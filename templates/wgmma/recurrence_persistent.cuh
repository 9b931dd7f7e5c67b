// kdajit fragment: wgmma/recurrence_persistent
// The wgmma recurrence on a persistent grid (schedule grid "persistent"), for
// calls of many (sequence, head) pairs with few chunks each, where the direct
// grid of wgmma/recurrence spends most of a pair's time outside its chunks: a
// CTA per pair is launched, sets up its barriers, loads the state from DRAM
// and waits for its first record before its MMA warps do anything, and only
// one such CTA fits on an SM. Here gridDim.x CTAs (at most one per SM: the
// kernel takes the SM's SMEM) each take the work items blockIdx.x,
// blockIdx.x + gridDim.x, ... of the N x H x (128 / M_TILE) items (sequence,
// head, M tile), in the direct grid's order (packed layouts: the longest
// sequences first, or the caller's seq_order). Every role walks the same
// items in the same order and carries its ring position from item to item:
//   producer warp 0, lane 0: the records into the STAGES-slot ring, so the
//           next items' records arrive while the MMA warps finish this one;
//   producer warp 1: a bf16 state's rows into the state_in tiles (lane 0,
//           two TMA tensor loads) once the tile's previous item is done
//           with it, then the V rows into the ring's slots;
//   producer warp 2: the outputs; with an fp32 state, as it starts an item,
//           its lane 0 also prefetches the next item's state rows into L2
//           (cp.async.bulk.prefetch.L2), about one item before the MMA warps
//           load them;
//   producer warp 3: the checkpoint rows (lane 0, plans with checkpoints),
//           then a bf16 state's final rows from the item's state_in tile
//           to the state (lane 0, two TMA tensor stores);
//   MMA warps: per item, the state (bf16: from its state_in tile by
//           ldmatrix; fp32: from global memory, common/state_rows:
//           load_state, an L2 hit once prefetched), the item's chunks, the
//           state back (bf16: by stmatrix into the same tile; fp32:
//           store_state).
// A bf16 state moves through SMEM because an item of a few tokens is mostly
// its state: the accumulator layout's own loads (2 bytes from each of 8 rows
// per warp instruction) and stores (4 bytes) moved 4x and 2x the state's
// sectors through L1 and L2 and kept the L2 at 89 % of its throughput (H100,
// Nsight Compute) while the MMA warps waited on them.
// The ring's slots, the output tiles and the checkpoint tile keep one phase
// sequence across the CTA's items. The chunk step, the producers' per-chunk
// copies and the staging of outputs and checkpoint rows are wgmma/recurrence's
// (its helpers are called as they are); the loops over items are this file's.
// wgmma/recurrence's own kernel keeps its code unchanged, as measured on the
// H200, rather than calling these loops (folding it into them changes its
// register allocation: a change to measure, not to make in passing).
// Uses what wgmma/recurrence uses.
namespace kda {
namespace frag {

// How a role looks its items up: the MMA warps inline, the producer warps
// by one out-of-line copy (common/state_rows: persistent_work_out_of_line).
enum class ItemLookup { inline_copy, out_of_line };

// The CTA's work items in order, each with its work and chunk count:
// body(item, work, chunks). Whole warp (persistent_work may shuffle).
template <ItemLookup LOOKUP, class Body>
__device__ __forceinline__ void for_each_item(const kda_plan::KdaParams& p, Body body) {
  const i64 items = persistent_items(p);
  for (i64 item = blockIdx.x; item < items; item += gridDim.x) {
    const RecurrenceWork w =
        LOOKUP == ItemLookup::out_of_line ? persistent_work_out_of_line(p, item) : persistent_work(p, item);
    body(item, w, chunks_of(w.seq.length));
  }
}

// `bytes` (a multiple of 16, 16-byte aligned) of global memory into L2, with
// no completion to wait for (PTX ISA 9.7.9.25, cp.async.bulk.prefetch).
__device__ __forceinline__ void prefetch_to_l2(const void* src, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

// The state rows m0 .. m0 + M_TILE of item w into L2 (one lane).
__device__ __forceinline__ void prefetch_state(const kda_plan::KdaParams& p, const RecurrenceWork& w) {
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int bytes = kda_plan::M_TILE * D * (kda_plan::STATE_FP32 ? 4 : 2);
  const i64 first = state_base(p, w.n, w.h) + static_cast<i64>(w.m0) * D;
  const u8* const state = static_cast<const u8*>(p.state_in);
  prefetch_to_l2(state + first * (kda_plan::STATE_FP32 ? 4 : 2), bytes);
}

// The ring slot of the CTA's chunk `at`, once the chunk STAGES before it has
// left it (every MMA warp arrived on its `empty` mbarrier).
__device__ __forceinline__ int free_ring_slot(u64* empty, i64 at) {
  constexpr int S = kda_plan::recurrence::STAGES;
  const int slot = static_cast<int>(at % S);
  if (at >= S) {
    mbarrier_wait(empty + slot, static_cast<u32>((at / S - 1) & 1));
  }
  return slot;
}

// A bf16 state travels through SMEM, an fp32 state is loaded and stored from
// the MMA warps' registers directly. A bf16 state's item keeps one state_in
// tile (item i: tile i mod k_state_tiles) from its initial state to its final
// one: the MMA warps read their rows from it, and write their final rows back
// into the same rows (each warp only its own 16), so staging a final state
// never waits for the store of the item before (state_full: the initial rows
// have arrived; state_out_full: the final rows are staged; state_empty: the
// item is done with the tile, stored or read). A tile is the SMEM image of two
// TMA boxes of the M tile's value rows, keys 0 .. 63 and 64 .. 127, each row
// 128 bytes with the 128-byte swizzle (16-byte piece q of row r at piece
// q ^ (r mod 8)), box 0 first: the TMA engine loads and stores it (map
// tma_state, one lane issuing two copies), off the warps' load and store
// path, as the checkpoint rows are stored.
constexpr bool k_state_in_smem = !kda_plan::STATE_FP32;
constexpr int k_state_box_bytes = kda_plan::M_TILE * 128;
constexpr int k_state_tile_bytes = 2 * k_state_box_bytes;
constexpr int k_state_tiles = kda_plan::recurrence::STATE_IN_BYTES / k_state_tile_bytes;
static_assert(kda_plan::HEAD_DIM == 128 && kda_plan::recurrence::STATE_IN_OFFSET % 1024 == 0,
              "state tiles of two 64-key boxes, 1024-byte aligned for the 128-byte swizzle");
static_assert(k_state_tiles >= 2 && kda_plan::recurrence::STATE_FULL_BYTES == 8 * k_state_tiles &&
                  kda_plan::recurrence::STATE_EMPTY_BYTES == 8 * k_state_tiles &&
                  kda_plan::recurrence::STATE_OUT_FULL_BYTES == 8 * k_state_tiles,
              "at least two state tiles (one item's final rows stored while the next item's initial rows "
              "arrive), each with its three mbarriers");
static_assert(kda_plan::M_TILE == 16 * kda_plan::recurrence::MMA_WARPS, "16 value rows per MMA warp");

// Producer warp 1, lane 0: item w's bf16 state rows m0 .. m0 + M_TILE into
// `tile`, two TMA tensor loads (keys 0 .. 63, 64 .. 127 of value rows
// h 128 + m0 .. of the item's slot) whose bytes `full` expects. A template so
// that plans without tma_state (an fp32 state) never instantiate it.
template <class Params>
__device__ __forceinline__ void load_state_tile(const Params& p, const RecurrenceWork& w, u8* tile, u64* full) {
  const int row = w.h * kda_plan::HEAD_DIM + w.m0;
  const int slot = static_cast<int>(state_slot(p, w.n));
  mbarrier_arrive_expect_tx(full, k_state_tile_bytes);
  tma_load_box_3d(tile, p.tma_state, 0, row, slot, full);
  tma_load_box_3d(tile + k_state_box_bytes, p.tma_state, 64, row, slot, full);
}

// Two bf16 values (low half first) as floats, by cvt.f32.bf16: float-typed
// results, so the compiler keeps the state's loop-carried registers as floats
// (unpacking with integer shifts made it carry them as integers and copy each
// accumulator out right after its wgmma was issued, which ptxas answered by
// serializing every wgmma of the kernel).
__device__ __forceinline__ void unpack_bf16x2(u32 pair, float& lo, float& hi) {
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.bf16 %0, l;\ncvt.f32.bf16 %1, h;\n}" : "=f"(lo), "=f"(hi) : "r"(pair));
}

// Where lane `lane` of MMA warp `warp` points ldmatrix / stmatrix matrix pair
// np of its 16 rows in a swizzled state tile: matrix j = lane / 8 of an x4 at
// rows 16 warp + 8 (j % 2) + lane % 8, keys 16 np + 8 (j / 2), i.e. 16-byte
// piece q = 2 np + j / 2 of the row, in box q / 8 at piece (q mod 8) ^ (row
// mod 8) (row mod 8 = lane mod 8; the swizzle puts a matrix's 8 rows in
// distinct banks).
__device__ __forceinline__ int state_tile_at(int warp, int lane, int np) {
  const int row = 16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1);
  const int q = 2 * np + (lane >> 4);
  return (q >> 3) * k_state_box_bytes + row * 128 + 16 * ((q & 7) ^ (lane & 7));
}

// An MMA warp: its 16 rows of a staged bf16 state into fp32 accumulators
// (common/state_rows' layout: rows 16 warp + g and + 8, keys 8 nt + 2t, + 1),
// four 8x8 matrices per ldmatrix: (rows + 0, keys 8 nt), (rows + 8, 8 nt),
// (rows + 0, 8 nt + 8), (rows + 8, 8 nt + 8).
__device__ __forceinline__ void state_from_tile(const u8* tile, float (&acc)[1][16][4]) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int np = 0; np < 8; ++np) {
    u32 r[4];
    ldmatrix_x4(r, tile + state_tile_at(warp, lane, np));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float* const e = &acc[0][2 * np + (j >> 1)][2 * (j & 1)];
      unpack_bf16x2(r[j], e[0], e[1]);
    }
  }
}

// An MMA warp: its 16 rows of the fp32 state as bf16 into `tile` (the inverse
// of state_from_tile, by stmatrix), then each lane fences its writes for the
// async proxy (the TMA stores read them).
__device__ __forceinline__ void state_to_tile(u8* tile, const float (&acc)[1][16][4]) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int np = 0; np < 8; ++np) {
    u32 r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float* const e = &acc[0][2 * np + (j >> 1)][2 * (j & 1)];
      r[j] = pack_bf16x2(e[0], e[1]);
    }
    stmatrix_x4(tile + state_tile_at(warp, lane, np), r);
  }
  fence_async_shared();
}

// Producer warp 3, lane 0: item w's final bf16 state rows from `tile` to the
// state, two TMA tensor stores (the map of load_state_tile), then once they
// have read the tile it is free for the item k_state_tiles later. A template
// as load_state_tile.
template <class Params>
__device__ __forceinline__ void store_state_tile(const Params& p, const RecurrenceWork& w, const u8* tile, u64* empty) {
  const int row = w.h * kda_plan::HEAD_DIM + w.m0;
  const int slot = static_cast<int>(state_slot(p, w.n));
  tma_store_box_3d(tile, p.tma_state, 0, row, slot);
  tma_store_box_3d(tile + k_state_box_bytes, p.tma_state, 64, row, slot);
  bulk_stores_wait_read();
  mbarrier_arrive(empty);
}

// Producer warp 0: the records of the CTA's items, lane 0 issuing them
// (produce_records' per-chunk step: each once its slot is free and, with a
// prepare kernel beside this one, once it is ready).
__device__ __forceinline__ void produce_records_persistent(const kda_plan::KdaParams& p, u8* smem, u64* full,
                                                           u64* empty) {
  namespace R = kda_plan::recurrence;
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    wait_prior_grid(); // the records are the prepare kernel's
  }
  i64 ring = 0;
  for_each_item<ItemLookup::out_of_line>(p, [&](i64, const RecurrenceWork& w, i64 chunks) {
    if (lane == 0) {
      for (i64 c = 0; c < chunks; ++c) {
        const int slot = free_ring_slot(empty, ring + c);
        wait_record_ready(p, (w.seq.first_chunk + c) * p.heads + w.h);
        issue_record_copy(p, smem + slot * R::STAGE_BYTES, full + slot, w.seq, w.h, c);
      }
    }
    __syncwarp();
    ring += chunks;
  });
}

// Producer warp 1 (every lane): for each of the CTA's items, a bf16 state's
// rows into state_in tile i mod k_state_tiles once the tile's previous item
// is done with it (STATES; lane 0 issues the TMA loads), then the V rows,
// each chunk's once its slot is free (V); with NEXT_STATE_TO_L2, as each
// tile load is issued, the CTA's next item's state rows into L2. A kernel
// with a warp to spare gives the two to two warps.
template <bool STATES = true, bool V = true, bool NEXT_STATE_TO_L2 = false, class Params>
__device__ __forceinline__ void produce_v_persistent(const Params& p, u8* smem, u64* full, u64* empty) {
  namespace R = kda_plan::recurrence;
  u64* const state_full = reinterpret_cast<u64*>(smem + R::STATE_FULL_OFFSET);
  u64* const state_empty = reinterpret_cast<u64*>(smem + R::STATE_EMPTY_OFFSET);
  const int lane = threadIdx.x & 31;
  i64 ring = 0;
  i64 local = 0; // the CTA's items so far
  for_each_item<ItemLookup::out_of_line>(p, [&](i64 item, const RecurrenceWork& w, i64 chunks) {
    if constexpr (STATES && k_state_in_smem) { // plans with an fp32 state have no tma_state
      if (p.state_in != nullptr) {
        if (lane == 0) {
          const int b = static_cast<int>(local % k_state_tiles);
          if (local >= k_state_tiles) {
            mbarrier_wait(state_empty + b, static_cast<u32>((local / k_state_tiles - 1) & 1));
          }
          load_state_tile(p, w, smem + R::STATE_IN_OFFSET + b * k_state_tile_bytes, state_full + b);
        }
        // NEXT_STATE_TO_L2: the CTA's next item's rows into L2 meanwhile: its
        // tile load, issued once the item before it is done with that tile,
        // then reads L2 (the fused kernel's items of a few tokens; the
        // decomposed kernels' longer items were slower with it)
        if constexpr (NEXT_STATE_TO_L2) {
          if (item + gridDim.x < persistent_items(p)) {
            const RecurrenceWork next = persistent_work_out_of_line(p, item + gridDim.x);
            if (lane == 0) {
              prefetch_state(p, next);
            }
          }
        }
      }
    }
    ++local;
    if (V) {
      for (i64 c = 0; c < chunks; ++c) {
        const int slot = free_ring_slot(empty, ring + c);
        load_v_rows(p, smem + slot * R::STAGE_BYTES, full + slot, w.seq, w.h, w.m0, c);
      }
    }
    ring += chunks;
  });
  cp_async_wait_all();
}

// Producer warp 2 (every lane): the outputs of the CTA's items, each chunk's
// tile once the MMA warps have staged it, then the tile back to them. With an
// fp32 state, as it starts an item, lane 0 prefetches the next item's state
// into L2: the MMA warps load it when they finish this item.
__device__ __forceinline__ void produce_outputs_persistent(const kda_plan::KdaParams& p, const u8* tiles,
                                                           u64* out_full, u64* out_empty) {
  namespace R = kda_plan::recurrence;
  constexpr int T = R::OUT_FULL_BYTES / 8; // output tiles
  const int lane = threadIdx.x & 31;
  i64 ring = 0;
  for_each_item<ItemLookup::out_of_line>(p, [&](i64 item, const RecurrenceWork& w, i64 chunks) {
    if (!k_state_in_smem && p.state_in != nullptr && item + gridDim.x < persistent_items(p)) {
      const RecurrenceWork next = persistent_work_out_of_line(p, item + gridDim.x);
      if (lane == 0) {
        prefetch_state(p, next);
      }
    }
    for (i64 c = 0; c < chunks; ++c) {
      const i64 at = ring + c;
      const int b = static_cast<int>(at % T);
      mbarrier_wait(out_full + b, static_cast<u32>((at / T) & 1));
      store_output_rows(p, tiles + b * (R::OUT_BYTES / T), w.seq, w.h, w.m0, c);
      mbarrier_arrive(out_empty + b); // this lane's loads of the tile have returned: its stores used them
    }
    ring += chunks;
  });
}

// Producer warp 3: for each of the CTA's items, its checkpoint rows (lane 0,
// plans with checkpoints: their stores as in produce_checkpoints, the tile's
// phases running on across items), then a bf16 state's final rows from the
// item's state tile once the MMA warps have staged them (lane 0, two TMA
// stores), then the tile free for the item k_state_tiles later.
template <class Params>
__device__ __forceinline__ void produce_checkpoints_and_states(const Params& p, u8* smem) {
  namespace R = kda_plan::recurrence;
  const u8* const tile = smem + R::CHECKPOINT_OFFSET;
  u64* const full = reinterpret_cast<u64*>(smem + R::CHECKPOINT_FULL_OFFSET);
  u64* const empty = reinterpret_cast<u64*>(smem + R::CHECKPOINT_EMPTY_OFFSET);
  u64* const state_out_full = reinterpret_cast<u64*>(smem + R::STATE_OUT_FULL_OFFSET);
  u64* const state_empty = reinterpret_cast<u64*>(smem + R::STATE_EMPTY_OFFSET);
  const int lane = threadIdx.x & 31;
  int row = 0;
  i64 local = 0; // the CTA's items so far
  for_each_item<ItemLookup::out_of_line>(p, [&](i64, const RecurrenceWork& w, i64 chunks) {
    if constexpr (kda_plan::CHECKPOINTS != 0) { // plans without checkpoints have no tma_checkpoints
      if (lane == 0) {
        int k = 0;
        for (i64 c = 0; c < chunks; c += p.checkpoint_chunks, ++k) {
          mbarrier_wait(full, static_cast<u32>((row + k) & 1));
          const int matrix = static_cast<int>((p.checkpoint_starts[w.n] + k) * p.heads + w.h);
          tma_store_box_3d(tile, p.tma_checkpoints, 0, w.m0, matrix);
          tma_store_box_3d(tile + k_checkpoint_box_bytes, p.tma_checkpoints, 64, w.m0, matrix);
          bulk_stores_wait_read();
          mbarrier_arrive(empty);
        }
      }
      __syncwarp();
      row += static_cast<int>((chunks + p.checkpoint_chunks - 1) / p.checkpoint_chunks);
    }
    if constexpr (k_state_in_smem) { // plans with an fp32 state have no tma_state
      if (p.state_out != nullptr && lane == 0) {
        const int b = static_cast<int>(local % k_state_tiles);
        mbarrier_wait(state_out_full + b, static_cast<u32>((local / k_state_tiles) & 1));
        store_state_tile(p, w, smem + R::STATE_IN_OFFSET + b * k_state_tile_bytes, state_empty + b);
      }
    }
    ++local;
  });
}

// Every mbarrier of the persistent kernel (thread 0, before the CTA-wide
// barrier after which the roles only meet at mbarriers). A slot's full
// barrier counts one arrival by whoever provides its record (the record
// warp's expect_tx, or a fused kernel's prepare warp) and the V warp's lanes.
// A state tile is freed by the storing warp's lane 0 in calls with a final
// state, else by the MMA warps once they have read it.
__device__ __forceinline__ void init_persistent_barriers(const kda_plan::KdaParams& p, u8* smem) {
  namespace R = kda_plan::recurrence;
  constexpr int S = R::STAGES;
  constexpr int T = R::OUT_FULL_BYTES / 8; // output tiles
  static_assert(R::FULL_BYTES >= 8 * S && R::EMPTY_BYTES >= 8 * S && R::OUT_EMPTY_BYTES == R::OUT_FULL_BYTES,
                "the ring's and the output tiles' mbarriers");
  u64* const state_full = reinterpret_cast<u64*>(smem + R::STATE_FULL_OFFSET);
  u64* const state_empty = reinterpret_cast<u64*>(smem + R::STATE_EMPTY_OFFSET);
  u64* const state_out_full = reinterpret_cast<u64*>(smem + R::STATE_OUT_FULL_OFFSET);
  init_chunk_rings(chunk_rings(smem));
  for (int b = 0; b < k_state_tiles; ++b) {
    mbarrier_init(state_full + b, 1); // the state warp's lane 0 with the TMA loads' bytes
    mbarrier_init(state_empty + b, p.state_out != nullptr ? 1 : R::MMA_WARPS);
    mbarrier_init(state_out_full + b, 32 * R::MMA_WARPS);
  }
  mbarrier_init_fence();
}

// Producer warps 1-3 of the persistent kernel (job = warp - first producer
// warp): the state and V rows, the outputs, the checkpoint rows and final
// states; job 0, the records, is the caller's.
__device__ __forceinline__ void produce_persistent_rows(const kda_plan::KdaParams& p, u8* smem, int job) {
  namespace R = kda_plan::recurrence;
  u64* const full = reinterpret_cast<u64*>(smem + R::FULL_OFFSET);
  u64* const empty = reinterpret_cast<u64*>(smem + R::EMPTY_OFFSET);
  if (job == 1) {
    produce_v_persistent(p, smem, full, empty);
  } else if (job == 2) {
    produce_outputs_persistent(p, smem + R::OUT_OFFSET, reinterpret_cast<u64*>(smem + R::OUT_FULL_OFFSET),
                               reinterpret_cast<u64*>(smem + R::OUT_EMPTY_OFFSET));
  } else if (job == 3) {
    produce_checkpoints_and_states(p, smem);
  }
}

// The MMA warps (after setmaxnreg): each of the CTA's items, its state in,
// its chunks, its state out.
__device__ __forceinline__ void mma_items_persistent(const kda_plan::KdaParams& p, u8* smem) {
  namespace R = kda_plan::recurrence;
  u64* const state_full = reinterpret_cast<u64*>(smem + R::STATE_FULL_OFFSET);
  u64* const state_empty = reinterpret_cast<u64*>(smem + R::STATE_EMPTY_OFFSET);
  u64* const state_out_full = reinterpret_cast<u64*>(smem + R::STATE_OUT_FULL_OFFSET);
  const int lane = threadIdx.x & 31;
  RingPosition ring{0, 0};
  i64 local = 0; // the CTA's items so far
  for_each_item<ItemLookup::inline_copy>(p, [&](i64, const RecurrenceWork& w, i64 chunks) {
    float acc[1][16][4];
    const int b = static_cast<int>(local % k_state_tiles);
    u8* const tile = smem + R::STATE_IN_OFFSET + b * k_state_tile_bytes;
    if (!k_state_in_smem || p.state_in == nullptr) {
      load_state(p, w.n, w.h, w.m0, acc); // fp32, or zeros without an initial state
    } else {
      mbarrier_wait(state_full + b, static_cast<u32>((local / k_state_tiles) & 1));
      state_from_tile(tile, acc);
      __syncwarp(); // the warp's ldmatrix reads are done
      if (p.state_out == nullptr && lane == 0) {
        mbarrier_arrive(state_empty + b); // no final state: the tile is free once read
      }
    }
    ring.row += mma_chunks(p, smem, acc, mma_lane(w.m0), chunks, ring);
    ring.chunk += chunks;
    if (p.state_out != nullptr) {
      if (!k_state_in_smem) {
        store_state(p, w.n, w.h, w.m0, acc);
      } else {
        if (p.state_in == nullptr && local >= k_state_tiles) {
          // no initial rows arrived in the tile: wait for its previous item's store
          mbarrier_wait(state_empty + b, static_cast<u32>((local / k_state_tiles - 1) & 1));
        }
        state_to_tile(tile, acc); // the warp's own rows, which it alone read
        mbarrier_arrive(state_out_full + b);
      }
    }
    ++local;
  });
}

__device__ __forceinline__ void recurrence_persistent(const kda_plan::KdaParams& p) {
  namespace R = kda_plan::recurrence;
  static_assert(R::MMA_FIRST_WARP == 0 && R::PRODUCER_FIRST_WARP == R::MMA_WARPS && R::PRODUCER_WARPS == 4,
                "MMA warps first, then a producer warpgroup of four warps");
  extern __shared__ __align__(1024) u8 smem[]; // the checkpoint tile's swizzle needs 1024-byte aligned boxes
  if constexpr (kda_plan::PREPARE_WALKS_ITEMS != 0) {
    // the split launched in programmatic order: the walk launched after this
    // grid may start once every CTA of it is resident
    allow_dependent_launch();
  }
  const int warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) {
    init_persistent_barriers(p, smem);
  }
  __syncthreads(); // the last CTA-wide barrier: from here on the roles only meet at mbarriers
  if (warp >= R::PRODUCER_FIRST_WARP) {
    setmaxnreg_dec<R::PRODUCER_REGISTERS>(); // the whole producer warpgroup
    const int job = warp - R::PRODUCER_FIRST_WARP;
    if (job == 0) {
      produce_records_persistent(p, smem, reinterpret_cast<u64*>(smem + R::FULL_OFFSET),
                                 reinterpret_cast<u64*>(smem + R::EMPTY_OFFSET));
    } else {
      produce_persistent_rows(p, smem, job);
    }
    return;
  }
  setmaxnreg_inc<R::MMA_REGISTERS>();
  mma_items_persistent(p, smem);
}

} // namespace frag
} // namespace kda
