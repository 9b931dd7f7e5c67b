// libFuzzer target: the readers of what kdajit finds on disk. The first byte
// chooses the reader, the rest is its input: 0 a bundle (decoded, every
// entry's cubin read with its SHA-256 check), 1 a manifest (as manifest.json
// is read), 2 any JSON document through the bounded parser. Every outcome
// must be a value, a CacheError or a miss: a crash, a sanitizer report or any
// other exception is a finding. Seed corpus: tests/fuzz/corpus/cache_readers.
#include "cache/bundle.hpp"
#include "cache/manifest.hpp"
#include "compiler/errors.hpp"
#include "compiler/json_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
  case 0:
    try {
      const kda::cache::Bundle bundle =
          kda::cache::Bundle::decode(kda::cache::Bytes(data + 1, data + size), "fuzz.kdab");
      for (const kda::cache::BundleEntry& entry : bundle.entries()) {
        try {
          bundle.cubin(entry);
        } catch (const kda::CacheError&) {
          // a damaged entry: skipped by the runtime
        }
      }
    } catch (const kda::CacheError&) {
    }
    break;
  case 1:
    kda::cache::parse_manifest(rest); // a miss with its reason, never an exception
    break;
  default: {
    std::string error;
    kda::parse_json_bounded(rest, error);
  }
  }
  return 0;
}
