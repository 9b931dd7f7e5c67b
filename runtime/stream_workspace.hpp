/// \file
/// Scratch memory of eager calls, per (context, stream): the workspace a
/// decomposed design needs between its kernels and the ready flags of the
/// prepare-overlap path, each one growing buffer allocated and freed
/// stream-ordered. CU_STREAM_PER_THREAD names a different stream on every
/// thread, so its scratch is per (context, thread); the legacy default stream
/// (nullptr or CU_STREAM_LEGACY) is one stream for every thread.
///
/// A call holds a StreamLease from before it looks the buffers up until its
/// last launch is enqueued: a call from another thread on the same stream
/// waits, so it neither shares the buffers with a call in flight on the host
/// nor frees them (to grow them) before that call's launches are enqueued;
/// once they are, the stream orders the free after them. CUDA-graph capture
/// needs a caller-owned workspace instead (kda::PrefillPlan).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

namespace kda {

struct ReadyFlags {
  std::uint32_t* flags = nullptr;
  std::uint32_t epoch = 0; ///< never 0: a zeroed flag never matches
};

struct StreamScratch;

class StreamLease {
public:
  StreamLease(StreamScratch& scratch, void* stream);
  /// A device buffer of at least `bytes` for this call (grown stream-ordered;
  /// the contents are not kept across growth).
  void* workspace(std::int64_t bytes);
  /// At least `count` ready flags, zeroed (stream-ordered) when first
  /// allocated or grown and whenever the epoch wraps; each call the next epoch.
  ReadyFlags ready_flags(std::int64_t count);

private:
  StreamScratch* m_scratch;
  void* m_stream;
  std::unique_lock<std::mutex> m_lock;
};

/// The scratch of `stream` in the current context, locked for this call.
StreamLease lease_stream_scratch(void* stream);

/// The key a stream's scratch is kept under: the stream, with the calling
/// thread for CU_STREAM_PER_THREAD, and nullptr for both spellings of the
/// legacy default stream (exposed for tests).
struct StreamScratchKey {
  void* context = nullptr;
  void* stream = nullptr;
  std::uint64_t thread = 0; ///< non-zero only for CU_STREAM_PER_THREAD
  auto operator<=>(const StreamScratchKey&) const = default;
};
StreamScratchKey stream_scratch_key(void* context, void* stream);

} // namespace kda
