// kdajit fragment: common/prepare_chunk
// The chunk-16 prepare kernel: one CTA of four warps per (chunk, head) (or
// CHUNKS_PER_CTA consecutive chunks), each chunk's rows loaded by cp.async
// and prepared into its workspace record by common/prepare_step.
// Uses kda_plan::prepare::*, common/prepare_ops and common/prepare_step.
namespace kda {
namespace frag {

// The kernel: CHUNKS_PER_CTA consecutive chunks of head blockIdx.y per CTA.
// With a 2-slot ring (STAGES 2) the rows of chunk i + 1 are in flight while
// chunk i is prepared; the raw tiles and the operands that reuse their bytes
// are per slot, the rest is shared and protected by the chunk's barriers.
__device__ __forceinline__ void prepare_chunk(const kda_plan::KdaParams& p) {
  namespace P = kda_plan::prepare;
  constexpr int C = kda_plan::CHUNK_SIZE;
  constexpr int D = kda_plan::HEAD_DIM;
  constexpr int N = P::CHUNKS_PER_CTA;
  constexpr int S = P::STAGES;
  static_assert(C == 16, "prepare_chunk handles chunk 16");
  static_assert(P::THREADS == D && D == 128, "one thread per key column, 4 warps");
  static_assert(S == 1 || S == 2, "one slot, or two for loading the next chunk ahead");
  static_assert(S == 1 || (P::Q_RAW_STAGED && P::K_RAW_STAGED && P::G_RAW_STAGED), "raw tiles per ring slot");
  extern __shared__ __align__(128) u8 smem[];
  allow_dependent_launch(); // the recurrence may set up while the last chunks are prepared
  const int h = blockIdx.y;
  const i64 first = static_cast<i64>(blockIdx.x) * N;
  const float a_scale = __expf(p.a_log[h]);
  const float bias = p.dt_bias[h * D + threadIdx.x];

  // what the step asks for a chunk: its rows' sigmoid(beta), its workspace record
  auto row_beta = [&](const PrepareChunk& c) { return [&p, c, h] { return chunk_row_beta(p, c, h, threadIdx.x); }; };
  auto record_at = [&](const PrepareChunk& c) {
    return [&p, c, h] { return p.workspace + (c.chunk * p.heads + h) * static_cast<i64>(kda_plan::WS_RECORD_BYTES); };
  };
  PrepareChunk c = prepare_chunk_at(p, first);
  if (!c.exists) {
    return;
  }
  load_chunk_rows<PaddedRows<P::Q_RAW_PITCH>>(p, c, h, smem, 0);
  cp_async_commit();
  if constexpr (N == 1) { // straight line: no loop state to keep live under a tight register bound
    cp_async_wait<0>();
    __syncthreads();
    prepare_one_chunk<CtaTeam>(p, c, smem, 0, a_scale, bias, row_beta(c), record_at(c));
    return;
  }
  for (int i = 0; i < N; ++i) {
    const int stage = S == 1 ? 0 : i % 2;
    PrepareChunk next;
    if (i + 1 < N) {
      next = prepare_chunk_at(p, first + i + 1);
    }
    if constexpr (S == 2) {
      if (next.exists) {
        load_chunk_rows<PaddedRows<P::Q_RAW_PITCH>>(p, next, h, smem, 1 - stage); // that slot's last readers passed the previous barriers
      }
      cp_async_commit();
      cp_async_wait<1>(); // chunk i's rows
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    prepare_one_chunk<CtaTeam>(p, c, smem, stage, a_scale, bias, row_beta(c), record_at(c));
    if (!next.exists) {
      break;
    }
    if constexpr (S == 1) {
      __syncthreads(); // the single slot is free again
      load_chunk_rows<PaddedRows<P::Q_RAW_PITCH>>(p, next, h, smem, 0);
      cp_async_commit();
    }
    c = next;
  }
}

} // namespace frag
} // namespace kda
