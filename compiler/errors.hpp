/// \file
/// The error types (kdajit/errors.hpp, public) and kdajit's internal
/// assertion, which reports a broken invariant as an InternalError.
#pragma once

#include "kdajit/errors.hpp"

#include <string>

namespace kda {

[[noreturn]] void internal_assert_failed(const char* condition, const char* file, int line, const std::string& what);

} // namespace kda

#define KDA_INTERNAL_ASSERT(condition, what)                                                                 \
  do {                                                                                                       \
    if (!(condition)) {                                                                                      \
      ::kda::internal_assert_failed(#condition, __FILE__, __LINE__, (what));                                 \
    }                                                                                                        \
  } while (false)
