// A process that already holds another LLVM, loaded with RTLD_GLOBAL (what
// importing Triton, which carries its own LLVM, can do), still runs kdajit's
// LLVM tier, and the other LLVM keeps working: libkdajit.so's LLVM is its own
// (its version script keeps every LLVM symbol local), so neither copy binds
// to the other's functions, command-line option registry or target registry.
// The other LLVM here is Debian's libLLVM.so.19.1, the same release as
// kdajit's: the case where every symbol name collides.
//   llvm_coexistence <path to libLLVM.so> <path to libkdajit.so>
#include "compiler/ir/tier0.hpp"
#include "compiler/lower.hpp"
#include "compiler/schedule_library.hpp"
#include "compiler/validated_schedule.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "llvm_coexistence: %s\n", what.c_str());
  return 1;
}

// The other LLVM, through its C API: NVPTX registered and found by triple.
bool other_llvm_finds_nvptx(void* llvm) {
  using Init = void (*)();
  using Lookup = int (*)(const char*, void**, char**);
  for (const char* name : {"LLVMInitializeNVPTXTargetInfo", "LLVMInitializeNVPTXTarget", "LLVMInitializeNVPTXTargetMC"}) {
    auto init = reinterpret_cast<Init>(dlsym(llvm, name));
    if (init == nullptr) {
      return false;
    }
    init();
  }
  auto lookup = reinterpret_cast<Lookup>(dlsym(llvm, "LLVMGetTargetFromTriple"));
  void* target = nullptr;
  char* error = nullptr;
  return lookup != nullptr && lookup("nvptx64-nvidia-cuda", &target, &error) == 0 && target != nullptr;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    return fail("usage: llvm_coexistence <libLLVM.so> <libkdajit.so>");
  }
  void* other = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (other == nullptr) {
    return fail(std::string("cannot open the other LLVM: ") + dlerror());
  }
  if (!other_llvm_finds_nvptx(other)) {
    return fail("the other LLVM does not find its NVPTX target");
  }
  void* kdajit = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (kdajit == nullptr) {
    return fail(std::string("cannot open libkdajit.so: ") + dlerror());
  }
  // kdajit's LLVM is invisible from outside: nothing of it can bind to (or be
  // bound by) the other LLVM's names
  for (const char* name : {"LLVMInitializeNVPTXTarget", "LLVMGetTargetFromTriple", "_ZN4llvm2cl6ParserC1Ev",
                           "_ZN4llvm11LLVMContextC1Ev"}) {
    void* own = dlsym(kdajit, name);
    Dl_info info{};
    if (own != nullptr && dladdr(own, &info) != 0 && info.dli_fname != nullptr &&
        std::strstr(info.dli_fname, "kdajit") != nullptr) {
      return fail(std::string("libkdajit.so exports LLVM's ") + name);
    }
  }
  using Entry = const kda::tier0::Api* (*)(const char**);
  auto entry = reinterpret_cast<Entry>(dlsym(kdajit, "kda_internal_tier0_api_v1"));
  const char* build = nullptr;
  const kda::tier0::Api* api = entry != nullptr ? entry(&build) : nullptr;
  if (api == nullptr || build == nullptr || std::strcmp(build, KDAJIT_TIER0_BUILD_ID) != 0) {
    return fail("libkdajit.so has no LLVM tier of this build");
  }
  const kda::KernelPlan plan = kda::lower(
      kda::validate(*kda::find_shipped_schedule("token_llvm_smem"), *kda::find_target("sm_90a")), kda::ShapeKey{});
  for (int round = 0; round < 2; ++round) { // each LLVM after the other's work, twice
    const std::string ptx = api->ptx(plan).ptx;
    if (ptx.find(".entry " + plan.token->entry_name) == std::string::npos) {
      return fail("kdajit's LLVM wrote no kernel beside the other LLVM");
    }
    if (!other_llvm_finds_nvptx(other)) {
      return fail("the other LLVM lost its NVPTX target after kdajit's ran");
    }
  }
  std::printf("kdajit's LLVM tier (LLVM %s) and %s work side by side\n", api->llvm_version().c_str(), argv[1]);
  return 0;
}
