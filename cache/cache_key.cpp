#include "cache/cache_key.hpp"

#include "cache/sha256.hpp"

#include <cstdint>

namespace kda::cache {
namespace {

void append_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

void append_bytes(std::string& out, const std::string& bytes) {
  append_u64(out, bytes.size());
  out += bytes;
}

void append_record(std::string& out, const std::string& name, const std::string& value) {
  append_bytes(out, name);
  append_bytes(out, value);
}

} // namespace

std::string encode_cache_key_fields(const CacheKeyFields& fields) {
  std::string out;
  append_record(out, "kdajit-cache-key", std::to_string(k_key_encoding_version));
  append_record(out, "layout_version", fields.layout_version);
  append_record(out, "abi_version", fields.abi_version);
  append_record(out, "generator_id", fields.generator_id);
  append_record(out, "schedule_id", fields.schedule_id);
  append_record(out, "shape_key", fields.shape_key);
  append_record(out, "target", fields.target);
  append_record(out, "nvrtc_version", fields.nvrtc_version);
  append_record(out, "nvrtc_build", fields.nvrtc_build);
  append_record(out, "source_sha256", fields.source_sha256);
  append_bytes(out, "options");
  append_u64(out, fields.options.size());
  for (const std::string& option : fields.options) {
    append_bytes(out, option);
  }
  return out;
}

CacheKey make_cache_key(const CacheKeyFields& fields) {
  return CacheKey(sha256_hex(encode_cache_key_fields(fields)), fields);
}

std::string canonical_json_hash(const nlohmann::json& value) {
  return sha256_hex(value.dump());
}

} // namespace kda::cache
