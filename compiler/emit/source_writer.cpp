#include "compiler/emit/source_writer.hpp"

#include "compiler/errors.hpp"

namespace kda {

void SourceWriter::line(const std::string& text) {
  m_text.append(static_cast<std::size_t>(2 * m_indent), ' ');
  m_text += text;
  m_text += '\n';
}

void SourceWriter::blank() {
  m_text += '\n';
}

void SourceWriter::open(const std::string& header) {
  line(header + " {");
  ++m_indent;
}

void SourceWriter::close(const std::string& trailer) {
  KDA_INTERNAL_ASSERT(m_indent > 0, "unbalanced SourceWriter::close");
  --m_indent;
  line("}" + trailer);
}

void SourceWriter::verbatim(std::string_view text) {
  m_text += text;
  if (!text.empty() && text.back() != '\n') {
    m_text += '\n';
  }
}

} // namespace kda
