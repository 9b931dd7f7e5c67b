#include "tools/bench_workloads.hpp"

namespace kda::tools {

const std::vector<BenchWorkload>& bench_workloads() {
  static const std::vector<BenchWorkload> k_workloads = {
      {"h96_fixed_8192", 96, {8192}, 1.420, 2.615, true},
      {"h96_mixed", 96, {1300, 547, 2048, 963, 271, 3063}, 1.363, 2.661, true},
      {"h96_uniform_8x1024", 96, {1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}, 1.171, 2.631, true},
      {"h64_fixed_8192", 64, {8192}, 1.216, 1.747, true},
      {"h64_mixed", 64, {1300, 547, 2048, 963, 271, 3063}, 0.995, 1.805, true},
      {"h64_uniform_8x1024", 64, {1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}, 0.790, 1.762, true},
      {"h16_fixed_32768", 16, {32768}, 3.508, 2.352, false},
      {"h32_uniform_8x4096", 32, {4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, 1.519, 3.438, false},
      {"h8_fixed_2048", 8, {2048}, 0.221, 0.996, false},
      {"h64_fixed_65536", 64, {65536}, 9.539, 13.680, false},
      // many short sequences (the state's traffic dominates): FlashKDA only
      {"h96_packed_1024x8", 96, std::vector<std::int64_t>(1024, 8), 9.428, 0.0, false},
      {"h32_packed_256x64", 32, std::vector<std::int64_t>(256, 64), 1.203, 0.0, false},
      // the middle of many_short (9 to 64 tokens): no peer measured it, it is
      // here so that `kdajit tune` chooses that class's entry on more than
      // 64-token sequences
      {"h32_packed_1024x16", 32, std::vector<std::int64_t>(1024, 16), 0.0, 0.0, false},
  };
  return k_workloads;
}

std::vector<const BenchWorkload*> workloads_in_class(ShapeClass c, int sm_count, std::int64_t max_tokens) {
  std::vector<const BenchWorkload*> out;
  for (const BenchWorkload& w : bench_workloads()) {
    const std::int64_t pairs = static_cast<std::int64_t>(w.seqlens.size()) * w.heads;
    std::int64_t tokens = 0;
    for (std::int64_t l : w.seqlens) {
      tokens += l;
    }
    const std::int64_t sequences = static_cast<std::int64_t>(w.seqlens.size());
    if (shape_class(pairs, sm_count, average_tokens(tokens, sequences)) == c && tokens <= max_tokens) {
      out.push_back(&w);
    }
  }
  return out;
}

std::int64_t minimal_bytes(const BenchWorkload& w, bool with_state) {
  std::int64_t tokens = 0;
  for (std::int64_t l : w.seqlens) {
    tokens += l;
  }
  const std::int64_t per_token_head = 4 * 128 * 2 + 2 + 128 * 2;
  const std::int64_t state = with_state ? static_cast<std::int64_t>(w.seqlens.size()) * w.heads * 2 * 128 * 128 * 2 : 0;
  return tokens * w.heads * per_token_head + state + w.heads * (4 + 128 * 4);
}

std::int64_t checkpoint_bytes(const BenchWorkload& w, std::int64_t every) {
  std::int64_t rows = 0;
  for (std::int64_t l : w.seqlens) {
    rows += (l + every - 1) / every;
  }
  return rows * w.heads * 128 * 128 * 2;
}

} // namespace kda::tools
