// The C API (kdajit/kda_c.h) without a GPU: argument defaults, refusals that
// need no driver, compile-only mode as KDA_ERROR_TOOLCHAIN, thread-local errors.
#include "fake_args.hpp"
#include "runtime/cuda_driver.hpp"
#include "kdajit/kda_c.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>

using namespace kda;
using Catch::Contains;

namespace {

kda_tensor c_tensor(const void* data, kda_dtype dtype, std::initializer_list<std::int64_t> shape) {
  kda_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<std::int32_t>(shape.size());
  std::int32_t i = 0;
  for (std::int64_t d : shape) {
    t.shape[i++] = d;
  }
  return t;
}

// B = 2, T = 64, H = 4 with fake device pointers.
kda_prefill_args fake_c_args() {
  kda_prefill_args a;
  kda_prefill_args_init(&a);
  using test::device0_slot;
  a.q = c_tensor(device0_slot(test::q_slot), KDA_BF16, {2, 64, 4, 128});
  a.k = c_tensor(device0_slot(test::k_slot), KDA_BF16, {2, 64, 4, 128});
  a.v = c_tensor(device0_slot(test::v_slot), KDA_BF16, {2, 64, 4, 128});
  a.g = c_tensor(device0_slot(test::g_slot), KDA_BF16, {2, 64, 4, 128});
  a.beta = c_tensor(device0_slot(test::beta_slot), KDA_BF16, {2, 64, 4});
  a.a_log = c_tensor(device0_slot(test::a_log_slot), KDA_FP32, {4});
  a.dt_bias = c_tensor(device0_slot(test::dt_bias_slot), KDA_FP32, {4, 128});
  return a;
}

bool empty(const kda_tensor& t) {
  if (t.data != nullptr || t.rank != 0 || t.dtype != KDA_BF16) {
    return false;
  }
  for (int i = 0; i < 4; ++i) {
    if (t.shape[i] != 0 || t.strides[i] != 0) {
      return false;
    }
  }
  return true;
}

} // namespace

TEST_CASE("c api: kda_prefill_args_init", "[runtime][c_api]") {
  kda_prefill_args a;
  std::memset(&a, 0xab, sizeof(a));
  kda_prefill_args_init(&a);
  CHECK(a.scale == 1.0 / std::sqrt(128.0));
  CHECK(a.lower_bound == -5.0);
  CHECK(a.output_final_state == 0);
  CHECK(a.stream == nullptr);
  CHECK(a.schedule == nullptr);
  CHECK(a.family == nullptr);
  CHECK(a.struct_size == sizeof(kda_prefill_args));
  CHECK(a.checkpoint_every_n_tokens == 0);
  for (const kda_tensor* t : {&a.q, &a.k, &a.v, &a.g, &a.beta, &a.a_log, &a.dt_bias, &a.initial_state, &a.cu_seqlens,
                              &a.out, &a.final_state, &a.ssm_state_indices, &a.seq_order, &a.state_checkpoints,
                              &a.checkpoint_cu_starts}) {
    CHECK(empty(*t));
  }
  kda_prefill_args_init(nullptr); // ignored
}

TEST_CASE("c api: refusals before any driver call", "[runtime][c_api]") {
  kda_buffer out = nullptr;
  kda_buffer final_state = nullptr;
  SECTION("NULL args") {
    CHECK(kda_recurrent_prefill(nullptr, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("argument 'args': is NULL"));
  }
  SECTION("no out tensor and no out_buffer") {
    const kda_prefill_args a = fake_c_args();
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, nullptr, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("argument 'out_buffer'"));
  }
  SECTION("an unknown family") {
    kda_prefill_args a = fake_c_args();
    a.family = "tensor_cores";
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("argument 'family': unknown family 'tensor_cores'"));
  }
  SECTION("a final state to allocate and no final_state_buffer") {
    kda_prefill_args a = fake_c_args();
    a.output_final_state = 1;
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, nullptr) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("argument 'final_state_buffer'"));
  }
  SECTION("struct_size: not initialised, too small, or from a newer kdajit") {
    kda_prefill_args a = fake_c_args();
    a.struct_size = 0;
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("argument 'struct_size': is 0: initialise the arguments with "
                                                       "kda_prefill_args_init"));
    a.struct_size = KDA_PREFILL_ARGS_MIN_SIZE - 8;
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("is smaller than the first version of kda_prefill_args"));
    a.struct_size = sizeof(kda_prefill_args) + 8;
    CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TENSOR);
    CHECK_THAT(std::string(kda_last_error()), Contains("the caller was built against a newer kdajit"));
  }
  CHECK(out == nullptr);
  CHECK(final_state == nullptr);
}

TEST_CASE("c api: a caller of the first version reaches the call (its struct ends at family)", "[runtime][c_api]") {
  if (runtime::driver_status().available) {
    WARN("a CUDA driver is present: the compile-only path is not exercised here");
    return;
  }
  kda_prefill_args a = fake_c_args();
  a.struct_size = KDA_PREFILL_ARGS_MIN_SIZE;
  a.checkpoint_every_n_tokens = 20; // past its struct: never read (it would be refused)
  kda_buffer out = nullptr;
  kda_buffer final_state = nullptr;
  CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, &out, &final_state) == KDA_ERROR_TOOLCHAIN);
}

TEST_CASE("c api: without a driver a valid-looking call is a toolchain error", "[runtime][c_api]") {
  if (runtime::driver_status().available) {
    WARN("a CUDA driver is present: the compile-only path is not exercised here");
    return;
  }
  const kda_prefill_args a = fake_c_args();
  kda_buffer out = nullptr;
  kda_buffer final_state = nullptr;
  void* out_ptr = nullptr;
  CHECK(kda_recurrent_prefill(&a, &out_ptr, nullptr, &out, &final_state) == KDA_ERROR_TOOLCHAIN);
  const std::string message = kda_last_error();
  CHECK_FALSE(message.empty());
  CHECK_THAT(message, Contains("driver"));
  CHECK_THAT(message, Contains("compile-only mode"));
  CHECK(out == nullptr);
  CHECK(out_ptr == nullptr);
  CHECK(final_state == nullptr);
}

TEST_CASE("c api: the last error is per thread and reset by the next call", "[runtime][c_api]") {
  REQUIRE(kda_recurrent_prefill(nullptr, nullptr, nullptr, nullptr, nullptr) == KDA_ERROR_TENSOR);
  REQUIRE(std::string(kda_last_error()) != "");
  std::string other;
  std::thread([&] { other = kda_last_error(); }).join();
  CHECK(other.empty());
  // The next call replaces the message.
  const kda_prefill_args a = fake_c_args();
  CHECK(kda_recurrent_prefill(&a, nullptr, nullptr, nullptr, nullptr) == KDA_ERROR_TENSOR);
  CHECK_THAT(std::string(kda_last_error()), Contains("out_buffer") && !Contains("'args'"));
}

TEST_CASE("c api: buffers", "[runtime][c_api]") {
  kda_buffer_release(nullptr); // a no-op
  CHECK(kda_buffer_data(nullptr) == nullptr);
}
