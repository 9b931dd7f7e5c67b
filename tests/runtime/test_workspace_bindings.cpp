// The host table of workspace bindings behind PrefillPlan::run.
#include "compiler/errors.hpp"
#include "runtime/workspace_bindings.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("workspace bindings: a workspace serves one live plan at a time", "[runtime][plan][contract]") {
  WorkspaceBindings b;
  int plan_a = 0, plan_b = 0, ws1 = 0, ws2 = 0;
  b.bind(&ws1, &plan_a, "a");
  b.bind(&ws1, &plan_a, "a"); // again: fine
  b.bind(&ws2, &plan_a, "a"); // a plan may have several workspaces
  CHECK(b.bound_plan(&ws1) == &plan_a);
  CHECK_THROWS_WITH(b.bind(&ws1, &plan_b, "b"), Catch::Contains("argument 'workspace'") &&
                                                    Catch::Contains("is bound to another live PrefillPlan"));
  b.unbind_all(&plan_a);
  CHECK(b.bound_plan(&ws1) == nullptr);
  CHECK(b.bound_plan(&ws2) == nullptr);
  b.bind(&ws1, &plan_b, "b"); // free again
  CHECK(b.bound_plan(&ws1) == &plan_b);
}
