#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

void check_walk_info(const ValidatedSchedule& v, bool prepare_walks_items) {
  if (!prepare_walks_items) {
    return;
  }
  std::vector<Diagnostic> problems;
  for (const ValidatedKernel& k : v.kernels()) {
    if (k.decl.role != KernelRole::prepare) {
      continue;
    }
    const PlacedBuffer* info = k.smem.find("chunk_info");
    if (info == nullptr) {
      continue; // place_smem reports the missing buffer
    }
    for (const PlacedBuffer& other : k.smem.buffers) {
      const bool shares = other.present && other.name != info->name && other.region == info->region &&
                          other.offset < info->offset + info->bytes && info->offset < other.offset + other.bytes;
      if (shares) {
        problems.push_back({info->json_path,
                            fmt::format("buffer 'chunk_info' holds the prepare kernel's walk between chunks "
                                        "(prepare_overlap on a persistent grid): no other buffer may reuse its bytes, "
                                        "but '{}' does (give it the whole chunk's lifetime and no alias)",
                                        other.name)});
      }
    }
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

} // namespace kda
