// kdajit verify [--seqlens a,b,c | --fixed B,T] [--heads H] [--state bf16|fp32] [--gate G] [--seed N]
//               [--schedule S [--target T]] [--json]
// Runs one random prefill on the GPU through the public API (packed layout,
// state updated in place) and checks it against the CPU fp64 reference with
// spec section 8's tolerances: per (sequence, head) relative RMS <= 1e-2 of
// the output and of the final state, element-wise |x - ref| <= 2e-2 +
// 2e-2 |ref| on the last chunk of every sequence, no NaN (output poisoned
// first). Exit 0 when it holds, 8 when it does not.
#include "reference/token_reference.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "kdajit/kda.hpp"
#include "tools/args.hpp"
#include "tools/json_output.hpp"
#include "tools/number_options.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"
#include "tools/shape_options.hpp"
#include "tools/verify_run.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>

namespace kda::tools {
namespace {

struct Upload {
  CUdeviceptr ptr = 0;
  template <typename T>
  explicit Upload(const std::vector<T>& host) {
    KDA_CU(cuMemAlloc, &ptr, std::max<std::size_t>(16, host.size() * sizeof(T)));
    if (!host.empty()) {
      KDA_CU(cuMemcpyHtoD, ptr, host.data(), host.size() * sizeof(T));
    }
  }
  ~Upload() { runtime::driver_api().cuMemFree(ptr); }
  Upload(const Upload&) = delete;
  Upload& operator=(const Upload&) = delete;
  template <typename T>
  std::vector<T> download(std::size_t n) const {
    std::vector<T> out(n);
    KDA_CU(cuCtxSynchronize);
    KDA_CU(cuMemcpyDtoH, out.data(), ptr, n * sizeof(T));
    return out;
  }
  void* data() const { return reinterpret_cast<void*>(ptr); }
};

std::vector<Bf16> constant_bf16(std::size_t n, float value) {
  return std::vector<Bf16>(n, float_to_bf16(value));
}

std::vector<Bf16> random_bf16(std::size_t n, std::mt19937_64& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Bf16> out(n);
  for (Bf16& x : out) {
    x = float_to_bf16(scale * normal(rng));
  }
  return out;
}

} // namespace

VerifyFigures run_verification(const VerifySpec& spec) {
  std::mt19937_64 rng(spec.seed);
  const std::int64_t heads = spec.heads;
  const bool fp32 = spec.fp32_state;
  const bool packed = !spec.seqlens.empty();
  const std::int64_t batch = packed ? 1 : spec.batch;
  std::vector<std::int64_t> cu{0};
  if (packed) {
    for (std::int64_t l : spec.seqlens) {
      cu.push_back(cu.back() + l);
    }
  } else {
    for (std::int64_t b = 0; b < spec.batch; ++b) {
      cu.push_back(cu.back() + spec.tokens);
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(cu.size()) - 1;
  const std::int64_t tokens = packed ? cu.back() : spec.tokens;
  const std::int64_t rows = cu.back();
  const std::size_t elems = static_cast<std::size_t>(rows * heads * 128);
  const std::size_t state_elems = static_cast<std::size_t>(n * heads * 128 * 128);
  const std::vector<Bf16> q = random_bf16(elems, rng, 1.0f), k = random_bf16(elems, rng, 1.0f),
                          v = random_bf16(elems, rng, 1.0f),
                          beta = random_bf16(static_cast<std::size_t>(rows * heads), rng, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::uniform_real_distribution<float> wide(-8.0f, 8.0f);
  std::vector<float> a_log(static_cast<std::size_t>(heads)), dt_bias(static_cast<std::size_t>(heads * 128));
  std::vector<Bf16> g;
  switch (spec.gate) {
  case VerifyGate::standard:
    g = random_bf16(elems, rng, 1.0f);
    for (float& x : a_log) {
      x = uniform(rng);
    }
    for (float& x : dt_bias) {
      x = uniform(rng);
    }
    break;
  case VerifyGate::minus8:
  case VerifyGate::plus8:
    g = constant_bf16(elems, spec.gate == VerifyGate::minus8 ? -8.0f : 8.0f);
    break;
  case VerifyGate::bias8:
    g = constant_bf16(elems, 0.0f);
    for (float& x : dt_bias) {
      x = wide(rng);
    }
    break;
  }
  const std::vector<Bf16> state_bf16 = random_bf16(state_elems, rng, 0.25f);
  std::vector<float> state_fp32(state_elems);
  for (std::size_t i = 0; i < state_elems; ++i) {
    state_fp32[i] = bf16_to_float(state_bf16[i]);
  }

  // Reference on a copy of the state.
  std::vector<Bf16> ref_state_bf16 = state_bf16;
  std::vector<float> ref_state_fp32 = state_fp32;
  reference::PrefillInputs in;
  in.batch = batch;
  in.tokens = tokens;
  in.heads = heads;
  in.q = q;
  in.k = k;
  in.v = v;
  in.g = g;
  in.beta = beta;
  in.a_log = a_log;
  in.dt_bias = dt_bias;
  if (packed) {
    in.cu_seqlens = std::span<const std::int64_t>(cu);
  }
  in.initial_state = fp32 ? reference::StateBuffer(std::span<float>(ref_state_fp32), n)
                          : reference::StateBuffer(std::span<Bf16>(ref_state_bf16), n);
  const reference::PrefillResult ref = reference::run_reference_prefill(in, reference::PrefillOptions{});

  // GPU.
  runtime::ensure_current_context();
  Upload dq(q), dk(k), dv(v), dg(g), dbeta(beta), da(a_log), ddt(dt_bias), dcu(cu);
  Upload dstate = fp32 ? Upload(state_fp32) : Upload(state_bf16);
  Upload dout(std::vector<std::uint16_t>(elems, 0xffff)); // poisoned: NaN
  PrefillArgs a;
  const std::vector<std::int64_t> shape{batch, tokens, heads, 128};
  a.q = TensorRef::contiguous(dq.data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(dk.data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(dv.data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(dg.data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(dbeta.data(), ElementType::bf16, {batch, tokens, heads});
  a.a_log = TensorRef::contiguous(da.data(), ElementType::fp32, {heads});
  a.dt_bias = TensorRef::contiguous(ddt.data(), ElementType::fp32, {heads * 128});
  if (packed) {
    a.cu_seqlens = TensorRef::contiguous(dcu.data(), ElementType::i64, {n + 1});
  }
  a.initial_state = TensorRef::contiguous(dstate.data(), fp32 ? ElementType::fp32 : ElementType::bf16,
                                          {n, heads, 128, 128});
  a.out = TensorRef::contiguous(dout.data(), ElementType::bf16, shape);
  const PrefillResult r = recurrent_kda_prefill(a, spec.options);
  const std::vector<Bf16> got = dout.download<Bf16>(elems);
  std::vector<double> got_state(state_elems);
  if (fp32) {
    const std::vector<float> st = dstate.download<float>(state_elems);
    std::copy(st.begin(), st.end(), got_state.begin());
  } else {
    const std::vector<Bf16> st = dstate.download<Bf16>(state_elems);
    for (std::size_t i = 0; i < state_elems; ++i) {
      got_state[i] = bf16_to_float(st[i]);
    }
  }

  VerifyFigures f;
  f.schedule = r.schedule + " on " + r.target + (r.prepare_overlapped ? " (prepare overlapped)" : "");
  double all_e2 = 0, all_r2 = 0, all_se2 = 0, all_sr2 = 0;
  for (std::int64_t s = 0; s < n; ++s) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double e2 = 0, r2 = 0;
      for (std::int64_t t = cu[s]; t < cu[s + 1]; ++t) {
        for (int d = 0; d < 128; ++d) {
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * 128 + d);
          const double x = bf16_to_float(got[at]);
          const double want = ref.output[at];
          if (!std::isfinite(x)) {
            ++f.nan;
            continue;
          }
          e2 += (x - want) * (x - want);
          r2 += want * want;
          const bool elementwise = cu[s + 1] - cu[s] <= 256 || t >= cu[s + 1] - 16;
          if (elementwise && std::fabs(x - want) > 2e-2 + 2e-2 * std::fabs(want)) {
            ++f.elementwise_failures;
          }
        }
      }
      all_e2 += e2;
      all_r2 += r2;
      if (cu[s + 1] > cu[s]) {
        f.worst_output = std::max(f.worst_output, std::sqrt(e2 / std::max(r2, 1e-300)));
      }
      double se2 = 0, sr2 = 0;
      for (std::size_t i = 0; i < 128 * 128; ++i) {
        const std::size_t at = static_cast<std::size_t>((s * heads + h) * 128 * 128) + i;
        se2 += (got_state[at] - ref.final_state[at]) * (got_state[at] - ref.final_state[at]);
        sr2 += ref.final_state[at] * ref.final_state[at];
        f.nan += std::isfinite(got_state[at]) ? 0 : 1;
      }
      all_se2 += se2;
      all_sr2 += sr2;
      f.worst_state = std::max(f.worst_state, std::sqrt(se2 / std::max(sr2, 1e-300)));
    }
  }
  f.whole_output = std::sqrt(all_e2 / std::max(all_r2, 1e-300));
  f.whole_state = std::sqrt(all_se2 / std::max(all_sr2, 1e-300));
  f.pass = f.nan == 0 && f.elementwise_failures == 0 && f.worst_output <= 1e-2 && f.worst_state <= 1e-2;
  return f;
}

std::optional<VerifyGate> parse_gate(const std::string& word) {
  if (word == "standard") {
    return VerifyGate::standard;
  }
  if (word == "minus8") {
    return VerifyGate::minus8;
  }
  if (word == "plus8") {
    return VerifyGate::plus8;
  }
  if (word == "bias8") {
    return VerifyGate::bias8;
  }
  return std::nullopt;
}

int verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed =
      parse_args(args, {"--json", "--no-overlap"},
                 {"--seqlens", "--fixed", "--heads", "--state", "--seed", "--gate", "--schedule", "--target"});
  VerifySpec spec;
  if (const std::optional<std::string> fixed = parsed.option("--fixed")) {
    const auto comma = fixed->find(',');
    if (comma == std::string::npos) {
      throw UsageError("--fixed takes B,T");
    }
    spec.batch = parse_integer(fixed->substr(0, comma), "--fixed's B", 1, 1 << 16);
    spec.tokens = parse_integer(fixed->substr(comma + 1), "--fixed's T", 1, 1 << 24);
    spec.seqlens.clear();
  } else {
    spec.seqlens.clear();
    std::stringstream list(parsed.option("--seqlens").value_or("300,17,0,1000,65"));
    for (std::string part; std::getline(list, part, ',');) {
      spec.seqlens.push_back(parse_integer(part, "--seqlens' lengths", 0, 1 << 24));
    }
  }
  spec.heads = integer_option(parsed, "--heads", 4, 1, 1024);
  spec.options.schedule = parsed.option("--schedule");
  spec.options.target = parsed.option("--target");
  if (spec.options.target && !spec.options.schedule) {
    throw UsageError("--target needs --schedule");
  }
  spec.options.prepare_overlap = !parsed.has("--no-overlap");
  spec.fp32_state = state_option(parsed, StatePrecision::bf16) == StatePrecision::fp32;
  spec.seed = static_cast<std::uint64_t>(integer_option(parsed, "--seed", 7, 0, std::numeric_limits<std::int64_t>::max()));
  const std::optional<VerifyGate> gate = parse_gate(parsed.option("--gate").value_or("standard"));
  if (!gate) {
    throw UsageError("--gate takes standard, minus8, plus8 or bias8");
  }
  spec.gate = *gate;
  if (!runtime::driver_status().available) {
    err << "kdajit verify: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  const VerifyFigures f = run_verification(spec);
  if (!parsed.has("--json")) {
    out << fmt::format("verify {}: worst per-(sequence, head) relative RMS output {:.2e}, state {:.2e} (whole tensor "
                       "{:.2e} / {:.2e}); {} elements outside 2e-2 + 2e-2|ref|; {} NaN: {}\n",
                       f.schedule, f.worst_output, f.worst_state, f.whole_output, f.whole_state,
                       f.elementwise_failures, f.nan, f.pass ? "PASS" : "FAIL");
  } else {
    out << nlohmann::json{{"kernel", f.schedule}, {"worst_output_rel_rms", f.worst_output},
                          {"worst_state_rel_rms", f.worst_state}, {"whole_output_rel_rms", f.whole_output},
                          {"whole_state_rel_rms", f.whole_state}, {"elementwise_failures", f.elementwise_failures},
                          {"nan", f.nan}, {"pass", f.pass}}
               .dump(2, ' ', false, k_replace_invalid_utf8)
        << "\n";
  }
  return f.pass ? k_exit_ok : k_exit_verification_failed;
}

} // namespace kda::tools
