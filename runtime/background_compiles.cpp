#include "runtime/background_compiles.hpp"

#include "runtime/kernel_registry.hpp"
#include "runtime/nvrtc_compiler.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace kda {
namespace {

using BuildKey = std::tuple<std::string, const Schedule*, std::string, std::string>;

struct Build {
  bool done = false;
  std::optional<std::string> failure;
  bool reported = false;
};

// Never destroyed (a thread may still be reading it while statics go).
// Exit joins the threads first: each start registers the join with atexit
// again, so that it runs before the destructors of every static made until
// then (exit runs handlers and destructors in the reverse order of their
// registration); a build thread must not be left using objects that exit has
// destroyed. NVRTC makes some of its own during the first compile of the
// process: a process that exited 80 to 350 ms into its first compile, a
// background one, spun forever in NVRTC once those were gone. So before the
// first registration NVRTC compiles a one-line kernel on the caller's thread
// (NvrtcCompiler::create_process_state, about 25 ms once per process).
class BackgroundBuilds {
public:
  static BackgroundBuilds& instance() {
    static BackgroundBuilds& k_builds = *new BackgroundBuilds;
    return k_builds;
  }

  void start(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    try { // outside the lock (status() must not wait for it); at once after the first compile
      runtime::NvrtcCompiler().create_process_state(target);
    } catch (const std::exception&) {
      // no NVRTC: the build fails and reports why
    }
    std::lock_guard lock(m_mutex);
    auto [it, inserted] = m_builds.try_emplace(key_of(schedule, target, shape));
    if (inserted) {
      Build& build = it->second;
      std::atexit([] { BackgroundBuilds::instance().join_all(); });
      m_threads.emplace_back([this, &schedule, target, shape, &build] { run(schedule, target, shape, build); });
    }
  }

  BackgroundStatus status(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    std::lock_guard lock(m_mutex);
    BackgroundStatus status;
    auto it = m_builds.find(key_of(schedule, target, shape));
    if (it == m_builds.end()) {
      return status;
    }
    Build& build = it->second;
    status.state = !build.done     ? BackgroundState::building
                   : build.failure ? BackgroundState::failed
                                   : BackgroundState::built;
    if (build.failure && !build.reported) {
      build.reported = true;
      status.report = build.failure;
    }
    return status;
  }

  void join_all() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(m_mutex);
      threads.swap(m_threads);
    }
    for (std::thread& t : threads) {
      if (t.joinable()) {
        t.join();
      }
    }
  }

private:
  static BuildKey key_of(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    return {schedule.name, &schedule, target.name, shape.canonical()};
  }

  void run(const Schedule& schedule, const Target& target, const ShapeKey& shape, Build& build) {
    std::optional<std::string> failure;
    try {
      (void)KernelRegistry::instance().prepare(schedule, target, shape);
    } catch (const std::exception& e) {
      failure = fmt::format("the background compile of {} for {} ({}) failed: {}", schedule.name, target.name,
                            shape.canonical(), e.what());
    } catch (...) {
      failure = fmt::format("the background compile of {} for {} ({}) failed", schedule.name, target.name,
                            shape.canonical());
    }
    std::lock_guard lock(m_mutex);
    build.done = true;
    build.failure = std::move(failure);
  }

  std::mutex m_mutex;
  std::map<BuildKey, Build> m_builds; // nodes are stable: threads keep a reference
  std::vector<std::thread> m_threads;
};

} // namespace

BackgroundStatus background_build(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
  return BackgroundBuilds::instance().status(schedule, target, shape);
}

void build_in_background(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
  BackgroundBuilds::instance().start(schedule, target, shape);
}

void wait_for_background_builds() {
  BackgroundBuilds::instance().join_all();
}

} // namespace kda
