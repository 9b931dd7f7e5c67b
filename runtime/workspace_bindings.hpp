/// \file
/// Which live PrefillPlan each caller-owned workspace is bound to: a host
/// table (nothing is read on the device), so that two plans never share a
/// workspace (their sequence tables and records would overwrite each other).
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace kda {

class WorkspaceBindings {
public:
  /// Binds `workspace` to `plan` on first use; TensorError (argument
  /// "workspace") when it is bound to another plan.
  void bind(const void* workspace, const void* plan, const std::string& schedule);
  /// Releases every workspace bound to `plan` (the plan is destroyed).
  void unbind_all(const void* plan);
  /// The plan `workspace` is bound to, or nullptr.
  const void* bound_plan(const void* workspace) const;

  /// The process's table.
  static WorkspaceBindings& instance();

private:
  mutable std::mutex m_mutex;
  std::map<const void*, const void*> m_bindings;
};

} // namespace kda
