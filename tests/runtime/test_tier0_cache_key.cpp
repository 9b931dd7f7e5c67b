// Tier-0 kernels in the kernel cache: the key names the backend and the LLVM
// release (its options), the compiler identity is nvJitLink's, the source
// field is the SHA-256 of the module's IR, and the manifest records the
// build's three steps.
#include "cache/sha256.hpp"
#include "compiler/lower.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"
#include "runtime/kernel_registry.hpp"
#include "runtime/tier0_codegen.hpp"

#include <catch2/catch.hpp>

using namespace kda;

TEST_CASE("tier-0 kernels are cached under a key naming the backend and the LLVM release", "[runtime][ir][cache]") {
  const Schedule& s = *find_shipped_schedule("token_llvm_smem");
  const Target target = *find_target("sm_90a");
  ShapeKey shape;
  shape.layout = LayoutKind::packed;
  const std::shared_ptr<const PreparedKernel> k = KernelRegistry::instance().prepare(s, target, shape);
  REQUIRE(k->entry);
  const cache::CacheKeyFields& f = k->entry->manifest.key_fields;
  CHECK(f.options == std::vector<std::string>{"backend=llvm", "llvm=" + runtime::tier0_llvm_version()});
  CHECK(f.nvrtc_build.rfind("nvJitLink ", 0) == 0);
  CHECK(f.source_sha256 == cache::sha256_hex(runtime::tier0_ir(lower(validate(s, target), shape)).text));
  const nlohmann::json& steps = k->entry->manifest.launch["tier0_ms"];
  for (const char* step : {"ir", "ptx", "cubin"}) {
    CHECK(steps.contains(step));
  }
  // the same shape of a CUDA schedule is keyed by NVRTC and its options
  const std::shared_ptr<const PreparedKernel> cuda =
      KernelRegistry::instance().prepare(*find_shipped_schedule("portable_c16"), *find_target("sm_90"), shape);
  CHECK(cuda->entry->manifest.key_fields.options != f.options);
  CHECK(cuda->entry->manifest.key_fields.nvrtc_build.rfind("nvJitLink ", 0) != 0);
}
