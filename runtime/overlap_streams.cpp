#include "runtime/overlap_streams.hpp"

#include "runtime/context.hpp"
#include "runtime/cuda_driver.hpp"

#include <map>
#include <memory>

namespace kda {

struct ContextLane {
  CUstream side = nullptr;
  CUevent prepared = nullptr;
  CUevent finished = nullptr;
  int priority = 0;
  std::mutex mutex;
};

namespace {

std::mutex g_mutex;
std::map<CUcontext, std::unique_ptr<ContextLane>> g_lanes;

} // namespace

ContextLane& context_overlap_lane(CUcontext context) {
  std::lock_guard lock(g_mutex);
  std::unique_ptr<ContextLane>& slot = g_lanes[context];
  if (!slot) {
    auto created = std::make_unique<ContextLane>();
    created->priority = greatest_stream_priority();
    KDA_CU(cuStreamCreateWithPriority, &created->side, CU_STREAM_NON_BLOCKING, created->priority);
    KDA_CU(cuEventCreate, &created->prepared, CU_EVENT_DISABLE_TIMING);
    KDA_CU(cuEventCreate, &created->finished, CU_EVENT_DISABLE_TIMING);
    slot = std::move(created);
  }
  return *slot;
}

OverlapLane lock_overlap_lane(ContextLane& lane) {
  OverlapLane out;
  out.lock = std::unique_lock<std::mutex>(lane.mutex);
  out.side = lane.side;
  out.prepared = lane.prepared;
  out.finished = lane.finished;
  out.priority = lane.priority;
  return out;
}

OverlapLane acquire_overlap_lane(CUcontext context) {
  return lock_overlap_lane(context_overlap_lane(context));
}

int greatest_stream_priority() {
  int least = 0;
  int greatest = 0;
  KDA_CU(cuCtxGetStreamPriorityRange, &least, &greatest);
  return greatest;
}

bool stream_is_capturing(void* stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  KDA_CU(cuStreamIsCapturing, static_cast<CUstream>(stream), &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

} // namespace kda
