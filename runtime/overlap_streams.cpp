#include "runtime/overlap_streams.hpp"

#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <map>
#include <memory>

namespace kda {
namespace {

struct Lane {
  CUstream side = nullptr;
  CUevent prepared = nullptr;
  CUevent finished = nullptr;
  std::mutex mutex;
};

struct Flags {
  CUdeviceptr data = 0;
  std::int64_t count = 0;
  std::uint32_t epoch = 0;
};

std::mutex g_mutex;
std::map<CUcontext, std::unique_ptr<Lane>> g_lanes;
std::map<std::pair<CUcontext, void*>, Flags> g_flags;

} // namespace

OverlapLane acquire_overlap_lane() {
  CUcontext context = runtime::ensure_current_context();
  Lane* lane = nullptr;
  {
    std::lock_guard lock(g_mutex);
    std::unique_ptr<Lane>& slot = g_lanes[context];
    if (!slot) {
      auto created = std::make_unique<Lane>();
      int least = 0;
      int greatest = 0;
      KDA_CU(cuCtxGetStreamPriorityRange, &least, &greatest);
      KDA_CU(cuStreamCreateWithPriority, &created->side, CU_STREAM_NON_BLOCKING, greatest);
      KDA_CU(cuEventCreate, &created->prepared, CU_EVENT_DISABLE_TIMING);
      KDA_CU(cuEventCreate, &created->finished, CU_EVENT_DISABLE_TIMING);
      slot = std::move(created);
    }
    lane = slot.get();
  }
  OverlapLane out;
  out.lock = std::unique_lock<std::mutex>(lane->mutex);
  out.side = lane->side;
  out.prepared = lane->prepared;
  out.finished = lane->finished;
  return out;
}

ReadyFlags stream_ready_flags(void* stream, std::int64_t count) {
  CUcontext context = runtime::ensure_current_context();
  CUstream s = static_cast<CUstream>(stream);
  std::lock_guard lock(g_mutex);
  Flags& f = g_flags[{context, stream}];
  bool zero = false;
  if (f.count < count) {
    if (f.data != 0) {
      KDA_CU(cuMemFreeAsync, f.data, s);
    }
    f.data = 0;
    f.count = 0;
    const std::int64_t grown = count + count / 4;
    KDA_CU(cuMemAllocAsync, &f.data, static_cast<std::size_t>(grown * 4), s);
    f.count = grown;
    f.epoch = 0;
    zero = true;
  }
  if (f.epoch == 0xffffffffu) {
    f.epoch = 0;
    zero = true;
  }
  if (zero) {
    KDA_CU(cuMemsetD32Async, f.data, 0u, static_cast<std::size_t>(f.count), s);
  }
  ++f.epoch;
  return {reinterpret_cast<std::uint32_t*>(f.data), f.epoch};
}

bool stream_is_capturing(void* stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  KDA_CU(cuStreamIsCapturing, static_cast<CUstream>(stream), &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

} // namespace kda
