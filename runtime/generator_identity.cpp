#include "runtime/generator_identity.hpp"

#include "cache/sha256.hpp"
#include "compiler/emit/emit_cuda.hpp"
#include "compiler/emit/template_library.hpp"

#include <fmt/format.h>

namespace kda {

const std::string& generator_id() {
  static const std::string k_id = [] {
    cache::Sha256 hash;
    for (const EmbeddedFile& t : embedded_templates()) {
      hash.update(t.name);
      hash.update(std::string_view("\0", 1));
      hash.update(t.text);
      hash.update(std::string_view("\0", 1));
    }
    return fmt::format("kdajit-{}-emit{}-{}", KDAJIT_VERSION, k_emitter_version, hash.finish_hex().substr(0, 16));
  }();
  return k_id;
}

cache::CacheKeyFields kernel_key_fields(const Schedule& schedule, const Target& target, const ShapeKey& shape,
                                        const NvrtcIdentity& nvrtc, const std::vector<std::string>& options,
                                        int abi_version, const std::string& source_sha256) {
  cache::CacheKeyFields f;
  f.layout_version = std::string(k_cache_layout_version);
  f.abi_version = std::to_string(abi_version);
  f.generator_id = generator_id();
  f.schedule_id = cache::canonical_json_hash(schedule.document);
  f.shape_key = shape.canonical();
  f.target = target.name;
  f.nvrtc_version = nvrtc.version;
  f.nvrtc_build = nvrtc.build;
  f.source_sha256 = source_sha256;
  f.options = options;
  return f;
}

std::string emitted_source_sha256(const std::string& source_text) {
  cache::Sha256 hash;
  hash.update(source_text);
  return hash.finish_hex();
}

} // namespace kda
