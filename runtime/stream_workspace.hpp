/// \file
/// Scratch memory a decomposed design needs between its kernels, one growing
/// buffer per (context, stream), allocated and freed stream-ordered. Eager
/// calls only: CUDA-graph capture needs a caller-owned workspace (later).
#pragma once

#include <cstdint>

namespace kda {

/// A device buffer of at least `bytes` for `stream`, valid until the next call
/// on the same stream asks for more.
void* stream_workspace(void* stream, std::int64_t bytes);

} // namespace kda
