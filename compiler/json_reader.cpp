#include "compiler/json_reader.hpp"

#include <fmt/format.h>

#include <cmath>

namespace kda {

namespace {

struct TooDeep {};

} // namespace

std::optional<nlohmann::json> parse_json_bounded(std::string_view text, std::string& error) {
  const nlohmann::json::parser_callback_t depth_limit = [](int depth, nlohmann::json::parse_event_t,
                                                           nlohmann::json&) {
    if (depth > k_max_json_depth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), depth_limit);
  } catch (const TooDeep&) {
    error = fmt::format("nested deeper than {} levels", k_max_json_depth);
  } catch (const nlohmann::json::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

std::string json_child_path(const std::string& parent, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return parent + "/" + escaped;
}

std::string json_child_path(const std::string& parent, std::size_t index) {
  return parent + "/" + std::to_string(index);
}

std::string json_type_name(const nlohmann::json& value) {
  if (value.is_number_integer()) {
    return "integer";
  }
  if (value.is_number()) {
    return "number";
  }
  return value.type_name();
}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string path, std::vector<Diagnostic>& sink)
    : m_path(std::move(path)), m_sink(sink) {
  if (value.is_object()) {
    m_object = &value;
  } else {
    m_sink.push_back({m_path, fmt::format("expected an object, found {}", json_type_name(value))});
  }
}

void ObjectReader::report(const std::string& key, const std::string& message) {
  m_sink.push_back({key.empty() ? m_path : path_of(key), message});
}

const nlohmann::json* ObjectReader::field(const std::string& key, bool required) {
  m_seen.insert(key);
  if (m_object == nullptr) {
    return nullptr;
  }
  auto it = m_object->find(key);
  if (it == m_object->end()) {
    if (required) {
      m_sink.push_back({m_path.empty() ? "/" : m_path, fmt::format("missing required key '{}'", key)});
    }
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> ObjectReader::string(const std::string& key, bool required) {
  const nlohmann::json* v = field(key, required);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (!v->is_string()) {
    report(key, fmt::format("expected a string, found {}", json_type_name(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<std::int64_t> ObjectReader::integer(const std::string& key, bool required) {
  const nlohmann::json* v = field(key, required);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (!v->is_number_integer()) {
    report(key, fmt::format("expected an integer, found {}", json_type_name(*v)));
    return std::nullopt;
  }
  return v->get<std::int64_t>();
}

std::optional<int> ObjectReader::small_integer(const std::string& key, bool required) {
  const std::optional<std::int64_t> v = integer(key, required);
  if (!v) {
    return std::nullopt;
  }
  if (*v < -k_small_integer_limit || *v > k_small_integer_limit) {
    report(key, fmt::format("{} is outside -{}..{}", *v, k_small_integer_limit, k_small_integer_limit));
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

std::optional<double> ObjectReader::number(const std::string& key, bool required) {
  const nlohmann::json* v = field(key, required);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (!v->is_number()) {
    report(key, fmt::format("expected a number, found {}", json_type_name(*v)));
    return std::nullopt;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d)) {
    report(key, "expected a finite number");
    return std::nullopt;
  }
  return d;
}

std::optional<bool> ObjectReader::boolean(const std::string& key, bool required) {
  const nlohmann::json* v = field(key, required);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (!v->is_boolean()) {
    report(key, fmt::format("expected true or false, found {}", json_type_name(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

const nlohmann::json* ObjectReader::array(const std::string& key, bool required) {
  const nlohmann::json* v = field(key, required);
  if (v == nullptr) {
    return nullptr;
  }
  if (!v->is_array()) {
    report(key, fmt::format("expected an array, found {}", json_type_name(*v)));
    return nullptr;
  }
  return v;
}

void ObjectReader::reject_unknown_keys() {
  if (m_object == nullptr) {
    return;
  }
  for (const auto& [key, value] : m_object->items()) {
    if (!m_seen.contains(key)) {
      std::string known;
      for (const std::string& k : m_seen) {
        known += known.empty() ? k : ", " + k;
      }
      m_sink.push_back({path_of(key), fmt::format("unknown key '{}' (known keys here: {})", key, known)});
    }
  }
}

} // namespace kda
