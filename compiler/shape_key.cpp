#include "compiler/shape_key.hpp"

#include <fmt/format.h>

namespace kda {

std::string ShapeKey::canonical() const {
  return fmt::format("d{}.in_{}.state_{}.{}{}", head_dim, to_string(input_dtype), to_string(state_dtype),
                     to_string(layout), checkpoints ? ".checkpoints" : "");
}

} // namespace kda
