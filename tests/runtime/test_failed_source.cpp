// A rejected source is written only into a directory private to this user,
// through new files renamed into place: nobody else can choose where it goes.
#include "runtime/failed_source.hpp"

#include "runtime_kernels.hpp"
#include "test_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

using namespace kda;
using Catch::Contains;

namespace {

unsigned mode_of(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

} // namespace

TEST_CASE("failed source: written with its log into a private directory, created 0700", "[runtime][nvrtc]") {
  const std::filesystem::path scratch = test::fresh_scratch_dir("failed_private");
  const std::filesystem::path dir = scratch / "dumps";
  const runtime::FailedSource w =
      runtime::write_failed_source(dir, "kda_prefill_x_c16.cu", "int x = ;\n", {"-arch=sm_90a"}, "error: here");
  REQUIRE(w.problem.empty());
  REQUIRE_FALSE(w.path.empty());
  CHECK(mode_of(dir) == 0700);
  CHECK(mode_of(w.path) == 0600);
  CHECK(mode_of(w.path + ".log") == 0600);
  CHECK(test::read_text(w.path) == "int x = ;\n");
  CHECK_THAT(test::read_text(w.path + ".log"), Contains("-arch=sm_90a") && Contains("error: here"));
  std::filesystem::remove_all(scratch);
}

TEST_CASE("failed source: a directory others can write is refused, nothing written", "[runtime][nvrtc]") {
  const std::filesystem::path dir = test::fresh_scratch_dir("failed_shared");
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  const runtime::FailedSource w = runtime::write_failed_source(dir, "k.cu", "src", {}, "log");
  CHECK(w.path.empty());
  CHECK_THAT(w.problem, Contains(dir.string()) && Contains("group- or other-writable (mode 0777)"));
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("failed source: a symlink planted at the file's name is replaced, never followed", "[runtime][nvrtc]") {
  const std::filesystem::path scratch = test::fresh_scratch_dir("failed_symlink");
  const std::filesystem::path dir = scratch / "dumps";
  const std::filesystem::path victim = scratch / "victim.txt";
  std::ofstream(victim) << "precious\n";
  // the name a write of this source takes (the hash of options and source)
  const std::string name = runtime::write_failed_source(dir, "k.cu", "src", {"-o"}, "log").path;
  REQUIRE_FALSE(name.empty());
  std::filesystem::remove(name);
  std::filesystem::remove(name + ".log");
  std::filesystem::create_symlink(victim, name);
  std::filesystem::create_symlink(victim, name + ".log");
  const runtime::FailedSource w = runtime::write_failed_source(dir, "k.cu", "src", {"-o"}, "log");
  REQUIRE(w.path == name);
  CHECK(test::read_text(victim) == "precious\n");
  CHECK_FALSE(std::filesystem::is_symlink(name));
  CHECK(test::read_text(name) == "src");
  std::filesystem::remove_all(scratch);
}

TEST_CASE("failed source: the default directory is per user", "[runtime][nvrtc]") {
  const std::filesystem::path dir = runtime::default_failure_dir();
  CHECK(dir.filename() == "kdajit-failed-sources-" + std::to_string(::geteuid()));
}
