// kdajit fragment: common/sequences
// Where a sequence's tokens and chunks are: fixed layout (B sequences of length
// T) or packed (B = 1, cu_seqlens int32 or int64). Zero-length sequences own
// no chunks. Uses kda_plan::CHUNK_SIZE, kda_plan::LAYOUT_PACKED, KdaParams.
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

__device__ __forceinline__ SequenceSpan sequence_span(const kda_plan::KdaParams& p, int n) {
  SequenceSpan s;
  if (kda_plan::LAYOUT_PACKED) {
    s.start = load_offset(p, n);
    s.length = load_offset(p, n + 1) - s.start;
    s.first_chunk = p.chunk_offsets[n];
  } else {
    s.start = static_cast<i64>(n) * p.seq_len;
    s.length = p.seq_len;
    s.first_chunk = static_cast<i64>(n) * chunks_of(p.seq_len);
  }
  return s;
}

// The sequence owning global chunk `chunk`, or -1 past the last chunk.
__device__ __forceinline__ int sequence_of_chunk(const kda_plan::KdaParams& p, i64 chunk) {
  if (!kda_plan::LAYOUT_PACKED) {
    const i64 per = chunks_of(p.seq_len);
    const i64 n = per > 0 ? chunk / per : p.num_seqs;
    return n < p.num_seqs ? static_cast<int>(n) : -1;
  }
  if (chunk >= p.chunk_offsets[p.num_seqs]) {
    return -1;
  }
  // Last n with chunk_offsets[n] <= chunk; zero-length sequences before it
  // share its offset and are skipped by taking the last.
  int lo = 0;
  int hi = p.num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.chunk_offsets[mid] <= chunk) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// chunk_offsets[n] = sum over m < n of ceil(len_m / CHUNK_SIZE), n = 0..N.
// One block; a block-wide scan over the sequences in tiles of blockDim.x.
__device__ __forceinline__ void compute_chunk_offsets(const kda_plan::KdaParams& p) {
  __shared__ i64 carry;
  __shared__ i64 partial[1024];
  if (threadIdx.x == 0) {
    carry = 0;
    p.chunk_offsets[0] = 0;
  }
  __syncthreads();
  for (int base = 0; base < p.num_seqs; base += blockDim.x) {
    const int n = base + threadIdx.x;
    partial[threadIdx.x] = n < p.num_seqs ? chunks_of(load_offset(p, n + 1) - load_offset(p, n)) : 0;
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
}

} // namespace kda
