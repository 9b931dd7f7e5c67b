/// \file
/// What an overlapped call (runtime/prepare_overlap.hpp) needs beyond the
/// workspace: per context one high-priority stream through which every
/// overlapped recurrence runs (so recurrences of concurrent calls never wait on
/// each other's prepare kernels while holding SMs), the two events that fork it
/// from and join it to the caller's stream; and per caller stream a zeroed
/// buffer of ready flags with a fresh epoch for each call.
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
  std::unique_lock<std::mutex> lock;
};

OverlapLane acquire_overlap_lane();

struct ReadyFlags {
  std::uint32_t* flags = nullptr;
  std::uint32_t epoch = 0; ///< never 0: a zeroed flag never matches
};

/// At least `count` ready flags for `stream`, zeroed (stream-ordered) when
/// first allocated or grown and whenever the epoch wraps; each call gets the
/// next epoch.
ReadyFlags stream_ready_flags(void* stream, std::int64_t count);

/// Whether `stream` is being captured into a CUDA graph.
bool stream_is_capturing(void* stream);

} // namespace kda
