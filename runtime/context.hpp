/// \file
/// Which CUDA context kdajit works in (architecture.md, API conventions): the
/// one current on the calling thread, or, when none is, device 0's primary
/// context, which is then retained and made current for that thread.
#pragma once

#include <cuda.h>

namespace kda::runtime {

/// The calling thread's current context after the rule above. The primary
/// context is retained once per process and never released (releasing it
/// would destroy it under modules that still live in it). Throws
/// ToolchainError when the driver is unavailable.
CUcontext ensure_current_context();

/// The device of ensure_current_context().
CUdevice current_device();

} // namespace kda::runtime
