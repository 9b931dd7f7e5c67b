/// \file
/// What an overlapped call (runtime/prepare_overlap.hpp) needs beyond the
/// workspace: per context one high-priority stream through which every
/// overlapped recurrence runs (so recurrences of concurrent calls never wait on
/// each other's prepare kernels while holding SMs) and the two events that fork
/// it from and join it to the caller's stream. The ready flags are the
/// stream's scratch (runtime/stream_workspace.hpp).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>

namespace kda {

/// The context's overlap lane, locked for as long as this object lives: the
/// fork and join are enqueued while it is held, so calls from several threads
/// never interleave their use of the events.
struct OverlapLane {
  CUstream side = nullptr;      ///< highest priority the context offers
  CUevent prepared = nullptr;   ///< recorded on the caller's stream after the leading prepare kernel
  CUevent finished = nullptr;   ///< recorded on `side` after the recurrence
  int priority = 0;             ///< `side`'s
  std::unique_lock<std::mutex> lock;
};

/// A context's lane: made on first use, kept for the process's life.
struct ContextLane;

/// The lane of `context` (the current one, whose lane it creates on first
/// use); the pointer stays valid, so a plan resolves it once.
ContextLane& context_overlap_lane(CUcontext context);

/// `lane`, locked.
OverlapLane lock_overlap_lane(ContextLane& lane);

/// The lane of `context`, locked (context_overlap_lane, then lock_overlap_lane).
OverlapLane acquire_overlap_lane(CUcontext context);

/// The greatest (most urgent) stream priority of the current context.
int greatest_stream_priority();

/// Whether `stream` is being captured into a CUDA graph.
bool stream_is_capturing(void* stream);

} // namespace kda
