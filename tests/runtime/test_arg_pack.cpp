// pack_args against the plan's argument ABI (plan_arg_abi): every field's
// bytes at its offset; a missing or wrong-typed value is an InternalError.
#include "compiler/errors.hpp"
#include "compiler/lower/passes.hpp"
#include "runtime/arg_pack.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

using namespace kda;
using Catch::Contains;

namespace {

// A distinct value of the right type for every field of `abi`, in field order.
std::vector<ArgValue> distinct_values(const ArgAbi& abi) {
  std::vector<ArgValue> values;
  std::uintptr_t n = 1;
  for (const ArgField& f : abi.fields) {
    switch (f.type) {
    case ArgType::pointer:
      values.emplace_back(reinterpret_cast<const void*>(0x7000'0000'0000 + n * 0x1010));
      break;
    case ArgType::i64:
      values.emplace_back(static_cast<std::int64_t>(0x0102'0304'0506'0708) + static_cast<std::int64_t>(n));
      break;
    case ArgType::i32:
      values.emplace_back(static_cast<std::int32_t>(-1000 - static_cast<std::int32_t>(n)));
      break;
    case ArgType::f32:
      values.emplace_back(0.25f * static_cast<float>(n));
      break;
    case ArgType::tensor_map: {
      TensorMapValue map{};
      for (std::size_t w = 0; w < map.size(); ++w) {
        map[w] = 0x1000'0000'0000'0000ull * n + w + 1;
      }
      values.emplace_back(map);
      break;
    }
    }
    ++n;
  }
  return values;
}

ArgValues values_for(const ArgAbi& abi) {
  ArgValues v(abi);
  const std::vector<ArgValue> values = distinct_values(abi);
  for (std::size_t i = 0; i < abi.fields.size(); ++i) {
    v.set(abi.fields[i].name, values[i]);
  }
  return v;
}

template <typename T>
T read_at(const std::vector<std::uint8_t>& bytes, std::int64_t offset) {
  REQUIRE(offset + static_cast<std::int64_t>(sizeof(T)) <= static_cast<std::int64_t>(bytes.size()));
  T t{};
  std::memcpy(&t, bytes.data() + offset, sizeof(T));
  return t;
}

TileTensorMapPlan tensor_maps() {
  TileTensorMapPlan t;
  t.box_cols = 64;
  t.box_rows = 32;
  t.tensors = {"q", "k", "g", "v"};
  return t;
}

} // namespace

TEST_CASE("arg pack: the ABI is naturally aligned and every field is distinct", "[runtime][arg_pack]") {
  for (const bool maps : {false, true}) {
  INFO("tensor maps " << maps);
  const ArgAbi abi = plan_arg_abi(maps ? std::optional<TileTensorMapPlan>(tensor_maps()) : std::nullopt);
  REQUIRE_FALSE(abi.fields.empty());
  std::set<std::string> names;
  std::int64_t end = 0;
  for (const ArgField& f : abi.fields) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    CHECK(f.size == (f.type == ArgType::i32 || f.type == ArgType::f32 ? 4 : f.type == ArgType::tensor_map ? 128 : 8));
    CHECK(f.offset % (f.type == ArgType::tensor_map ? 64 : f.size) == 0);
    CHECK(f.offset >= end); // declaration order, no overlap
    end = f.offset + f.size;
  }
  CHECK(abi.size >= end);
  CHECK(abi.size % abi.alignment == 0);
  CHECK(abi.alignment == (maps ? 64 : 8));
  CHECK((abi.find("tma_v") != nullptr) == maps);
  for (const char* name : {"q", "k", "v", "g", "beta", "a_log", "dt_bias", "out", "state_in", "state_out",
                           "cu_seqlens", "chunk_offsets", "workspace", "beta_token_stride", "seq_len", "total_tokens",
                           "num_seqs", "heads", "offsets_i64", "scale", "gate_scale", "state_indices",
                           "state_slot_stride", "seq_order", "checkpoints", "checkpoint_starts", "checkpoint_chunks"}) {
    CHECK(abi.find(name) != nullptr);
  }
  CHECK(abi.find("nope") == nullptr);
  }
}

TEST_CASE("arg pack: every field is written at its offset with its bytes", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi(tensor_maps()); // with the tensor maps of TMA plans
  const ArgValues values = values_for(abi);
  const std::vector<ArgValue> wanted = distinct_values(abi);
  const std::vector<std::uint8_t> bytes = pack_args(abi, values);
  REQUIRE(static_cast<std::int64_t>(bytes.size()) == abi.size);
  std::vector<bool> covered(bytes.size(), false);
  for (std::size_t field = 0; field < abi.fields.size(); ++field) {
    const ArgField& f = abi.fields[field];
    INFO(f.name << " at " << f.offset);
    const ArgValue& want = wanted[field];
    switch (f.type) {
    case ArgType::pointer:
      CHECK(read_at<const void*>(bytes, f.offset) == std::get<const void*>(want));
      break;
    case ArgType::i64:
      CHECK(read_at<std::int64_t>(bytes, f.offset) == std::get<std::int64_t>(want));
      break;
    case ArgType::i32:
      CHECK(read_at<std::int32_t>(bytes, f.offset) == std::get<std::int32_t>(want));
      break;
    case ArgType::f32:
      CHECK(read_at<float>(bytes, f.offset) == std::get<float>(want));
      break;
    case ArgType::tensor_map:
      CHECK(read_at<TensorMapValue>(bytes, f.offset) == std::get<TensorMapValue>(want));
      break;
    }
    for (std::int64_t i = f.offset; i < f.offset + f.size; ++i) {
      covered[static_cast<std::size_t>(i)] = true;
    }
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!covered[i]) {
      INFO("padding byte " << i);
      CHECK(bytes[i] == 0);
    }
  }
}

TEST_CASE("arg pack: the documented layout of the parameter struct", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  CHECK(abi.find("q")->offset == 0);
  CHECK(abi.find("workspace")->offset == 96); // 13 pointers
  CHECK(abi.find("beta_token_stride")->offset == 104);
  CHECK(abi.find("total_tokens")->offset == 120);
  CHECK(abi.find("num_seqs")->offset == 128);
  CHECK(abi.find("offsets_i64")->offset == 136);
  CHECK(abi.find("scale")->offset == 140);
  CHECK(abi.find("gate_scale")->offset == 144);
  CHECK(abi.find("ready_flags")->offset == 152);
  CHECK(abi.find("ready_epoch")->offset == 160);
  CHECK(abi.find("chunk_begin")->offset == 164);
  CHECK(abi.find("chunk_major")->offset == 168);
  // v4: the caller features (state pools, seq_order, checkpoints)
  CHECK(abi.find("state_indices")->offset == 176);
  CHECK(abi.find("state_slot_stride")->offset == 184);
  CHECK(abi.find("seq_order")->offset == 192);
  CHECK(abi.find("checkpoints")->offset == 200);
  CHECK(abi.find("checkpoint_starts")->offset == 208);
  CHECK(abi.find("checkpoint_chunks")->offset == 216);
  // v5: the split's prepare walk, in the bytes that padded the struct to 8
  CHECK(abi.find("prepare_streams")->offset == 220);
  CHECK(abi.size == 224);
  CHECK(abi.version == 5);
  // plans that load with TMA append their 64-byte aligned tensor maps
  const ArgAbi tma = plan_arg_abi(tensor_maps());
  CHECK(tma.find("checkpoint_chunks")->offset == 216);
  CHECK(tma.find("tma_q")->offset == 256);
  CHECK(tma.find("tma_k")->offset == 384);
  CHECK(tma.find("tma_g")->offset == 512);
  CHECK(tma.find("tma_v")->offset == 640);
  CHECK(tma.size == 768);
}

TEST_CASE("arg pack: extra values are ignored", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  ArgValues values = values_for(abi);
  const std::vector<std::uint8_t> plain = pack_args(abi, values);
  values.set("not_a_field", std::int64_t{42});
  CHECK(pack_args(abi, values) == plain);
}

TEST_CASE("arg pack: a missing value is an InternalError naming the field", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  for (const ArgField& missing : abi.fields) {
    ArgValues values(abi);
    const ArgValues all = values_for(abi);
    for (const ArgField& f : abi.fields) {
      if (f.name != missing.name) {
        values.set(f.name, *all.find(f.name));
      }
    }
    INFO(missing.name);
    CHECK_THROWS_MATCHES(pack_args(abi, values), InternalError,
                         Catch::Matchers::Message("launcher: no value for kernel argument '" + missing.name + "'"));
  }
}

TEST_CASE("arg pack: a wrong-typed value is an InternalError naming the field", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  const std::vector<std::pair<std::string, ArgValue>> wrong = {
      {"q", std::int64_t{0x1000}},                  // pointer as an integer
      {"heads", std::int64_t{4}},                   // i32 as i64
      {"seq_len", std::int32_t{64}},                // i64 as i32
      {"scale", std::int32_t{1}},                   // f32 as i32
      {"offsets_i64", 1.0f},                        // i32 as f32
      {"gate_scale", static_cast<const void*>(nullptr)}, // f32 as a pointer
  };
  for (const auto& [name, value] : wrong) {
    ArgValues values = values_for(abi);
    values.set(name, value);
    INFO(name);
    CHECK_THROWS_MATCHES(pack_args(abi, values), InternalError,
                         Catch::Matchers::Message("launcher: kernel argument '" + name +
                                                  "' has a value of the wrong type"));
  }
}

TEST_CASE("arg pack: a null pointer is a value", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  ArgValues values = values_for(abi);
  values.set("state_in", static_cast<const void*>(nullptr));
  const std::vector<std::uint8_t> bytes = pack_args(abi, values);
  CHECK(read_at<const void*>(bytes, abi.find("state_in")->offset) == nullptr);
}

TEST_CASE("arg pack: values set in any order pack the same bytes", "[runtime][arg_pack]") {
  const TileTensorMapPlan maps = tensor_maps();
  const ArgAbi abi = plan_arg_abi(maps);
  const ArgValues in_order = values_for(abi);
  ArgValues reversed(abi);
  for (auto f = abi.fields.rbegin(); f != abi.fields.rend(); ++f) {
    reversed.set(f->name, *in_order.find(f->name));
  }
  CHECK(pack_args(abi, reversed) == pack_args(abi, in_order));
  // a copy of the ABI (another object) is matched by name
  const ArgAbi copy = abi;
  CHECK(pack_args(copy, reversed) == pack_args(abi, in_order));
}

TEST_CASE("arg pack: values set through resolved slots pack as values set by name", "[runtime][arg_pack]") {
  TileTensorMapPlan maps;
  maps.tensors = {"q", "k", "g", "v"};
  for (const ArgAbi& abi : {plan_arg_abi(), plan_arg_abi(maps)}) {
    const std::vector<ArgValue> values = distinct_values(abi);
    ArgValues by_name(abi);
    ArgValues by_slot(abi);
    // names asked out of ABI order too: the finder wraps around
    ArgSlotFinder find(abi);
    std::vector<ArgSlot> slots(abi.fields.size());
    for (std::size_t i = abi.fields.size(); i-- > 0;) {
      slots[i] = find(abi.fields[i].name);
      REQUIRE(slots[i].present());
      CHECK(slots[i].offset == abi.fields[i].offset);
    }
    for (std::size_t i = 0; i < abi.fields.size(); ++i) {
      by_name.set(abi.fields[i].name, values[i]);
      by_slot.set(slots[i], values[i]);
    }
    CHECK(pack_args(abi, by_slot) == pack_args(abi, by_name));
    // a field the ABI lacks resolves to an absent slot, which sets nothing
    const ArgSlot absent = find("not_a_field");
    CHECK_FALSE(absent.present());
    by_slot.set(absent, std::int64_t{42});
    CHECK(pack_args(abi, by_slot) == pack_args(abi, by_name));
  }
}

TEST_CASE("arg pack: a slot sets only its own ABI, with its field's type", "[runtime][arg_pack]") {
  const ArgAbi abi = plan_arg_abi();
  const ArgAbi other = plan_arg_abi();
  ArgValues values = values_for(abi);
  const ArgSlot foreign = ArgSlotFinder(other)("q");
  CHECK_THROWS_MATCHES(values.set(foreign, static_cast<const void*>(nullptr)), InternalError,
                       Catch::Matchers::Message("launcher: an argument slot of another ABI"));
  values.set(ArgSlotFinder(abi)("heads"), std::int64_t{4}); // an i32 field
  CHECK_THROWS_MATCHES(pack_args(abi, values), InternalError,
                       Catch::Matchers::Message("launcher: kernel argument 'heads' has a value of the wrong type"));
}
