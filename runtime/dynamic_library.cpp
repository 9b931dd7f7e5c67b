#include "runtime/dynamic_library.hpp"

#include <dlfcn.h>

namespace kda::runtime {

DynamicLibrary DynamicLibrary::open_first(const std::vector<std::string>& candidates) {
  DynamicLibrary library;
  for (const std::string& candidate : candidates) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      library.m_handle = handle;
      library.m_path = candidate;
      return library;
    }
    const char* why = dlerror();
    library.m_errors.push_back(why != nullptr ? std::string(why) : candidate + ": cannot be opened");
  }
  return library;
}

void* DynamicLibrary::symbol(const char* name) const {
  return m_handle != nullptr ? dlsym(m_handle, name) : nullptr;
}

std::string DynamicLibrary::joined_errors() const {
  std::string out;
  for (const std::string& e : m_errors) {
    out += out.empty() ? e : "; " + e;
  }
  return out;
}

} // namespace kda::runtime
