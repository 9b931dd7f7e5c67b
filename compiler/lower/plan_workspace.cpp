#include "compiler/lower/passes.hpp"

namespace kda {

WorkspacePlan plan_workspace(const FamilyRecipe& recipe) {
  WorkspacePlan w;
  std::int64_t offset = 0;
  for (WorkspaceField f : recipe.workspace) {
    f.offset = offset;
    offset += (f.bytes + 15) / 16 * 16;
    w.fields.push_back(f);
  }
  w.record_bytes = offset;
  w.image_buffer = recipe.record_image_buffer;
  w.records_in_workspace = !recipe.records_in_smem_only;
  return w;
}

} // namespace kda
