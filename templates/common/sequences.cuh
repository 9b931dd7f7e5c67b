// kdajit fragment: common/sequences
// Where a sequence's tokens, chunks, state and checkpoints are: fixed layout
// (B sequences of length T) or packed (B = 1, cu_seqlens int32 or int64).
// Zero-length sequences own no chunks. Uses kda_plan::CHUNK_SIZE,
// kda_plan::LAYOUT_PACKED, kda_plan::CHECKPOINTS, KdaParams.
namespace kda {

struct SequenceSpan {
  i64 start;   // first token (row of the [tokens, H, 128] view)
  i64 length;  // tokens
  i64 first_chunk; // global chunk index of its first chunk (workspace record row)
};

__device__ __forceinline__ i64 load_offset(const kda_plan::KdaParams& p, int i) {
  return p.offsets_i64 ? static_cast<const i64*>(p.cu_seqlens)[i] : static_cast<i64>(static_cast<const int*>(p.cu_seqlens)[i]);
}

__device__ __forceinline__ i64 chunks_of(i64 length) {
  return (length + kda_plan::CHUNK_SIZE - 1) / kda_plan::CHUNK_SIZE;
}

// The sum of x over lanes 0..lane (a Kogge-Stone scan by shuffles; whole warp).
__device__ __forceinline__ int warp_inclusive_sum(int x) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int step = 1; step < 32; step *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, x, step);
    if (lane >= step) {
      x += up;
    }
  }
  return x;
}
// Packed calls of at most WARP_TABLE_MAX_SEQUENCES sequences have no
// chunk_offsets table (the runtime does not launch that kernel): a warp
// derives its entries from cu_seqlens itself. Lane l gets sequence l's first
// chunk (an exclusive scan of the chunk counts; lane N: the total), its chunk
// count (0 from lane N on) and its tokens [start, end) (0 from lane N on), so
// that a sequence's span is shuffled from its lane (warp_table_span), never
// loaded again. Every lane of the warp must call it (it shuffles), never from
// under a lane-dependent condition; one load of cu_seqlens per lane.
struct WarpTableEntry {
  i64 first_chunk;
  i64 chunks;
  i64 start;
  i64 end;
};
__device__ __forceinline__ bool warp_sequence_table(const kda_plan::KdaParams& p) {
  static_assert(kda_plan::WARP_TABLE_MAX_SEQUENCES < 32, "lanes 0..N hold the N + 1 table entries");
  return kda_plan::LAYOUT_PACKED && p.num_seqs <= kda_plan::WARP_TABLE_MAX_SEQUENCES;
}
__device__ __forceinline__ WarpTableEntry warp_table_entry(const kda_plan::KdaParams& p) {
  const int lane = threadIdx.x & 31;
  // lane l loads offset l (l <= N) and takes offset l + 1 from lane l + 1
  const i64 start = lane <= p.num_seqs ? load_offset(p, lane) : 0;
  const i64 next = __shfl_down_sync(0xffffffffu, start, 1);
  const bool owns = lane < p.num_seqs;
  // 32-bit scan (five shuffles on the CTA's critical path; the chunk_offsets
  // table is int32 too)
  const int chunks = owns ? static_cast<int>(chunks_of(next - start)) : 0;
  const int inclusive = warp_inclusive_sum(chunks);
  return {static_cast<i64>(inclusive - chunks), static_cast<i64>(chunks), owns ? start : 0, owns ? next : 0};
}
// Sequence n's span from the warp table (whole warp, n the same on every lane).
__device__ __forceinline__ SequenceSpan warp_table_span(const WarpTableEntry& e, int n) {
  SequenceSpan s;
  s.start = __shfl_sync(0xffffffffu, e.start, n);
  s.length = __shfl_sync(0xffffffffu, e.end, n) - s.start;
  s.first_chunk = __shfl_sync(0xffffffffu, e.first_chunk, n);
  return s;
}
// Sequence n's tokens, its first chunk already known (sequence_of_chunk).
__device__ __forceinline__ SequenceSpan sequence_span(const kda_plan::KdaParams& p, int n, i64 first_chunk) {
  SequenceSpan s;
  if (kda_plan::LAYOUT_PACKED) {
    s.start = load_offset(p, n);
    s.length = load_offset(p, n + 1) - s.start;
  } else {
    s.start = static_cast<i64>(n) * p.seq_len;
    s.length = p.seq_len;
  }
  s.first_chunk = first_chunk;
  return s;
}
// Where sequence n lies. Whole warp in a packed layout of at most
// WARP_TABLE_MAX_SEQUENCES sequences (n the same on every lane).
__device__ __forceinline__ SequenceSpan sequence_span(const kda_plan::KdaParams& p, int n) {
  SequenceSpan s;
  if (kda_plan::LAYOUT_PACKED) {
    if (warp_sequence_table(p)) {
      return warp_table_span(warp_table_entry(p), n);
    }
    s.start = load_offset(p, n);
    s.length = load_offset(p, n + 1) - s.start;
    s.first_chunk = static_cast<i64>(p.chunk_offsets[n]);
  } else {
    s.start = static_cast<i64>(n) * p.seq_len;
    s.length = p.seq_len;
    s.first_chunk = static_cast<i64>(n) * chunks_of(p.seq_len);
  }
  return s;
}

// The sequence owning global chunk `chunk`, or -1 past the last chunk, and its
// span (`seq`, set only for a sequence). Up to WARP_TABLE_MAX_SEQUENCES packed
// sequences: from the warp table (no chunk_offsets kernel ran; the span
// shuffled from it, no second dependent load). Every
// lane of the calling warp passes the same chunk (a prepare CTA's threads
// all call it). Packed: the last n with chunk_offsets[n] <= chunk (zero-length
// sequences share their successor's offset and are skipped by taking the
// last), by a search of radix 32: each level samples 32 offsets `stride`
// apart from the last one found so far and keeps the last sample <= chunk
// (the samples <= chunk are a prefix: the offsets do not decrease), so up to
// 31 sequences take one dependent load and up to 1,023 two, where a binary
// search took log2 N + 1 of them at the start of every prepare CTA.
__device__ __forceinline__ int sequence_of_chunk(const kda_plan::KdaParams& p, i64 chunk, SequenceSpan& seq) {
  if (!kda_plan::LAYOUT_PACKED) {
    const i64 per = chunks_of(p.seq_len);
    const i64 n = per > 0 ? chunk / per : p.num_seqs;
    if (n >= p.num_seqs) {
      return -1;
    }
    seq = sequence_span(p, static_cast<int>(n), n * per);
    return static_cast<int>(n);
  }
  if (warp_sequence_table(p)) { // lanes 0..N hold the table's N + 1 entries
    const int lane = threadIdx.x & 31;
    const WarpTableEntry e = warp_table_entry(p); // every lane: it shuffles
    const bool at_or_before = lane <= p.num_seqs && e.first_chunk <= chunk;
    const int found = __popc(__ballot_sync(0xffffffffu, at_or_before)) - 1;
    seq = warp_table_span(e, found); // every lane: it shuffles (found = N: zeros, unused)
    return found < p.num_seqs ? found : -1;
  }
  const i64 entries = static_cast<i64>(p.num_seqs) + 1; // chunk_offsets[0] = 0 <= chunk
  const i64 lane = threadIdx.x & 31;
  i64 stride = 1;
  while (stride * 32 < entries) {
    stride *= 32;
  }
  i64 found = 0; // chunk_offsets[found] <= chunk; the answer lies in [found, found + 32 stride)
  for (; stride > 0; stride /= 32) {
    const i64 i = found + lane * stride;
    const bool at_or_before = i < entries && p.chunk_offsets[i] <= chunk;
    found += (__popc(__ballot_sync(0xffffffffu, at_or_before)) - 1) * stride;
  }
  if (found >= p.num_seqs) {
    return -1; // found = N: at or past the last chunk's end
  }
  seq = sequence_span(p, static_cast<int>(found), p.chunk_offsets[found]);
  return static_cast<int>(found);
}

// Length buckets of the sequence order: 0 for empty sequences, else
// 1 + 4 floor(log2 chunks) + the two bits below the leading one (four
// buckets per octave; chunk counts from 2^31 on share the top bucket).
constexpr int k_length_buckets = 128;

__device__ __forceinline__ int length_bucket(i64 chunks) {
  if (chunks <= 0) {
    return 0;
  }
  const u32 c = static_cast<u32>(min(chunks, static_cast<i64>(0x7fffffff)));
  const int lead = 31 - __clz(c);
  const u32 below = lead >= 2 ? (c >> (lead - 2)) : (c << (2 - lead));
  return 1 + 4 * lead + static_cast<int>(below & 3u);
}

__device__ __forceinline__ int length_bucket_of(const kda_plan::KdaParams& p, int n) {
  return length_bucket(chunks_of(load_offset(p, n + 1) - load_offset(p, n)));
}

// The packed layout's sequence order: a permutation of 0..N-1 in the
// workspace right after chunk_offsets, longest sequences first (by length
// bucket, then by index: a stable counting sort, the same order every call).
__device__ __forceinline__ int* sequence_order(const kda_plan::KdaParams& p) {
  return p.chunk_offsets + p.num_seqs + 1;
}

// The (sequence, y) a CTA of a sequences-by-heads grid works on, y = head x
// row blocks + row block. With the caller's seq_order (packed only) grid
// position i takes sequence seq_order[i]. Otherwise packed layouts take the
// sequences in sequence_order: CTAs are dispatched in linear block order, so every head of
// the longest sequences starts in the first wave and the last waves hold the
// short chains (a list schedule close to longest-processing-time first; in
// launch order a long chain could start last and run alone). Fixed layouts:
// every sequence is as long, the block index as it is. With the sequence's
// span: up to WARP_TABLE_MAX_SEQUENCES packed sequences from the one warp
// table the order was ranked on.
struct RecurrencePair {
  int n;
  int y;
  SequenceSpan seq;
};

// The packed layout's sequence at `position` of the order the grids take
// (the caller's seq_order, else the longest first) and where it lies. Whole
// warp: up to WARP_TABLE_MAX_SEQUENCES sequences rank by shuffles instead of
// reading sequence_order.
struct OrderedSequence {
  int n;
  SequenceSpan seq;
};

__device__ __forceinline__ OrderedSequence packed_sequence_at(const kda_plan::KdaParams& p, int position) {
  if (p.seq_order != nullptr) { // n is the same on every lane (sequence_span may shuffle)
    const int n = p.seq_order[position];
    return {n, sequence_span(p, n)};
  }
  if (warp_sequence_table(p)) {
    // the order's definition, lane l ranking sequence l: longer buckets
    // first, then lower indices (compute_sequence_order's stable sort)
    const int lane = threadIdx.x & 31;
    const WarpTableEntry e = warp_table_entry(p); // every lane: it shuffles
    const int bucket = lane < p.num_seqs ? length_bucket(e.chunks) : -1;
    int rank = 0;
    for (int m = 0; m < p.num_seqs; ++m) {
      const int other = __shfl_sync(0xffffffffu, bucket, m);
      rank += (other > bucket || (other == bucket && m < lane)) ? 1 : 0;
    }
    const unsigned at = __ballot_sync(0xffffffffu, lane < p.num_seqs && rank == position);
    const int n = __ffs(static_cast<int>(at)) - 1;
    return {n, warp_table_span(e, n)};
  }
  const int n = sequence_order(p)[position];
  return {n, sequence_span(p, n)};
}

__device__ __forceinline__ RecurrencePair recurrence_pair(const kda_plan::KdaParams& p) {
  if (!kda_plan::LAYOUT_PACKED) {
    const int n = static_cast<int>(blockIdx.x);
    return {n, static_cast<int>(blockIdx.y), sequence_span(p, n)};
  }
  const i64 linear = static_cast<i64>(blockIdx.y) * gridDim.x + blockIdx.x;
  const OrderedSequence s = packed_sequence_at(p, static_cast<int>(linear / gridDim.y));
  return {s.n, static_cast<int>(linear % gridDim.y), s.seq};
}

// sequence_order by a counting sort over length buckets: from the histogram
// `next` (the sequences per bucket, counted by compute_chunk_offsets while it
// scans the lengths) the buckets' first positions (longest bucket first), then
// per tile of blockDim.x sequences each one's rank among the same bucket's
// earlier sequences (within its warp by __match_any_sync, across warps by
// per-warp counts). One block.
__device__ __forceinline__ void compute_sequence_order(const kda_plan::KdaParams& p, int (&next)[k_length_buckets]) {
  constexpr int K = k_length_buckets;
  __shared__ int warp_counts[32][K]; // per tile: each warp's sequences per bucket
  int* const order = sequence_order(p);
  const int warps = static_cast<int>(blockDim.x >> 5);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (warp == 0) { // exclusive scan from the top bucket down; lane l: buckets K - 1 - 4 l ..
    static_assert(K == 4 * 32, "four buckets per lane");
    int counts[4];
    int sum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      counts[i] = next[K - 1 - 4 * lane - i];
      sum += counts[i];
    }
    int before = warp_inclusive_sum(sum) - sum;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      next[K - 1 - 4 * lane - i] = before;
      before += counts[i];
    }
  }
  __syncthreads();
  for (int base = 0; base < p.num_seqs; base += blockDim.x) {
    const int n = base + static_cast<int>(threadIdx.x);
    const bool valid = n < p.num_seqs;
    const int b = valid ? length_bucket_of(p, n) : -1;
    for (int i = threadIdx.x; i < warps * K; i += blockDim.x) {
      warp_counts[i / K][i % K] = 0;
    }
    __syncthreads();
    const unsigned same = __match_any_sync(0xffffffffu, b);
    const int rank = __popc(same & ((1u << lane) - 1u));
    if (valid && rank == 0) {
      warp_counts[warp][b] = __popc(same);
    }
    __syncthreads();
    if (valid) {
      int before = 0;
      for (int w = 0; w < warp; ++w) {
        before += warp_counts[w][b];
      }
      order[next[b] + before + rank] = n;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      int tile = 0;
      for (int w = 0; w < warps; ++w) {
        tile += warp_counts[w][k];
      }
      next[k] += tile;
    }
    __syncthreads();
  }
}

// chunk_offsets[n] = sum over m < n of ceil(len_m / CHUNK_SIZE), n = 0..N,
// and the length buckets' histogram, then sequence_order. One block; a
// block-wide scan over the sequences in tiles of blockDim.x.
__device__ __forceinline__ void compute_chunk_offsets(const kda_plan::KdaParams& p) {
  __shared__ i64 carry;
  __shared__ i64 partial[1024];
  __shared__ int buckets[k_length_buckets]; // sequences per length bucket
  if (threadIdx.x == 0) {
    carry = 0;
    p.chunk_offsets[0] = 0;
  }
  for (int b = threadIdx.x; b < k_length_buckets; b += blockDim.x) {
    buckets[b] = 0;
  }
  __syncthreads();
  for (int base = 0; base < p.num_seqs; base += blockDim.x) {
    const int n = base + threadIdx.x;
    const i64 chunks = n < p.num_seqs ? chunks_of(load_offset(p, n + 1) - load_offset(p, n)) : 0;
    if (n < p.num_seqs) {
      atomicAdd(&buckets[length_bucket(chunks)], 1);
    }
    partial[threadIdx.x] = chunks;
    __syncthreads();
    for (int step = 1; step < static_cast<int>(blockDim.x); step *= 2) {
      const i64 add = threadIdx.x >= static_cast<unsigned>(step) ? partial[threadIdx.x - step] : 0;
      __syncthreads();
      partial[threadIdx.x] += add;
      __syncthreads();
    }
    if (n < p.num_seqs) {
      p.chunk_offsets[n + 1] = static_cast<int>(carry + partial[threadIdx.x]);
    }
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) {
      carry += partial[threadIdx.x];
    }
    __syncthreads();
  }
  if (p.seq_order == nullptr) { // the caller's order replaces longest-first
    compute_sequence_order(p, buckets);
  }
}

// The slot of sequence n's state: n in the state tensor, or state_indices[n]
// of a pool (a caller contract: unique and in range).
__device__ __forceinline__ i64 state_slot(const kda_plan::KdaParams& p, int n) {
  return p.state_indices != nullptr ? static_cast<i64>(p.state_indices[n]) : static_cast<i64>(n);
}

// Where the state of (sequence n, head h) starts (elements): slots
// state_slot_stride elements apart.

__device__ __forceinline__ i64 state_base(const kda_plan::KdaParams& p, int n, int h) {
  return state_slot(p, n) * p.state_slot_stride + static_cast<i64>(h) * kda_plan::HEAD_DIM * kda_plan::HEAD_DIM;
}

// Native checkpoints (plans with kda_plan::CHECKPOINTS): the state before
// local chunk c is row c / checkpoint_chunks of sequence n when c is a
// multiple of checkpoint_chunks (row 0: the initial state), i.e. the state
// after r x interval tokens for every r x interval < length. A recurrence
// walks its chunks in order with a cursor of one int, the next chunk a row is
// due before (no division per chunk, no pointer kept live through the chunk
// loop), and forms a row's address only when the row is due.
struct CheckpointCursor {
  int next; // the local chunk the next row is due before
};
__device__ __forceinline__ CheckpointCursor checkpoint_cursor() {
  return {0};
}
// Row r of sequence n's checkpoints, head h ([128][128] bf16).
__device__ __forceinline__ bf16* checkpoint_row(const kda_plan::KdaParams& p, int n, int h, i64 r) {
  return p.checkpoints + ((p.checkpoint_starts[n] + r) * p.heads + h) * kda_plan::HEAD_DIM * kda_plan::HEAD_DIM;
}
// Where the row due before local chunk c goes, or nullptr when none is due;
// c advances by one between calls.
__device__ __forceinline__ bf16* checkpoint_take(const kda_plan::KdaParams& p, CheckpointCursor& cursor, int n, int h,
                                                 i64 c) {
  if (!kda_plan::CHECKPOINTS || static_cast<int>(c) != cursor.next) {
    return nullptr;
  }
  bf16* const row = checkpoint_row(p, n, h, cursor.next / p.checkpoint_chunks);
  cursor.next += p.checkpoint_chunks;
  return row;
}

} // namespace kda
