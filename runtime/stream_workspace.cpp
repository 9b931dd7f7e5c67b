#include "runtime/stream_workspace.hpp"

#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <functional>
#include <map>
#include <thread>

namespace kda {

struct StreamScratch {
  std::mutex mutex; ///< held by a StreamLease
  CUdeviceptr workspace = 0;
  std::int64_t workspace_bytes = 0;
  CUdeviceptr flags = 0;
  std::int64_t flag_count = 0;
  std::uint32_t epoch = 0;
};

namespace {

std::mutex g_mutex; // the map only
std::map<StreamScratchKey, std::unique_ptr<StreamScratch>> g_scratch;

// Frees `data` after the work already enqueued on `stream` and allocates
// `bytes` (+25 %) in its place, stream-ordered.
std::int64_t regrow(CUdeviceptr& data, std::int64_t bytes, CUstream stream) {
  if (data != 0) {
    KDA_CU(cuMemFreeAsync, data, stream);
  }
  data = 0;
  const std::int64_t grown = bytes + bytes / 4;
  KDA_CU(cuMemAllocAsync, &data, static_cast<std::size_t>(grown), stream);
  return grown;
}

} // namespace

StreamScratchKey stream_scratch_key(void* context, void* stream) {
  StreamScratchKey key;
  key.context = context;
  if (stream == CU_STREAM_PER_THREAD) {
    key.stream = stream;
    key.thread = std::hash<std::thread::id>{}(std::this_thread::get_id()) | 1u; // never 0
  } else if (stream != CU_STREAM_LEGACY) {
    key.stream = stream;
  }
  return key;
}

StreamLease lease_stream_scratch(void* stream) {
  CUcontext context = runtime::ensure_current_context();
  StreamScratch* scratch = nullptr;
  {
    std::lock_guard lock(g_mutex);
    std::unique_ptr<StreamScratch>& slot = g_scratch[stream_scratch_key(context, stream)];
    if (!slot) {
      slot = std::make_unique<StreamScratch>();
    }
    scratch = slot.get(); // never removed: the pointer stays valid
  }
  return StreamLease(*scratch, stream);
}

StreamLease::StreamLease(StreamScratch& scratch, void* stream)
    : m_scratch(&scratch), m_stream(stream), m_lock(scratch.mutex) {}

void* StreamLease::workspace(std::int64_t bytes) {
  StreamScratch& s = *m_scratch;
  if (s.workspace_bytes < bytes) {
    s.workspace_bytes = 0;
    s.workspace_bytes = regrow(s.workspace, bytes, static_cast<CUstream>(m_stream));
  }
  return reinterpret_cast<void*>(s.workspace);
}

ReadyFlags StreamLease::ready_flags(std::int64_t count) {
  StreamScratch& s = *m_scratch;
  const CUstream stream = static_cast<CUstream>(m_stream);
  bool zero = false;
  if (s.flag_count < count) {
    s.flag_count = 0;
    s.flag_count = regrow(s.flags, count * 4, stream) / 4;
    s.epoch = 0;
    zero = true;
  }
  if (s.epoch == 0xffffffffu) {
    s.epoch = 0;
    zero = true;
  }
  if (zero) {
    KDA_CU(cuMemsetD32Async, s.flags, 0u, static_cast<std::size_t>(s.flag_count), stream);
  }
  ++s.epoch;
  return {reinterpret_cast<std::uint32_t*>(s.flags), s.epoch};
}

} // namespace kda
