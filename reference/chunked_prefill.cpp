#include "reference/chunked_prefill.hpp"

#include "compiler/errors.hpp"
#include "reference/chunk_update.hpp"
#include "reference/prefill_driver.hpp"

#include <fmt/format.h>

namespace kda::reference {
namespace {

void validate_config(const ChunkConfig& config, const PrefillOptions& options) {
  KDA_INTERNAL_ASSERT(config.chunk_size == 16 || config.chunk_size == 32 || config.chunk_size == 64,
                      fmt::format("chunk size must be 16, 32 or 64, got {}", config.chunk_size));
  if (config.anchored && !options.lower_bound) {
    throw TensorError("lower_bound", fmt::format("the anchored chunk-{} algorithm needs a lower bound (its anchor is "
                                                 "{} * lower_bound * log2 e)",
                                                 config.chunk_size, config.chunk_size / 2));
  }
  const std::int64_t every = options.checkpoints.every_n_tokens;
  if (every != 0 && every % config.chunk_size != 0) {
    throw TensorError("checkpoint_every_n_tokens",
                      fmt::format("interval {} is not a multiple of the chunk size {}", every, config.chunk_size));
  }
}

} // namespace

void run_chunked_recurrence(const HeadTokens& tokens, double scale, const ChunkConfig& config,
                            std::span<double> state, std::span<double> output, CheckpointSink& checkpoints) {
  for (std::int64_t begin = 0; begin < tokens.length(); begin += config.chunk_size) {
    if (checkpoints.due(begin)) {
      checkpoints.record(begin, state);
    }
    const ChunkOperands ops = prepare_chunk(tokens, begin, scale, config);
    const ChunkCarriers carriers = compute_chunk_carriers(ops, state);
    apply_fused_update(ops, carriers, state,
                       output.subspan(static_cast<std::size_t>(begin * k_head_dim),
                                      static_cast<std::size_t>(ops.valid_rows * k_head_dim)));
  }
}

PrefillResult run_chunked_prefill(const PrefillInputs& inputs, const PrefillOptions& options,
                                  const ChunkConfig& config) {
  validate_config(config, options);
  const double scale = options.scale;
  return run_prefill(inputs, options,
                     [scale, &config](const HeadTokens& tokens, std::span<double> state, std::span<double> output,
                                      CheckpointSink& checkpoints) {
                       run_chunked_recurrence(tokens, scale, config, state, output, checkpoints);
                     });
}

} // namespace kda::reference
