/// \file
/// The cache-key inputs that name the generator and a kernel: generator
/// identity (kdajit version, emitter version and a hash of every embedded
/// template), and the full key fields of one (schedule, target, shape key).
#pragma once

#include "cache/cache_key.hpp"
#include "compiler/schedule.hpp"
#include "compiler/shape_key.hpp"
#include "compiler/target.hpp"

#include <string>
#include <vector>

namespace kda {

inline constexpr const char* k_cache_layout_version = "1";

/// "kdajit-<version>-emit<v>-<sha256 of the embedded templates, 16 hex>".
const std::string& generator_id();

/// The NVRTC that compiles (or compiled) a kernel: major.minor and the
/// library's build (NvrtcLibrary::build()).
struct NvrtcIdentity {
  std::string version;
  std::string build;
};

/// Everything that decides the generated code and its compile, the emitted
/// source's SHA-256 included (`source_sha256`, emitted_source_sha256): a
/// change to any lowering pass or to the emitter that changes the code
/// changes the key. Runtime values (T, N, H, B, pointers, strides, SM count,
/// driver version, lower_bound, scale) are not inputs here.
cache::CacheKeyFields kernel_key_fields(const Schedule& schedule, const Target& target, const ShapeKey& shape,
                                        const NvrtcIdentity& nvrtc, const std::vector<std::string>& options,
                                        int abi_version, const std::string& source_sha256);

/// The SHA-256 (hex) of an emitted CUDA source, as the key records it.
std::string emitted_source_sha256(const std::string& source_text);

} // namespace kda
