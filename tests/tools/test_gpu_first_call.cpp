// [gpu] The tiered JIT through `kdajit first-call` (new processes, each with
// an empty kernel cache): the first call of h64_uniform_8x1024 runs the LLVM
// tier's token kernel while NVRTC builds the routed kernel in the
// background, the call after that build runs the routed kernel (the
// handover), the two outputs agree (each meets spec section 8 in the GPU
// matrices, test_gpu_contract.cpp and test_gpu_prefill.cpp), and a process
// that exits while its background compile runs exits cleanly with both
// kernels in its cache.
#include "test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

std::string run(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    out.append(buffer, n);
  }
  status = pclose(pipe);
  return out;
}

} // namespace

TEST_CASE("gpu tiered: the first call runs tier 0, the routed kernel takes over once built", "[gpu][tier0][tiered]") {
  int status = 0;
  const std::string out =
      run(kda::test::kdajit_binary() + " first-call --workload h64_uniform_8x1024 --processes 1 --json", status);
  REQUIRE(status == 0);
  const nlohmann::json j = nlohmann::json::parse(out);
  REQUIRE(j["runs"].size() == 2);
  for (const nlohmann::json& r : j["runs"]) {
    INFO(r.dump());
    if (r["tiered"] == true) {
      CHECK(r["tier"] == "tier0");
      CHECK(r["schedule"] == "token_llvm_smem");
      CHECK(r["after_build_tier"] == "routed");
      CHECK(r["after_build_schedule"] != "token_llvm_smem");
      CHECK(r["tier0_vs_routed_rel_rms"].get<double>() <= 2e-2);
      CHECK(r["tier0_vs_routed_rel_rms"].get<double>() > 0.0); // two kernels, two roundings
      CHECK(r["cache_entries_at_exit"] == 2);
      CHECK(r["cuda_compute_cache_files_at_exit"].get<int>() > 0); // its compiles were real, not the CUDA cache's
      CHECK(r.contains("ir_ms"));
      CHECK(r.contains("cubin_ms"));
    } else {
      CHECK(r["tier"] == "routed");
      CHECK(r["schedule"] != "token_llvm");
      CHECK(r.contains("nvrtc_ms"));
      CHECK(r["cache_entries_at_exit"] == 1);
    }
  }
  WARN("first call, median (ms): " << j["median"].dump());
}

TEST_CASE("gpu tiered: exit during the background compile is clean and the cache keeps both kernels",
          "[gpu][tier0][tiered]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kdajit-tiered-exit";
  const std::filesystem::path compute_cache = dir.string() + "-cuda-compute-cache"; // first-call's, beside it
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(compute_cache);
  int status = 0;
  const std::string out = run(kda::test::kdajit_binary() + " first-call --child --exit-after-first-call "
                                                          "--workload h64_uniform_8x1024 --cache-dir " + dir.string(),
                              status);
  CHECK(status == 0);
  CHECK(nlohmann::json::parse(out)["tier"] == "tier0");
  int listed = 0;
  const std::string entries = run(std::string("KDAJIT_CACHE_DIR=") + dir.string() + " " + kda::test::kdajit_binary() +
                                      " cache ls --json",
                                  listed);
  CHECK(listed == 0);
  const nlohmann::json ls = nlohmann::json::parse(entries);
  INFO(ls.dump());
  CHECK(ls["entries"].size() == 2); // the token kernel and the routed one, whole
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(compute_cache);
}
