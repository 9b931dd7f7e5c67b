#include "runtime/workspace_bindings.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

namespace kda {

void WorkspaceBindings::bind(const void* workspace, const void* plan, const std::string& schedule) {
  std::lock_guard lock(m_mutex);
  const auto [it, inserted] = m_bindings.try_emplace(workspace, plan); // no node made when bound
  if (!inserted && it->second != plan) {
    throw TensorError("workspace", fmt::format("{} is bound to another live PrefillPlan: every plan needs a workspace "
                                               "of its own (this one runs {})",
                                               workspace, schedule));
  }
}

void WorkspaceBindings::unbind_all(const void* plan) {
  std::lock_guard lock(m_mutex);
  std::erase_if(m_bindings, [plan](const auto& binding) { return binding.second == plan; });
}

const void* WorkspaceBindings::bound_plan(const void* workspace) const {
  std::lock_guard lock(m_mutex);
  const auto it = m_bindings.find(workspace);
  return it == m_bindings.end() ? nullptr : it->second;
}

WorkspaceBindings& WorkspaceBindings::instance() {
  static WorkspaceBindings bindings;
  return bindings;
}

} // namespace kda
