#include "cache/manifest.hpp"

#include "compiler/json_reader.hpp"

#include "cache/sha256.hpp"

#include <fmt/format.h>

namespace kda::cache {
namespace {

using nlohmann::json;

// Thrown and caught only inside this file: parse_manifest returns a value.
struct BadField {
  std::string message;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw BadField{fmt::format("{}: {}", path, what)};
}

const json& member(const json& object, const std::string& path, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) {
    bad(path + "/" + name, "missing");
  }
  return *it;
}

std::string read_string(const json& object, const std::string& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_string()) {
    bad(path + "/" + name, "expected a string");
  }
  return value.get<std::string>();
}

std::string read_hex(const json& object, const std::string& path, const char* name, bool allow_empty) {
  std::string value = read_string(object, path, name);
  if (!(is_sha256_hex(value) || (allow_empty && value.empty()))) {
    bad(path + "/" + name, "expected 64 lowercase hex characters");
  }
  return value;
}

std::int64_t read_count(const json& object, const std::string& path, const char* name) {
  const json& value = member(object, path, name);
  if (value.is_number_unsigned()) {
    return static_cast<std::int64_t>(value.get<std::uint64_t>());
  }
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
    bad(path + "/" + name, "expected a non-negative integer");
  }
  return value.get<std::int64_t>();
}

const json& read_object(const json& object, const std::string& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_object()) {
    bad(path + "/" + name, "expected an object");
  }
  return value;
}

const json& read_array(const json& object, const std::string& path, const char* name) {
  const json& value = member(object, path, name);
  if (!value.is_array()) {
    bad(path + "/" + name, "expected an array");
  }
  return value;
}

CacheKeyFields read_key_fields(const json& object, const std::string& path) {
  CacheKeyFields f;
  f.layout_version = read_string(object, path, "layout_version");
  f.abi_version = read_string(object, path, "abi_version");
  f.generator_id = read_string(object, path, "generator_id");
  f.schedule_id = read_string(object, path, "schedule_id");
  f.shape_key = read_string(object, path, "shape_key");
  f.target = read_string(object, path, "target");
  f.nvrtc_version = read_string(object, path, "nvrtc_version");
  // absent in the manifests of kdajit builds before them (such entries are stale)
  f.nvrtc_build = object.contains("nvrtc_build") ? read_string(object, path, "nvrtc_build") : "";
  f.source_sha256 = object.contains("source_sha256") ? read_string(object, path, "source_sha256") : "";
  const json& options = read_array(object, path, "options");
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (!options[i].is_string()) {
      bad(fmt::format("{}/options/{}", path, i), "expected a string");
    }
    f.options.push_back(options[i].get<std::string>());
  }
  return f;
}

Manifest read_manifest(const json& j) {
  Manifest m;
  m.manifest_version = static_cast<int>(read_count(j, "", "manifest_version"));
  m.key = read_hex(j, "", "key", false);
  m.key_fields = read_key_fields(read_object(j, "", "key_fields"), "/key_fields");
  m.source_sha256 = read_hex(j, "", "source_sha256", true);
  m.cubin_sha256 = read_hex(j, "", "cubin_sha256", false);
  m.cubin_size = static_cast<std::uint64_t>(read_count(j, "", "cubin_size"));
  const json& entries = read_array(j, "", "entry_points");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string path = fmt::format("/entry_points/{}", i);
    if (!entries[i].is_object()) {
      bad(path, "expected an object");
    }
    EntryPoint e;
    e.name = read_string(entries[i], path, "name");
    if (e.name.empty()) {
      bad(path + "/name", "must not be empty");
    }
    e.resources = read_object(entries[i], path, "resources");
    m.entry_points.push_back(std::move(e));
  }
  m.launch = read_object(j, "", "launch");
  const json& compile_ms = member(j, "", "compile_ms");
  if (!compile_ms.is_number() || compile_ms.get<double>() < 0) {
    bad("/compile_ms", "expected a non-negative number");
  }
  m.compile_ms = compile_ms.get<double>();
  const std::string producer = read_string(j, "", "producer");
  const std::optional<Producer> parsed = parse_producer(producer);
  if (!parsed) {
    bad("/producer", fmt::format("expected \"jit\", \"aot\" or \"import\", got \"{}\"", producer));
  }
  m.producer = *parsed;
  m.created_unix = read_count(j, "", "created_unix");
  m.last_used_unix = read_count(j, "", "last_used_unix");
  return m;
}

} // namespace

std::string_view producer_name(Producer producer) {
  switch (producer) {
  case Producer::jit:
    return "jit";
  case Producer::aot:
    return "aot";
  case Producer::imported:
    return "import";
  }
  return "jit";
}

std::optional<Producer> parse_producer(std::string_view name) {
  for (const Producer p : {Producer::jit, Producer::aot, Producer::imported}) {
    if (producer_name(p) == name) {
      return p;
    }
  }
  return std::nullopt;
}

json to_json(const Manifest& m) {
  json options = json::array();
  for (const std::string& option : m.key_fields.options) {
    options.push_back(option);
  }
  json entries = json::array();
  for (const EntryPoint& e : m.entry_points) {
    entries.push_back({{"name", e.name}, {"resources", e.resources}});
  }
  return json{{"manifest_version", m.manifest_version},
              {"key", m.key},
              {"key_fields",
               {{"layout_version", m.key_fields.layout_version},
                {"abi_version", m.key_fields.abi_version},
                {"generator_id", m.key_fields.generator_id},
                {"schedule_id", m.key_fields.schedule_id},
                {"shape_key", m.key_fields.shape_key},
                {"target", m.key_fields.target},
                {"nvrtc_version", m.key_fields.nvrtc_version},
                {"nvrtc_build", m.key_fields.nvrtc_build},
                {"source_sha256", m.key_fields.source_sha256},
                {"options", options}}},
              {"source_sha256", m.source_sha256},
              {"cubin_sha256", m.cubin_sha256},
              {"cubin_size", m.cubin_size},
              {"entry_points", entries},
              {"launch", m.launch},
              {"compile_ms", m.compile_ms},
              {"producer", producer_name(m.producer)},
              {"created_unix", m.created_unix},
              {"last_used_unix", m.last_used_unix}};
}

std::string serialize_manifest(const Manifest& manifest) {
  return to_json(manifest).dump(2) + "\n";
}

ManifestParse manifest_from_json(const json& j) {
  ManifestParse out;
  if (!j.is_object()) {
    out.message = "manifest is not a JSON object";
    return out;
  }
  // The version decides how to read the rest, so check it first.
  const auto version = j.find("manifest_version");
  if (version != j.end() && version->is_number_integer() && version->get<std::int64_t>() != k_manifest_version) {
    out.failure = MissReason::version_mismatch;
    out.message = fmt::format("manifest version {} (this build reads version {})", version->get<std::int64_t>(),
                              k_manifest_version);
    return out;
  }
  try {
    out.manifest = read_manifest(j);
  } catch (const BadField& e) {
    out.message = e.message;
  }
  return out;
}

ManifestParse parse_manifest(std::string_view text) {
  std::string error;
  const std::optional<json> j = parse_json_bounded(text, error);
  if (!j) {
    ManifestParse out;
    out.message = "manifest is not valid JSON (" + error + ")";
    return out;
  }
  return manifest_from_json(*j);
}

} // namespace kda::cache
