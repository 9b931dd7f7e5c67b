// Cache-key invariance: kernel_key_fields + make_cache_key change with every
// compile-time input and never with runtime values (T, N, H, B, pointers,
// strides, lower_bound, scale), which route() keeps out of the ShapeKey.
#include "cache/cache_key.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/lower.hpp"
#include "compiler/lower/passes.hpp"
#include "compiler/schedule_library.hpp"
#include "fake_args.hpp"
#include "runtime/generator_identity.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "runtime/router.hpp"
#include "compiler/schedule_fixtures.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <set>

using namespace kda;
using namespace kda::test;
using Catch::Contains;

namespace {

const Schedule& portable() {
  const Schedule* s = find_shipped_schedule("portable_c16");
  REQUIRE(s != nullptr);
  return *s;
}

// What prepare() keys on: the SHA-256 of the source emitted for the plan.
std::string source_sha_of(const Schedule& schedule, const Target& target, const ShapeKey& shape) {
  return emitted_source_sha256(emit_cuda(lower(validate(schedule, target), shape)).text);
}

struct KeyInputs {
  Schedule schedule = portable();
  Target target = target_named("sm_90");
  ShapeKey shape{};
  NvrtcIdentity nvrtc{"13.0", "libnvrtc.so.13.0.88, 118210104 bytes"};
  std::vector<std::string> options = runtime::default_compile_options(target_named("sm_90"));
  int abi_version = plan_arg_abi().version;

  cache::CacheKeyFields fields() const {
    return kernel_key_fields(schedule, target, shape, nvrtc, options, abi_version,
                             source_sha_of(schedule, target, shape));
  }
  std::string key() const { return cache::make_cache_key(fields()).hex(); }
};

DeviceDescription h200() {
  DeviceDescription d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  return d;
}

RouteDecision route_args(const PrefillArgs& args, const DeviceDescription& d = h200()) {
  const ProblemShape p = check_prefill_args(args, 0, fake_pointer_device);
  return route(shipped_schedules(), d, p, {});
}

std::string key_of(const RouteDecision& r) {
  return cache::make_cache_key(kernel_key_fields(*r.schedule, r.target, r.shape, {"13.0", "libnvrtc.so.13.0.88"},
                                                 runtime::default_compile_options(r.target), plan_arg_abi().version,
                                                 source_sha_of(*r.schedule, r.target, r.shape)))
      .hex();
}

} // namespace

TEST_CASE("kernel key: stable across calls, and the fields are what was given", "[runtime][kernel_key]") {
  const KeyInputs in;
  CHECK(in.fields() == in.fields());
  CHECK(in.key() == in.key());
  const cache::CacheKeyFields f = in.fields();
  CHECK(f.layout_version == k_cache_layout_version);
  CHECK(f.abi_version == std::to_string(plan_arg_abi().version));
  CHECK(f.generator_id == generator_id());
  CHECK_THAT(f.generator_id, Catch::StartsWith("kdajit-"));
  CHECK(f.schedule_id == cache::canonical_json_hash(portable().document));
  CHECK(f.shape_key == "d128.in_bf16.state_bf16.fixed");
  CHECK(f.target == "sm_90");
  CHECK(f.nvrtc_version == "13.0");
  CHECK(f.nvrtc_build == "libnvrtc.so.13.0.88, 118210104 bytes");
  CHECK(f.source_sha256.size() == 64);
  CHECK(f.options == runtime::default_compile_options(target_named("sm_90")));
}

TEST_CASE("kernel key: the schedule id ignores key order and whitespace of the document", "[runtime][kernel_key]") {
  // The embedded copy and a reparse of a re-serialised (pretty-printed) file agree.
  const nlohmann::json doc = shipped_schedule_json("portable_c16");
  KeyInputs reparsed;
  reparsed.schedule = parse_schedule_text(doc.dump(7), "pretty.json");
  CHECK(reparsed.key() == KeyInputs{}.key());
}

TEST_CASE("kernel key: every compile-time input changes the key", "[runtime][kernel_key]") {
  using Edit = std::function<void(KeyInputs&)>;
  const std::vector<std::pair<const char*, Edit>> edits = {
      {"target sm_80", [](KeyInputs& k) { k.target = target_named("sm_80"); }},
      {"target sm_120a", [](KeyInputs& k) { k.target = target_named("sm_120a"); }},
      {"state dtype fp32", [](KeyInputs& k) { k.shape.state_dtype = StatePrecision::fp32; }},
      {"packed layout", [](KeyInputs& k) { k.shape.layout = LayoutKind::packed; }},
      {"option added", [](KeyInputs& k) { k.options.push_back("-lineinfo"); }},
      {"options of another target",
       [](KeyInputs& k) { k.options = runtime::default_compile_options(target_named("sm_80")); }},
      {"c++20 options",
       [](KeyInputs& k) { k.options = runtime::default_compile_options(k.target, runtime::CxxStandard::cxx20); }},
      {"nvrtc 12.9", [](KeyInputs& k) { k.nvrtc.version = "12.9"; }},
      {"another nvrtc 13.0 build", [](KeyInputs& k) { k.nvrtc.build = "libnvrtc.so.13.0.48, 117000000 bytes"; }},
      {"abi version", [](KeyInputs& k) { k.abi_version += 1; }},
      {"recurrence stages", [](KeyInputs& k) {
         nlohmann::json doc = shipped_schedule_json("portable_c16");
         doc["kernels"][1]["pipeline"]["stages"] = 2;
         k.schedule = parse_schedule(doc, "stages2.json");
       }},
  };
  std::set<std::string> keys = {KeyInputs{}.key()};
  for (const auto& [name, edit] : edits) {
    KeyInputs in;
    edit(in);
    INFO(name);
    CHECK(keys.insert(in.key()).second);
  }
}

TEST_CASE("kernel key: runtime values route to the same shape key and key fields", "[runtime][kernel_key]") {
  SECTION("T, N, H, B differ") {
    const RouteDecision small = route_args(fake_fixed_args(2, 64, 4));
    const RouteDecision large = route_args(fake_fixed_args(3, 1000, 32));
    const RouteDecision one = route_args(fake_fixed_args(1, 17, 1));
    CHECK(small.schedule == large.schedule);
    CHECK(small.target.name == large.target.name);
    CHECK(small.shape == large.shape);
    CHECK(small.shape == one.shape);
    CHECK(key_of(small) == key_of(large));
    CHECK(key_of(small) == key_of(one));
  }
  SECTION("pointers, beta strides, lower_bound and scale differ") {
    PrefillArgs a = fake_fixed_args(2, 64, 4);
    PrefillArgs b = fake_fixed_args(2, 64, 4);
    b.q.data = device0_slot(out_slot);
    b.v.data = device0_slot(final_state_slot, 0x100);
    b.beta.strides = {64 * 16, 16, 1};
    b.lower_bound = -1.5;
    b.scale = 0.01;
    const ProblemShape pa = check_prefill_args(a, 0, fake_pointer_device);
    const ProblemShape pb = check_prefill_args(b, 0, fake_pointer_device);
    CHECK(pa.beta_token_stride != pb.beta_token_stride);
    const RouteDecision ra = route(shipped_schedules(), h200(), pa, {});
    const RouteDecision rb = route(shipped_schedules(), h200(), pb, {});
    CHECK(ra.shape == rb.shape);
    CHECK(key_of(ra) == key_of(rb));
  }
  SECTION("packed: sequence count and the offsets dtype differ") {
    const RouteDecision i32 = route_args(fake_packed_args(100, 4, 3, ElementType::i32));
    const RouteDecision i64 = route_args(fake_packed_args(5000, 16, 40, ElementType::i64));
    CHECK(i32.shape == i64.shape);
    CHECK(i32.shape.layout == LayoutKind::packed);
    CHECK(key_of(i32) == key_of(i64));
  }
  SECTION("whether a bf16 state is read or written is not in the key") {
    PrefillArgs none = fake_fixed_args(2, 64, 4);
    PrefillArgs in = fake_fixed_args(2, 64, 4);
    in.initial_state = fake_state(initial_state_slot, ElementType::bf16, 2, 4);
    PrefillArgs out = fake_fixed_args(2, 64, 4);
    out.output_final_state = true;
    CHECK(key_of(route_args(none)) == key_of(route_args(in)));
    CHECK(key_of(route_args(none)) == key_of(route_args(out)));
  }
  SECTION("SM count is not in the key") {
    DeviceDescription few = h200();
    few.sm_count = 16;
    const PrefillArgs a = fake_fixed_args(2, 64, 4);
    CHECK(key_of(route_args(a, few)) == key_of(route_args(a)));
  }
  SECTION("but the state dtype and the layout are") {
    PrefillArgs fp32 = fake_fixed_args(2, 64, 4);
    fp32.initial_state = fake_state(initial_state_slot, ElementType::fp32, 2, 4);
    const RouteDecision base = route_args(fake_fixed_args(2, 64, 4));
    const RouteDecision wide = route_args(fp32);
    const RouteDecision packed = route_args(fake_packed_args(128, 4, 2, ElementType::i32));
    CHECK(wide.shape.state_dtype == StatePrecision::fp32);
    CHECK(key_of(base) != key_of(wide));
    CHECK(key_of(base) != key_of(packed));
  }
}

TEST_CASE("kernel key: a lowering pass whose output changes the emitted source changes the key",
          "[runtime][kernel_key]") {
  // The same schedule, target and shape key, with one pass's result changed
  // as a change to that pass would change it: the generator id and every
  // version stay the same, and the key still moves, because it covers the
  // emitted source itself.
  const KeyInputs in;
  const KernelPlan plan = lower(validate(in.schedule, in.target), in.shape);
  KernelPlan changed = plan;
  REQUIRE_FALSE(changed.entries.empty());
  REQUIRE_FALSE(changed.entries.front().smem.empty());
  changed.entries.front().smem.front().offset += 16; // place_smem placing a buffer elsewhere
  const std::string before = emit_cuda(plan).text;
  const std::string after = emit_cuda(changed).text;
  REQUIRE(before != after);
  auto key = [&](const std::string& source) {
    return cache::make_cache_key(kernel_key_fields(in.schedule, in.target, in.shape, in.nvrtc, in.options,
                                                   in.abi_version, emitted_source_sha256(source)))
        .hex();
  };
  CHECK(key(before) == in.key());
  CHECK(key(after) != in.key());
}
