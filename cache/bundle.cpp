#include "cache/bundle.hpp"

#include "compiler/json_reader.hpp"

#include "cache/posix_io.hpp"
#include "cache/sha256.hpp"
#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace kda::cache {
namespace {

constexpr std::uint64_t k_align = 16;

std::uint64_t align_up(std::uint64_t n) {
  return (n + k_align - 1) / k_align * k_align;
}

void put_u64(Bytes& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
}

std::uint64_t get_u64(const Bytes& in, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | in[at + static_cast<std::size_t>(i)];
  }
  return v;
}

[[noreturn]] void refuse(const std::string& source, const std::string& what) {
  throw CacheError(fmt::format("bundle {}: {}", source, what));
}

} // namespace

Bytes encode_bundle(const BundleIdentity& identity, const std::vector<BundleInput>& inputs) {
  nlohmann::json entries = nlohmann::json::array();
  std::uint64_t offset = 0;
  for (const BundleInput& in : inputs) {
    Manifest m;
    m.key_fields = in.key_fields;
    m.key = make_cache_key(in.key_fields).hex();
    m.cubin_sha256 = sha256_hex(std::span<const std::uint8_t>(in.cubin));
    m.cubin_size = in.cubin.size();
    m.entry_points = in.entry_points;
    m.launch = in.launch;
    m.producer = Producer::aot;
    entries.push_back({{"offset", offset}, {"manifest", to_json(m)}});
    offset = align_up(offset + in.cubin.size());
  }
  const std::string index = nlohmann::json{{"format_version", k_bundle_format_version},
                                           {"generator_id", identity.generator_id},
                                           {"abi_version", identity.abi_version},
                                           {"layout_version", identity.layout_version},
                                           {"nvrtc_version", identity.nvrtc_version},
                                           {"nvrtc_build", identity.nvrtc_build},
                                           {"entries", entries}}
                                .dump();
  Bytes out(k_bundle_magic, k_bundle_magic + 8);
  put_u64(out, index.size());
  out.insert(out.end(), index.begin(), index.end());
  out.resize(align_up(out.size()), 0);
  const std::size_t payload = out.size();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out.resize(payload + entries[i]["offset"].get<std::uint64_t>(), 0);
    out.insert(out.end(), inputs[i].cubin.begin(), inputs[i].cubin.end());
  }
  return out;
}

Bundle Bundle::decode(Bytes bytes, const std::string& source) {
  Bundle b;
  b.m_source = source;
  if (bytes.size() < 16 || std::memcmp(bytes.data(), k_bundle_magic, 8) != 0) {
    refuse(source, "not a kdajit bundle (no KDAJITB1 magic)");
  }
  const std::uint64_t index_size = get_u64(bytes, 8);
  if (index_size > bytes.size() - 16) {
    refuse(source, fmt::format("truncated: the index needs {} bytes, the file has {} after the header", index_size,
                               bytes.size() - 16));
  }
  std::string error;
  const std::optional<nlohmann::json> parsed = parse_json_bounded(
      std::string_view(reinterpret_cast<const char*>(bytes.data()) + 16, static_cast<std::size_t>(index_size)), error);
  if (!parsed || !parsed->is_object()) {
    refuse(source, parsed ? std::string("the index is not a JSON object") : "the index is not valid JSON (" + error + ")");
  }
  const nlohmann::json& index = *parsed;
  const auto version_field = index.find("format_version");
  const long long version = version_field != index.end() && version_field->is_number_integer()
                                ? version_field->get<long long>()
                                : -1;
  if (version != k_bundle_format_version) {
    refuse(source, fmt::format("format version {} (this build reads version {})", version, k_bundle_format_version));
  }
  try {
    b.m_identity = {index.at("generator_id").get<std::string>(), index.at("abi_version").get<std::string>(),
                    index.at("layout_version").get<std::string>(), index.at("nvrtc_version").get<std::string>(),
                    index.at("nvrtc_build").get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    refuse(source, "the index lacks generator_id, abi_version, layout_version, nvrtc_version or nvrtc_build");
  }
  b.m_payload = align_up(16 + index_size);
  const std::uint64_t payload_size = bytes.size() > b.m_payload ? bytes.size() - b.m_payload : 0;
  const nlohmann::json* entries = index.contains("entries") && index["entries"].is_array() ? &index["entries"] : nullptr;
  if (entries == nullptr) {
    refuse(source, "the index has no entries array");
  }
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const nlohmann::json& e = (*entries)[i];
    if (!e.is_object() || !e.contains("offset") || !e["offset"].is_number_unsigned() || !e.contains("manifest")) {
      refuse(source, fmt::format("entry {}: needs an offset and a manifest", i));
    }
    ManifestParse parsed = manifest_from_json(e["manifest"]);
    if (!parsed.manifest) {
      refuse(source, fmt::format("entry {}: {}", i, parsed.message));
    }
    BundleEntry entry{std::move(*parsed.manifest), e["offset"].get<std::uint64_t>()};
    if (entry.manifest.key != make_cache_key(entry.manifest.key_fields).hex()) {
      refuse(source, fmt::format("entry {}: its key does not match its key fields", i));
    }
    if (entry.offset > payload_size || entry.manifest.cubin_size > payload_size - entry.offset) {
      refuse(source, fmt::format("truncated: entry {} ({}) needs payload bytes [{}, {}), the payload has {}", i,
                                 entry.manifest.key.substr(0, 16), entry.offset,
                                 entry.offset + entry.manifest.cubin_size, payload_size));
    }
    b.m_entries.push_back(std::move(entry));
  }
  b.m_bytes = std::move(bytes);
  return b;
}

Bundle Bundle::read(const std::string& path) {
  ReadResult file = try_read_file(path);
  if (!file.ok()) {
    throw CacheError(fmt::format("bundle {}: cannot be read: {}", path, file.what()));
  }
  return decode(std::move(file.bytes), path);
}

const BundleEntry* Bundle::find(const std::string& key) const {
  for (const BundleEntry& e : m_entries) {
    if (e.manifest.key == key) {
      return &e;
    }
  }
  return nullptr;
}

Bytes Bundle::cubin(const BundleEntry& entry) const {
  const auto first = m_bytes.begin() + static_cast<long>(m_payload + entry.offset);
  Bytes cubin(first, first + static_cast<long>(entry.manifest.cubin_size));
  if (sha256_hex(std::span<const std::uint8_t>(cubin)) != entry.manifest.cubin_sha256) {
    throw CacheError(fmt::format("bundle {}: the cubin of {} does not match its SHA-256", m_source,
                                 entry.manifest.key.substr(0, 16)));
  }
  return cubin;
}

} // namespace kda::cache
