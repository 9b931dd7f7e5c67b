#include "runtime/stream_workspace.hpp"

#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <map>
#include <mutex>

namespace kda {
namespace {

struct Workspace {
  CUdeviceptr data = 0;
  std::int64_t bytes = 0;
};

std::mutex g_mutex;
std::map<std::pair<CUcontext, void*>, Workspace> g_workspaces;

} // namespace

void* stream_workspace(void* stream, std::int64_t bytes) {
  CUcontext context = runtime::ensure_current_context();
  std::lock_guard lock(g_mutex);
  Workspace& w = g_workspaces[{context, stream}];
  if (w.bytes < bytes) {
    CUstream s = static_cast<CUstream>(stream);
    if (w.data != 0) {
      KDA_CU(cuMemFreeAsync, w.data, s);
    }
    w.data = 0;
    w.bytes = 0;
    const std::int64_t grown = bytes + bytes / 4;
    KDA_CU(cuMemAllocAsync, &w.data, static_cast<std::size_t>(grown), s);
    w.bytes = grown;
  }
  return reinterpret_cast<void*>(w.data);
}

} // namespace kda
