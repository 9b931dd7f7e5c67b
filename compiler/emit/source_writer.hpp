/// \file
/// Builds generated source line by line with indentation; the only place the
/// emitter appends text.
#pragma once

#include <string>

namespace kda {

class SourceWriter {
public:
  void line(const std::string& text);
  void blank();
  /// Writes `header {` and indents.
  void open(const std::string& header);
  /// Dedents and writes `}` followed by `trailer`.
  void close(const std::string& trailer = "");
  /// Appends a block verbatim (a fragment), ensuring it ends with a newline.
  void verbatim(std::string_view text);
  const std::string& text() const { return m_text; }

private:
  std::string m_text;
  int m_indent = 0;
};

} // namespace kda
