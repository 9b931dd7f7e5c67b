// kdajit verify [--seqlens a,b,c] [--heads H] [--state bf16|fp32] [--seed N] [--json]
// Runs one random prefill on the GPU through the public API (packed layout,
// state updated in place) and checks it against the CPU fp64 reference with
// spec section 8's tolerances: per (sequence, head) relative RMS <= 1e-2 of
// the output and of the final state, element-wise |x - ref| <= 2e-2 +
// 2e-2 |ref| on the last chunk of every sequence, no NaN (output poisoned
// first). Exit 0 when it holds, 8 when it does not.
#include "reference/token_reference.hpp"
#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/kda.hpp"
#include "tools/args.hpp"
#include "tools/cli.hpp"
#include "tools/exit_codes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
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

std::vector<Bf16> random_bf16(std::size_t n, std::mt19937_64& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Bf16> out(n);
  for (Bf16& x : out) {
    x = float_to_bf16(scale * normal(rng));
  }
  return out;
}

} // namespace

int verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const ParsedArgs parsed = parse_args(args, {"--json"}, {"--seqlens", "--heads", "--state", "--seed"});
  if (!runtime::driver_status().available) {
    err << "kdajit verify: needs a GPU: " << runtime::driver_status().to_string() << "\n";
    return k_exit_no_device;
  }
  std::vector<std::int64_t> seqlens;
  std::stringstream list(parsed.option("--seqlens").value_or("300,17,0,1000,65"));
  for (std::string part; std::getline(list, part, ',');) {
    seqlens.push_back(std::stoll(part));
  }
  const std::int64_t heads = std::stoll(parsed.option("--heads").value_or("4"));
  const bool fp32 = parsed.option("--state").value_or("bf16") == "fp32";
  std::mt19937_64 rng(std::stoull(parsed.option("--seed").value_or("7")));
  const std::int64_t n = static_cast<std::int64_t>(seqlens.size());
  std::vector<std::int64_t> cu{0};
  for (std::int64_t l : seqlens) {
    cu.push_back(cu.back() + l);
  }
  const std::int64_t tokens = cu.back();
  const std::size_t elems = static_cast<std::size_t>(tokens * heads * 128);
  const std::size_t state_elems = static_cast<std::size_t>(n * heads * 128 * 128);
  const std::vector<Bf16> q = random_bf16(elems, rng, 1.0f), k = random_bf16(elems, rng, 1.0f),
                          v = random_bf16(elems, rng, 1.0f), g = random_bf16(elems, rng, 1.0f),
                          beta = random_bf16(static_cast<std::size_t>(tokens * heads), rng, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> a_log(static_cast<std::size_t>(heads)), dt_bias(static_cast<std::size_t>(heads * 128));
  for (float& x : a_log) {
    x = uniform(rng);
  }
  for (float& x : dt_bias) {
    x = uniform(rng);
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
  in.batch = 1;
  in.tokens = tokens;
  in.heads = heads;
  in.q = q;
  in.k = k;
  in.v = v;
  in.g = g;
  in.beta = beta;
  in.a_log = a_log;
  in.dt_bias = dt_bias;
  in.cu_seqlens = std::span<const std::int64_t>(cu);
  in.initial_state = fp32 ? reference::StateBuffer(std::span<float>(ref_state_fp32), n)
                          : reference::StateBuffer(std::span<Bf16>(ref_state_bf16), n);
  const reference::PrefillResult ref = reference::run_reference_prefill(in, reference::PrefillOptions{});

  // GPU.
  runtime::ensure_current_context();
  Upload dq(q), dk(k), dv(v), dg(g), dbeta(beta), da(a_log), ddt(dt_bias), dcu(cu);
  Upload dstate = fp32 ? Upload(state_fp32) : Upload(state_bf16);
  Upload dout(std::vector<std::uint16_t>(elems, 0xffff)); // poisoned: NaN
  PrefillArgs a;
  const std::vector<std::int64_t> shape{1, tokens, heads, 128};
  a.q = TensorRef::contiguous(dq.data(), ElementType::bf16, shape);
  a.k = TensorRef::contiguous(dk.data(), ElementType::bf16, shape);
  a.v = TensorRef::contiguous(dv.data(), ElementType::bf16, shape);
  a.g = TensorRef::contiguous(dg.data(), ElementType::bf16, shape);
  a.beta = TensorRef::contiguous(dbeta.data(), ElementType::bf16, {1, tokens, heads});
  a.a_log = TensorRef::contiguous(da.data(), ElementType::fp32, {heads});
  a.dt_bias = TensorRef::contiguous(ddt.data(), ElementType::fp32, {heads * 128});
  a.cu_seqlens = TensorRef::contiguous(dcu.data(), ElementType::i64, {n + 1});
  a.initial_state = TensorRef::contiguous(dstate.data(), fp32 ? ElementType::fp32 : ElementType::bf16,
                                          {n, heads, 128, 128});
  a.out = TensorRef::contiguous(dout.data(), ElementType::bf16, shape);
  const PrefillResult r = recurrent_kda_prefill(a);
  const std::vector<Bf16> got = dout.download<Bf16>(elems);
  std::vector<double> got_state(state_elems);
  if (fp32) {
    const std::vector<float> s = dstate.download<float>(state_elems);
    std::copy(s.begin(), s.end(), got_state.begin());
  } else {
    const std::vector<Bf16> s = dstate.download<Bf16>(state_elems);
    for (std::size_t i = 0; i < state_elems; ++i) {
      got_state[i] = bf16_to_float(s[i]);
    }
  }

  double worst_out = 0.0, worst_state = 0.0;
  std::int64_t bad_elements = 0, nans = 0;
  for (std::int64_t s = 0; s < n; ++s) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double e2 = 0, r2 = 0;
      for (std::int64_t t = cu[s]; t < cu[s + 1]; ++t) {
        for (int d = 0; d < 128; ++d) {
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * 128 + d);
          const double x = bf16_to_float(got[at]);
          const double want = ref.output[at];
          if (!std::isfinite(x)) {
            ++nans;
            continue;
          }
          e2 += (x - want) * (x - want);
          r2 += want * want;
          if (t >= cu[s + 1] - 16 && std::fabs(x - want) > 2e-2 + 2e-2 * std::fabs(want)) {
            ++bad_elements;
          }
        }
      }
      if (cu[s + 1] > cu[s]) {
        worst_out = std::max(worst_out, std::sqrt(e2 / std::max(r2, 1e-300)));
      }
      double se2 = 0, sr2 = 0;
      for (std::size_t i = 0; i < 128 * 128; ++i) {
        const std::size_t at = static_cast<std::size_t>((s * heads + h) * 128 * 128) + i;
        se2 += (got_state[at] - ref.final_state[at]) * (got_state[at] - ref.final_state[at]);
        sr2 += ref.final_state[at] * ref.final_state[at];
        nans += std::isfinite(got_state[at]) ? 0 : 1;
      }
      worst_state = std::max(worst_state, std::sqrt(se2 / std::max(sr2, 1e-300)));
    }
  }
  const bool ok = nans == 0 && bad_elements == 0 && worst_out <= 1e-2 && worst_state <= 1e-2;
  out << fmt::format("verify {} on {}: {} sequences, {} tokens, {} heads, {} state: worst per-(sequence, head) "
                     "relative RMS output {:.2e}, state {:.2e}; {} last-chunk elements outside 2e-2 + 2e-2|ref|; "
                     "{} NaN: {}\n",
                     r.schedule, r.target, n, tokens, heads, fp32 ? "fp32" : "bf16", worst_out, worst_state,
                     bad_elements, nans, ok ? "PASS" : "FAIL");
  if (parsed.has("--json")) {
    out << nlohmann::json{{"schedule", r.schedule}, {"target", r.target}, {"worst_output_rel_rms", worst_out},
                          {"worst_state_rel_rms", worst_state}, {"elementwise_failures", bad_elements},
                          {"nan", nans}, {"pass", ok}}
               .dump(2)
        << "\n";
  }
  return ok ? k_exit_ok : k_exit_verification_failed;
}

} // namespace kda::tools
