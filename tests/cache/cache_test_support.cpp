#include "cache_test_support.hpp"

#include "test_support.hpp"

#include "cache/posix_io.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace kda::cache::test {

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kdajit-cache-test-XXXXXX";
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  m_path = pattern;
  m_owner_pid = ::getpid();
}

ScratchDir::~ScratchDir() {
  if (::getpid() != m_owner_pid) {
    return;
  }
  // Tests make directories read-only; give the owner its bits back first.
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           m_path, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      ::chmod(it->path().c_str(), 0700);
    }
  }
  ::chmod(m_path.c_str(), 0700);
  remove_tree_quietly(m_path);
}

EnvMap scratch_env(const ScratchDir& scratch) {
  return {{"KDAJIT_CACHE_DIR", scratch / "cache"}, {"KDAJIT_LOCK_DIR", scratch / "locks"}};
}

CacheKeyFields sample_fields() {
  CacheKeyFields f;
  f.layout_version = "v1";
  f.abi_version = "abi-1";
  f.generator_id = "kdagen-0.1.0+templates-0123456789abcdef";
  f.schedule_id = "8f4c0d2e5a1b3c7d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7";
  f.shape_key = "d128.bf16.bshd";
  f.target = "sm_90a";
  f.nvrtc_version = "nvrtc-13.0.48";
  f.nvrtc_build = "libnvrtc.so.13.0.48, 104857600 bytes";
  f.source_sha256 = std::string(64, '5');
  f.options = {"--std=c++17", "--gpu-architecture=sm_90a", "-default-device"};
  return f;
}

CacheKey sample_key(const std::string& shape_key) {
  CacheKeyFields f = sample_fields();
  f.shape_key = shape_key;
  return make_cache_key(f);
}

BuiltEntry sample_built(const std::string& cubin_text) {
  BuiltEntry b;
  b.manifest.entry_points.push_back({"kda_prefill_test", {{"registers", 128}, {"spill_bytes", 0}}});
  b.manifest.launch = {{"block", {384, 1, 1}}, {"dynamic_smem", 227328}};
  b.manifest.producer = Producer::jit;
  b.cubin = string_as_bytes(cubin_text);
  b.source = "extern \"C\" __global__ void kda_prefill_test() {}\n";
  b.log = "ptxas info: Used 128 registers\n";
  return b;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out.good());
  out << text;
}

std::string read_text_file(const std::string& path) {
  return kda::test::read_text(path);
}

bool exists(const std::string& path) {
  return path_exists(path);
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return names;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace kda::cache::test
