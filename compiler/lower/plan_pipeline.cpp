#include "compiler/lower/passes.hpp"

namespace kda {

void plan_pipeline(const ValidatedSchedule& v, std::vector<EntryPlan>& entries) {
  for (EntryPlan& e : entries) {
    for (const ValidatedKernel& k : v.kernels()) {
      if (k.decl.name == e.kernel) {
        e.pipeline = {k.decl.pipeline.stages, k.decl.pipeline.producer_groups};
      }
    }
  }
}

} // namespace kda
