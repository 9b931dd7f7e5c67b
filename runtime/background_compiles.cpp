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
// destroyed. So every static a build uses must exist before its join is
// registered: NVRTC makes some of its own during the first compile of the
// process (a process that exited 80 to 350 ms into its first compile, a
// background one, spun forever in NVRTC once those were gone), so NVRTC first
// compiles a one-line kernel on the caller's thread
// (NvrtcCompiler::create_process_state, about 25 ms once per process); and
// kdajit's own (the generator's identity, made on first use, freed by exit
// while a build thread still read it) are made by keying the kernel on the
// caller's thread too.
class BackgroundBuilds {
public:
  static BackgroundBuilds& instance() {
    static BackgroundBuilds& k_builds = *new BackgroundBuilds;
    return k_builds;
  }

  // The build of (schedule, target, shape), unless one was started before.
  // On the caller's thread first: NVRTC's process state, and the kernel's
  // key (every static the key, the cache lookup and the collection after a
  // compile use is made here); a kernel found built (a bundle, the disk
  // cache) or a key that cannot be made ends the build at once. Only then is
  // the exit join registered and the thread started, which compiles.
  BackgroundState start(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    const BuildKey key = key_of(schedule, target, shape);
    {
      std::lock_guard lock(m_mutex);
      if (auto it = m_builds.find(key); it != m_builds.end()) {
        return state_of(it->second);
      }
    }
    try {
      runtime::NvrtcCompiler().create_process_state(target); // at once after the first compile
    } catch (const std::exception&) {
      // no NVRTC: the key below fails and says why
    }
    bool built = false;
    std::optional<std::string> failure;
    try {
      KernelRegistry& registry = KernelRegistry::instance();
      built = registry.prepare_if_built(schedule, target, shape) != nullptr;
      (void)registry.current_identity();
    } catch (const std::exception& e) {
      failure = failure_message(schedule, target, shape, e.what());
    }
    std::lock_guard lock(m_mutex);
    auto [it, inserted] = m_builds.try_emplace(key);
    Build& build = it->second;
    if (inserted) {
      if (built || failure) {
        build.done = true;
        build.failure = std::move(failure);
      } else {
        std::atexit([] { BackgroundBuilds::instance().join_all(); });
        m_threads.emplace_back([this, &schedule, target, shape, &build] { run(schedule, target, shape, build); });
      }
    }
    return state_of(build);
  }

  BackgroundStatus status(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    std::lock_guard lock(m_mutex);
    BackgroundStatus status;
    auto it = m_builds.find(key_of(schedule, target, shape));
    if (it == m_builds.end()) {
      return status;
    }
    Build& build = it->second;
    status.state = state_of(build);
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
  static BackgroundState state_of(const Build& build) {
    return !build.done ? BackgroundState::building : build.failure ? BackgroundState::failed : BackgroundState::built;
  }

  static std::string failure_message(const Schedule& schedule, const Target& target, const ShapeKey& shape,
                                     std::string_view why) {
    return fmt::format("the background compile of {} for {} ({}) failed{}{}", schedule.name, target.name,
                       shape.canonical(), why.empty() ? "" : ": ", why);
  }

  static BuildKey key_of(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
    return {schedule.name, &schedule, target.name, shape.canonical()};
  }

  void run(const Schedule& schedule, const Target& target, const ShapeKey& shape, Build& build) {
    std::optional<std::string> failure;
    try {
      (void)KernelRegistry::instance().prepare(schedule, target, shape);
    } catch (const std::exception& e) {
      failure = failure_message(schedule, target, shape, e.what());
    } catch (...) {
      failure = failure_message(schedule, target, shape, "");
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

BackgroundState build_in_background(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
  return BackgroundBuilds::instance().start(schedule, target, shape);
}

void wait_for_background_builds() {
  BackgroundBuilds::instance().join_all();
}

} // namespace kda
