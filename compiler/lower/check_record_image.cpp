#include "compiler/lower/passes.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

void check_record_image(const ValidatedSchedule& v, const WorkspacePlan& workspace) {
  if (workspace.image_buffer.empty()) {
    return;
  }
  std::vector<Diagnostic> problems;
  for (const ValidatedKernel& k : v.kernels()) {
    if (k.decl.role != KernelRole::recurrence && k.decl.role != KernelRole::fused) {
      continue; // the recurrence copies records into it; a fused kernel forms them there
    }
    const PlacedBuffer* b = k.smem.find(workspace.image_buffer);
    if (b == nullptr) {
      continue; // place_smem reports the missing buffer
    }
    if (b->bytes != workspace.record_bytes) {
      problems.push_back({b->json_path + "/shape",
                          fmt::format("buffer '{}' holds one workspace record (copied whole by one bulk copy, or "
                                      "formed there by a fused kernel): it must hold exactly {} bytes (the "
                                      "generator's record), not {}",
                                      b->name, workspace.record_bytes, b->bytes)});
    }
    if (b->region != Region::stage) {
      problems.push_back({b->json_path + "/region",
                          fmt::format("buffer '{}' receives a record per chunk: it belongs in the 'stage' region",
                                      b->name)});
    }
  }
  if (!problems.empty()) {
    throw ScheduleError(v.schedule().source, std::move(problems));
  }
}

} // namespace kda
