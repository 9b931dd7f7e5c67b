#include "cache/disk_cache.hpp"
#include "cache/file_lock.hpp"

#include "cache_test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kda::cache;
using kda::cache::test::ScratchDir;

namespace {

// Appends one line to `path` (O_APPEND: atomic across processes).
void append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    const std::string text = line + "\n";
    [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
  }
}

std::size_t count_lines(const std::string& path) {
  if (!test::exists(path)) {
    return 0;
  }
  const std::string text = test::read_text_file(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Forks `children` processes that wait for a common start signal, then each
// call get_or_build on one key with a slow build that logs itself to
// `<scratch>/builds`. Returns how many children exited 0.
int race_processes(const ScratchDir& s, const EnvMap& env, int children) {
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> pids;
  std::cout.flush();
  std::fflush(nullptr); // a child must not flush the parent's buffered output again
  for (int i = 0; i < children; ++i) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      char byte = 0;
      const bool started = ::read(go[0], &byte, 1) == 0; // EOF: everyone starts
      int status = 1;
      try {
        DiskCache cache(resolve_cache_config(env), [](const std::string&) {});
        const CacheEntryPtr entry = cache.get_or_build(test::sample_key(), [&] {
          append_line(s / "builds", std::to_string(::getpid()));
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          return test::sample_built();
        });
        status = (started && entry && entry->cubin == test::sample_built().cubin) ? 0 : 1;
      } catch (...) {
        status = 2;
      }
      ::_exit(status); // no Catch2 teardown in the child
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]); // releases all children at once
  int ok = 0;
  for (const pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    ok += (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 1 : 0;
  }
  return ok;
}

} // namespace

TEST_CASE("threads asking for one key share one build", "[cache][concurrency]") {
  ScratchDir s;
  DiskCache cache(resolve_cache_config(test::scratch_env(s)));
  const CacheKey key = test::sample_key();
  std::atomic<int> builds{0};
  std::atomic<int> ready{0};
  std::vector<CacheEntryPtr> results(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < 8) {
        std::this_thread::yield();
      }
      results[i] = cache.get_or_build(key, [&] {
        ++builds;
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        return test::sample_built();
      });
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  CHECK(builds == 1);
  for (const CacheEntryPtr& r : results) {
    REQUIRE(r);
    CHECK(r == results[0]);
  }
  CHECK(cache.stats().get(Statistic::compile) == 1);
  CHECK(cache.stats().get(Statistic::hit_after_wait) + cache.stats().get(Statistic::hit_memory) == 7);
}

TEST_CASE("a failed build reaches every waiting thread", "[cache][concurrency]") {
  ScratchDir s;
  DiskCache cache(resolve_cache_config(test::scratch_env(s)));
  std::atomic<int> builds{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        cache.get_or_build(test::sample_key(), [&]() -> BuiltEntry {
          ++builds;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          throw std::runtime_error("compile failed");
        });
      } catch (const std::runtime_error&) {
        ++failures;
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  CHECK(failures == 4);
  CHECK(builds >= 1); // threads arriving after the failure build again
}

TEST_CASE("processes racing on one key build once and commit one entry", "[cache][concurrency]") {
  ScratchDir s;
  const EnvMap env = test::scratch_env(s);
  REQUIRE(resolve_cache_config(env).lock_dir.has_value());
  CHECK(race_processes(s, env, 6) == 6);
  CHECK(count_lines(s / "builds") == 1);
  const CacheKey key = test::sample_key();
  const std::string shard = s / ("cache/v1/entries/" + key.shard());
  CHECK(test::list_dir(shard) == std::vector<std::string>{key.hex()});
  CHECK(test::list_dir(s / "cache/v1/tmp").empty());
  DiskCache cache(resolve_cache_config(env));
  CHECK(cache.lookup(key).hit());
}

TEST_CASE("without locks, racing processes still converge on one valid entry", "[cache][concurrency]") {
  ScratchDir s;
  EnvMap env = test::scratch_env(s);
  env["KDAJIT_LOCK"] = "none";
  CHECK(race_processes(s, env, 4) == 4);
  CHECK(count_lines(s / "builds") >= 1);
  const CacheKey key = test::sample_key();
  CHECK(test::list_dir(s / ("cache/v1/entries/" + key.shard())) == std::vector<std::string>{key.hex()});
  CHECK(test::list_dir(s / "cache/v1/tmp").empty());
  DiskCache cache(resolve_cache_config(env));
  CHECK(cache.lookup(key).hit());
}

TEST_CASE("file locks exclude each other and time out", "[cache][concurrency]") {
#ifndef F_OFD_SETLK
  WARN("skipped: needs open-file-description locks to test within one process");
  return;
#endif
  ScratchDir s;
  const std::string path = s / "k.lock";
  LockAttempt first = acquire_file_lock(path, std::chrono::milliseconds(0));
  REQUIRE(first.outcome == LockOutcome::acquired);
  const LockAttempt second = acquire_file_lock(path, std::chrono::milliseconds(50));
  CHECK(second.outcome == LockOutcome::timed_out);
  CHECK(second.waited >= std::chrono::milliseconds(50));
  first.lock.release();
  CHECK(acquire_file_lock(path, std::chrono::milliseconds(0)).outcome == LockOutcome::acquired);
  const LockAttempt missing = acquire_file_lock(s / "no/such/dir.lock", std::chrono::milliseconds(0));
  CHECK(missing.outcome == LockOutcome::failed);
  CHECK(missing.error == ENOENT);
}

TEST_CASE("a lock held too long: build privately after the timeout", "[cache][concurrency]") {
#ifndef F_OFD_SETLK
  WARN("skipped: needs open-file-description locks to test within one process");
  return;
#endif
  ScratchDir s;
  EnvMap env = test::scratch_env(s);
  env["KDAJIT_LOCK_TIMEOUT"] = "0.1";
  DiskCache cache(resolve_cache_config(env));
  const CacheKey key = test::sample_key();
  const LockAttempt held = acquire_file_lock(s / ("locks/" + key.hex() + ".lock"), std::chrono::milliseconds(0));
  REQUIRE(held.outcome == LockOutcome::acquired);
  int builds = 0;
  const auto start = std::chrono::steady_clock::now();
  const CacheEntryPtr entry = cache.get_or_build(key, [&] {
    ++builds;
    return test::sample_built();
  });
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(100));
  CHECK(builds == 1);
  CHECK(cache.stats().get(Statistic::lock_timeout) == 1);
  CHECK(cache.lookup(key).hit());
}
