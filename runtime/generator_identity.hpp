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

/// Everything that decides the generated code and its compile. Runtime values
/// (T, N, H, B, pointers, strides, SM count, driver version, lower_bound,
/// scale) are not inputs here.
cache::CacheKeyFields kernel_key_fields(const Schedule& schedule, const Target& target, const ShapeKey& shape,
                                        const std::string& nvrtc_version, const std::vector<std::string>& options,
                                        int abi_version);

} // namespace kda
