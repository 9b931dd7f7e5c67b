// Eager calls from several host threads at once: each
// thread on its own stream, all on CU_STREAM_PER_THREAD (a different stream on
// every thread, so a different workspace), and all on the legacy default
// stream (one stream, one workspace the calls take turns on). Each thread runs
// problems of growing size, so workspaces grow while other threads' calls are
// queued. Every result must equal the same call run alone.
#include "device_problem.hpp"
#include "runtime/context.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>

using namespace kda;
using namespace kda::test;

namespace {

constexpr int k_threads = 4;

// Thread t's problems: fixed layouts of growing size (records, and so the workspace, grow).
std::vector<std::unique_ptr<DeviceProblem>> problems_of(int t) {
  std::vector<std::unique_ptr<DeviceProblem>> out;
  out.push_back(std::make_unique<DeviceProblem>(1, 256 + 64 * t, 4, 900 + 10 * t));
  out.push_back(std::make_unique<DeviceProblem>(2, 1024 + 128 * t, 8, 901 + 10 * t));
  out.push_back(std::make_unique<DeviceProblem>(1, 3000 + 256 * t, 12, 902 + 10 * t));
  return out;
}

} // namespace

TEST_CASE("gpu threads: calls from several threads give the results of the same calls run alone",
          "[gpu][runtime][threads][contract]") {
  std::vector<std::vector<std::unique_ptr<DeviceProblem>>> problems;
  std::vector<std::vector<std::vector<std::uint8_t>>> alone(k_threads);
  for (int t = 0; t < k_threads; ++t) {
    problems.push_back(problems_of(t));
    for (auto& p : problems[t]) {
      p->reset();
      recurrent_kda_prefill(p->args(nullptr));
      KDA_CU(cuCtxSynchronize);
      alone[t].push_back(p->result());
    }
  }
  struct Mode {
    const char* name;
    bool own_stream;
    CUstream shared;
  };
  for (const Mode mode : {Mode{"own streams", true, nullptr}, Mode{"CU_STREAM_PER_THREAD", false, CU_STREAM_PER_THREAD},
                          Mode{"the legacy default stream", false, nullptr}}) {
    for (int t = 0; t < k_threads; ++t) {
      for (auto& p : problems[t]) {
        p->reset();
      }
    }
    KDA_CU(cuCtxSynchronize);
    std::vector<std::string> errors(k_threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < k_threads; ++t) {
      threads.emplace_back([&, t] {
        try {
          runtime::ensure_current_context();
          std::unique_ptr<Stream> own = mode.own_stream ? std::make_unique<Stream>() : nullptr;
          const CUstream stream = own ? own->s : mode.shared;
          for (int repeat = 0; repeat < 2; ++repeat) {
            for (auto& p : problems[t]) {
              // state back to the initial one, stream-ordered before the call
              KDA_CU(cuMemcpyHtoDAsync, reinterpret_cast<CUdeviceptr>(p->state.data()), p->initial_state.data(),
                     p->state.bytes(), stream);
              recurrent_kda_prefill(p->args(stream));
            }
          }
          KDA_CU(cuStreamSynchronize, stream);
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (std::thread& th : threads) {
      th.join();
    }
    INFO(mode.name);
    for (int t = 0; t < k_threads; ++t) {
      CHECK(errors[t].empty());
      for (std::size_t i = 0; i < problems[t].size(); ++i) {
        INFO("thread " << t << " problem " << i);
        CHECK(problems[t][i]->result() == alone[t][i]);
      }
    }
  }
}
