#include "runtime/ptx_linker.hpp"

#include "compiler/errors.hpp"
#include "runtime/nvjitlink_library.hpp"

#include <fmt/format.h>

namespace kda::runtime {
namespace {

// One nvJitLink handle, destroyed on every path.
class LinkHandle {
public:
  LinkHandle(const NvJitLinkApi& api, const std::vector<std::string>& options) : m_api(api) {
    std::vector<const char*> argv;
    for (const std::string& o : options) {
      argv.push_back(o.c_str());
    }
    m_result = m_api.create(&m_handle, static_cast<std::uint32_t>(argv.size()), argv.data());
  }
  ~LinkHandle() {
    if (m_handle != nullptr) {
      m_api.destroy(&m_handle);
    }
  }
  LinkHandle(const LinkHandle&) = delete;
  LinkHandle& operator=(const LinkHandle&) = delete;

  nvJitLinkHandle get() const { return m_handle; }
  nvJitLinkResult created() const { return m_result; }

  std::string log(bool errors) const {
    std::size_t size = 0;
    if ((errors ? m_api.error_log_size(m_handle, &size) : m_api.info_log_size(m_handle, &size)) != NVJITLINK_SUCCESS ||
        size <= 1) {
      return {};
    }
    std::string text(size, '\0');
    (errors ? m_api.error_log(m_handle, text.data()) : m_api.info_log(m_handle, text.data()));
    text.resize(size - 1); // the terminating NUL
    return text;
  }

private:
  const NvJitLinkApi& m_api;
  nvJitLinkHandle m_handle = nullptr;
  nvJitLinkResult m_result = NVJITLINK_ERROR_INTERNAL;
};

} // namespace

LinkedCubin link_ptx(std::string_view ptx, const Target& target, const std::string& label) {
  const NvJitLinkLibrary& library = NvJitLinkLibrary::get();
  LinkedCubin out;
  out.options = {"-arch=" + target.arch(), "-Xptxas=-v"};
  LinkHandle link(library.api(), out.options);
  if (link.created() != NVJITLINK_SUCCESS) {
    throw ToolchainError(fmt::format("nvJitLink {} refused the options for {} (result {})", library.version(),
                                     target.name, static_cast<int>(link.created())),
                         {}, out.options);
  }
  const std::string name = label.empty() ? "kernel.ptx" : label;
  const nvJitLinkResult added =
      library.api().add_data(link.get(), NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), name.c_str());
  const nvJitLinkResult linked = added == NVJITLINK_SUCCESS ? library.api().complete(link.get()) : added;
  std::size_t size = 0;
  if (linked == NVJITLINK_SUCCESS) {
    library.api().cubin_size(link.get(), &size);
  }
  if (linked != NVJITLINK_SUCCESS || size == 0) {
    throw ToolchainError(fmt::format("nvJitLink {} could not build {} for {} ({} failed, result {})", library.version(),
                                     name, target.name, added != NVJITLINK_SUCCESS ? "adding the PTX" : "the link",
                                     static_cast<int>(linked)),
                         link.log(true), out.options);
  }
  out.cubin.resize(size);
  if (library.api().cubin(link.get(), out.cubin.data()) != NVJITLINK_SUCCESS) {
    throw ToolchainError(fmt::format("nvJitLink {} built {} but did not hand out its cubin", library.version(), name),
                         link.log(true), out.options);
  }
  out.info_log = link.log(false);
  return out;
}

} // namespace kda::runtime
