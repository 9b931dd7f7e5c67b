#include "compiler/emit/template_library.hpp"

#include "compiler/errors.hpp"

namespace kda {

std::string_view template_text(const std::string& name) {
  for (const EmbeddedFile& t : embedded_templates()) {
    if (t.name == name) {
      return t.text;
    }
  }
  throw InternalError("template fragment '" + name + "' is not embedded in this build");
}

} // namespace kda
