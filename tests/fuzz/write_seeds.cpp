// Writes the seed corpus of fuzz_cache_readers into DIR: a small bundle of
// two entries, one of its manifests and a JSON document, each behind the
// byte that selects its reader (scripts/fuzz.sh runs this first).
#include "cache/bundle.hpp"
#include "cache/cache_key.hpp"
#include "cache/manifest.hpp"

#include <fstream>
#include <iostream>
#include <string>

namespace {

void write(const std::string& path, char reader, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << reader << bytes;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_seeds DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  using namespace kda::cache;
  std::vector<BundleInput> inputs;
  for (const char* shape : {"d128.in_bf16.state_bf16.fixed", "d128.in_bf16.state_fp32.packed"}) {
    BundleInput in;
    in.key_fields = {"1", "3", "kdajit-0.1.0-emit4-0123456789abcdef", std::string(64, '8'), shape, "sm_90a",
                     "13.0", "libnvrtc.so.13.0.88, 118210104 bytes", std::string(64, '5'),
                     {"-arch=sm_90a", "-std=c++17"}};
    in.entry_points = {{"kda_prefill_seed_main", {{"registers", 128}, {"stack_frame_bytes", 0}}}};
    in.launch = {{"schedule", "seed"}, {"entries", nlohmann::json::array()}};
    const std::string cubin = std::string("\x7f" "ELF seed cubin ") + shape;
    in.cubin.assign(cubin.begin(), cubin.end());
    inputs.push_back(std::move(in));
  }
  const Bytes bundle = encode_bundle({"kdajit-0.1.0-emit4-0123456789abcdef", "3", "1", "13.0",
                                      "libnvrtc.so.13.0.88, 118210104 bytes"},
                                     inputs);
  write(dir + "/bundle", '\0', std::string(bundle.begin(), bundle.end()));
  const Bundle decoded = Bundle::decode(bundle, "seed.kdab");
  write(dir + "/manifest", '\1', serialize_manifest(decoded.entries().front().manifest));
  write(dir + "/json", '\2', R"({"schedules": "all", "targets": ["sm_90a"], "shapes": [{"state": "bf16"}]})");
  return 0;
}
