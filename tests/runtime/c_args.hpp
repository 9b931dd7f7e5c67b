/// \file
/// The C API's view of a C++ call (kdajit/kda_c.h) for the tests that call
/// through it: the same tensors, dtypes, shapes and strides.
#pragma once

#include "kdajit/kda_c.h"
#include "kdajit/prefill_args.hpp"

namespace kda::test {

/// `t` as a kda_tensor (strides given only when `t` has explicit strides).
kda_tensor c_tensor(const TensorRef& t);

/// Every field of `a` as kda_prefill_args (initialised by kda_prefill_args_init first).
kda_prefill_args c_args(const PrefillArgs& a);

} // namespace kda::test
