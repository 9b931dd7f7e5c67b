#include "runtime/arg_pack.hpp"

#include "compiler/errors.hpp"

#include <cstring>

namespace kda {
namespace {

template <typename T>
bool bytes_if(const ArgValue& value, const void*& data, std::size_t& size) {
  const T* p = std::get_if<T>(&value);
  if (p == nullptr) {
    return false;
  }
  data = p;
  size = sizeof(T);
  return true;
}

// Whether `value` holds the type of a field of type `type`; then its bytes.
bool bytes_of(ArgType type, const ArgValue& value, const void*& data, std::size_t& size) {
  switch (type) {
  case ArgType::pointer:
    return bytes_if<const void*>(value, data, size);
  case ArgType::i64:
    return bytes_if<std::int64_t>(value, data, size);
  case ArgType::i32:
    return bytes_if<std::int32_t>(value, data, size);
  case ArgType::f32:
    return bytes_if<float>(value, data, size);
  case ArgType::tensor_map:
    return bytes_if<TensorMapValue>(value, data, size);
  }
  return false;
}

template <typename T>
ArgValue read_as(const std::uint8_t* at) {
  T t{};
  std::memcpy(&t, at, sizeof(T));
  return t;
}

} // namespace

ArgValues::ArgValues(const ArgAbi& abi)
    : m_abi(&abi), m_bytes(static_cast<std::size_t>(abi.size), 0), m_slots(abi.fields.size(), Slot::unset) {}

std::optional<std::size_t> ArgValues::index_of(std::string_view name) const {
  const std::size_t n = m_abi->fields.size();
  std::size_t i = m_cursor < n ? m_cursor : 0;
  for (std::size_t step = 0; step < n; ++step) {
    if (m_abi->fields[i].name == name) {
      m_cursor = i + 1;
      return i;
    }
    i = i + 1 == n ? 0 : i + 1;
  }
  return std::nullopt;
}

ArgSlot ArgSlotFinder::operator()(std::string_view name) {
  ArgSlot slot;
  slot.abi = m_abi;
  const std::size_t n = m_abi->fields.size();
  std::size_t i = m_cursor < n ? m_cursor : 0;
  for (std::size_t step = 0; step < n; ++step) {
    const ArgField& f = m_abi->fields[i];
    if (f.name == name) {
      slot.index = static_cast<std::int32_t>(i);
      slot.offset = static_cast<std::int32_t>(f.offset);
      slot.type = f.type;
      m_cursor = i + 1;
      break;
    }
    i = i + 1 == n ? 0 : i + 1;
  }
  return slot;
}

ArgValues& ArgValues::set(const ArgSlot& slot, const ArgValue& value) {
  if (slot.abi != m_abi) {
    throw InternalError("launcher: an argument slot of another ABI");
  }
  if (!slot.present()) {
    return *this;
  }
  const auto i = static_cast<std::size_t>(slot.index);
  const void* data = nullptr;
  std::size_t size = 0;
  if (!bytes_of(slot.type, value, data, size)) {
    m_slots[i] = Slot::wrong_type;
    return *this;
  }
  std::memcpy(m_bytes.data() + slot.offset, data, size);
  m_slots[i] = Slot::set;
  return *this;
}

ArgValues& ArgValues::set(std::string_view name, const ArgValue& value) {
  const std::optional<std::size_t> i = index_of(name);
  if (!i) {
    return *this;
  }
  const ArgField& f = m_abi->fields[*i];
  const void* data = nullptr;
  std::size_t size = 0;
  if (!bytes_of(f.type, value, data, size)) {
    m_slots[*i] = Slot::wrong_type;
    return *this;
  }
  std::memcpy(m_bytes.data() + f.offset, data, size);
  m_slots[*i] = Slot::set;
  return *this;
}

std::optional<ArgValue> ArgValues::find(std::string_view name) const {
  const std::optional<std::size_t> i = index_of(name);
  if (!i || m_slots[*i] != Slot::set) {
    return std::nullopt;
  }
  const ArgField& f = m_abi->fields[*i];
  const std::uint8_t* at = m_bytes.data() + f.offset;
  switch (f.type) {
  case ArgType::pointer:
    return read_as<const void*>(at);
  case ArgType::i64:
    return read_as<std::int64_t>(at);
  case ArgType::i32:
    return read_as<std::int32_t>(at);
  case ArgType::f32:
    return read_as<float>(at);
  case ArgType::tensor_map:
    return read_as<TensorMapValue>(at);
  }
  return std::nullopt;
}

std::vector<std::uint8_t> pack_args(const ArgAbi& abi, const ArgValues& values) {
  if (&abi != &values.abi()) {
    // another ABI object: by name
    ArgValues own(abi);
    for (const ArgField& f : abi.fields) {
      if (const std::optional<ArgValue> v = values.find(f.name)) {
        own.set(f.name, *v);
      } else if (const std::optional<std::size_t> i = values.index_of(f.name);
                 i && values.m_slots[*i] == ArgValues::Slot::wrong_type) {
        own.m_slots[own.index_of(f.name).value()] = ArgValues::Slot::wrong_type;
      }
    }
    return pack_args(abi, own);
  }
  return values.packed();
}

const std::vector<std::uint8_t>& ArgValues::packed() const {
  for (std::size_t i = 0; i < m_slots.size(); ++i) {
    if (m_slots[i] == Slot::unset) {
      throw InternalError("launcher: no value for kernel argument '" + m_abi->fields[i].name + "'");
    }
    if (m_slots[i] == Slot::wrong_type) {
      throw InternalError("launcher: kernel argument '" + m_abi->fields[i].name + "' has a value of the wrong type");
    }
  }
  return m_bytes;
}

} // namespace kda
