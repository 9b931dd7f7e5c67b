#include "runtime/arg_pack.hpp"

#include "compiler/errors.hpp"

#include <cstring>

namespace kda {

ArgValues& ArgValues::set(std::string_view name, ArgValue value) {
  for (auto& [n, v] : m_values) {
    if (n == name) {
      v = value;
      return *this;
    }
  }
  if (m_values.empty()) {
    m_values.reserve(40);
  }
  m_values.emplace_back(std::string(name), value);
  return *this;
}

const ArgValue* ArgValues::find(std::string_view name) const {
  for (const auto& [n, v] : m_values) {
    if (n == name) {
      return &v;
    }
  }
  return nullptr;
}

std::vector<std::uint8_t> pack_args(const ArgAbi& abi, const ArgValues& values) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(abi.size), 0);
  for (const ArgField& f : abi.fields) {
    const ArgValue* v = values.find(f.name);
    if (v == nullptr) {
      throw InternalError("launcher: no value for kernel argument '" + f.name + "'");
    }
    std::uint8_t* at = bytes.data() + f.offset;
    bool ok = false;
    switch (f.type) {
    case ArgType::pointer:
      if (const auto* p = std::get_if<const void*>(v)) {
        std::memcpy(at, p, sizeof(*p));
        ok = true;
      }
      break;
    case ArgType::i64:
      if (const auto* p = std::get_if<std::int64_t>(v)) {
        std::memcpy(at, p, sizeof(*p));
        ok = true;
      }
      break;
    case ArgType::i32:
      if (const auto* p = std::get_if<std::int32_t>(v)) {
        std::memcpy(at, p, sizeof(*p));
        ok = true;
      }
      break;
    case ArgType::f32:
      if (const auto* p = std::get_if<float>(v)) {
        std::memcpy(at, p, sizeof(*p));
        ok = true;
      }
      break;
    case ArgType::tensor_map:
      if (const auto* p = std::get_if<TensorMapValue>(v)) {
        std::memcpy(at, p->data(), sizeof(*p));
        ok = true;
      }
      break;
    }
    if (!ok) {
      throw InternalError("launcher: kernel argument '" + f.name + "' has a value of the wrong type");
    }
  }
  return bytes;
}

} // namespace kda
