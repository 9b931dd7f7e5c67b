/// \file
/// Reads one JSON object field by field, collecting every problem (wrong type,
/// missing key, unknown key, unknown word) as a `Diagnostic` with its JSON
/// pointer instead of stopping at the first.
#pragma once

#include "compiler/errors.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kda {

/// The deepest nesting parse_json_bounded accepts (kdajit's documents need 6).
inline constexpr int k_max_json_depth = 64;

/// Parses JSON text, refusing nesting deeper than k_max_json_depth (code that
/// walks a deep document recursively would exhaust its stack): the value, or
/// nullopt with `error` set ("nested deeper than 64 levels", or the parser's
/// message).
std::optional<nlohmann::json> parse_json_bounded(std::string_view text, std::string& error);

/// JSON pointer of `key` under `parent` ("/smem" + "buffers" -> "/smem/buffers").
std::string json_child_path(const std::string& parent, const std::string& key);
std::string json_child_path(const std::string& parent, std::size_t index);

class ObjectReader {
public:
  /// The largest magnitude small_integer() accepts.
  static constexpr std::int64_t k_small_integer_limit = 1'000'000;

  /// Reports a diagnostic (and reads nothing) when `value` is not an object.
  ObjectReader(const nlohmann::json& value, std::string path, std::vector<Diagnostic>& sink);

  bool valid() const { return m_object != nullptr; }
  const std::string& path() const { return m_path; }
  std::string path_of(const std::string& key) const { return json_child_path(m_path, key); }
  void report(const std::string& key, const std::string& message);

  /// The raw value of `key`, or nullptr when absent (reported when `required`).
  const nlohmann::json* field(const std::string& key, bool required);

  std::optional<std::string> string(const std::string& key, bool required);
  std::optional<std::int64_t> integer(const std::string& key, bool required);
  /// An integer within ±k_small_integer_limit (counts, sizes, indices: the
  /// checks after parsing judge the exact range); reported otherwise.
  std::optional<int> small_integer(const std::string& key, bool required);
  std::optional<double> number(const std::string& key, bool required);
  std::optional<bool> boolean(const std::string& key, bool required);
  /// An array value (reported when present but not an array).
  const nlohmann::json* array(const std::string& key, bool required);

  /// A word from a fixed vocabulary.
  template <typename Enum>
  std::optional<Enum> word(const std::string& key, bool required,
                           const std::function<std::optional<Enum>(std::string_view)>& parse,
                           const std::string& accepted) {
    std::optional<std::string> text = string(key, required);
    if (!text) {
      return std::nullopt;
    }
    std::optional<Enum> value = parse(*text);
    if (!value) {
      report(key, "unknown value '" + *text + "' (expected " + accepted + ")");
    }
    return value;
  }

  /// Reports every key that no accessor asked for.
  void reject_unknown_keys();

private:
  const nlohmann::json* m_object = nullptr;
  std::string m_path;
  std::vector<Diagnostic>& m_sink;
  std::set<std::string> m_seen;
};

/// Type name of a JSON value for messages ("string", "array", ...).
std::string json_type_name(const nlohmann::json& value);

} // namespace kda
