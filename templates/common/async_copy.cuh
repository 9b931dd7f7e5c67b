// kdajit fragment: common/async_copy
// sm_90+ asynchronous copies and their barriers: mbarriers with transaction
// counts, bulk copies global -> shared (cp.async.bulk, the TMA unit without
// a tensor map), tensor loads global -> shared and tensor stores shared ->
// global (cp.async.bulk.tensor, counted on an mbarrier or in a bulk group), the proxy fence between SMEM writes and the async proxy, and
// shared-memory matrix descriptors whose constant fields come from the plan
// (kda_plan::WS_*_DESC) and whose address is added here. PTX ISA 9.7.13.15
// (mbarrier), 9.7.9.25 (cp.async.bulk, cp.async.bulk.tensor,
// cp.async.bulk.commit_group / wait_group), "membar / fence" (fence.proxy.async).
namespace kda {

__device__ __forceinline__ void mbarrier_init(u64* bar, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}

// Makes the initialisations visible to the async proxy (the bulk copies).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also expects `bytes` of transactions in the current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// One arrival (no transactions).
__device__ __forceinline__ void mbarrier_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
}

// One arrival on `bar` once every cp.async this thread has issued so far has
// landed (.noinc: the arrival is one of the phase's expected ones).
__device__ __forceinline__ void cp_async_arrive_noinc(u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_address(bar)) : "memory");
}

// Waits until the phase with the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "KDA_MBARRIER_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra KDA_MBARRIER_WAIT;\n"
               "}\n" ::"r"(smem_address(bar)),
               "r"(parity)
               : "memory");
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to
// shared; completion is counted on `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, u32 bytes, u64* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_address(dst)),
               "l"(src), "r"(bytes), "r"(smem_address(bar))
               : "memory");
}

// The TMA box at coordinates (x, y, z) of a rank-3 tensor map into `dst` (its
// SMEM image, laid out as the map's swizzle says), its bytes counted on `bar`
// (the map is a kernel parameter).
__device__ __forceinline__ void tma_load_box_3d(void* dst, const TensorMapBytes& map, int x, int y, int z, u64* bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
               "[%5];" ::"r"(smem_address(dst)),
               "l"(&map), "r"(x), "r"(y), "r"(z), "r"(smem_address(bar))
               : "memory");
}

// One TMA box from `src` (its SMEM image, laid out as the map's swizzle says)
// to coordinates (x, y, z) of a rank-3 tensor map, in this thread's current
// bulk group (the map is a kernel parameter).
__device__ __forceinline__ void tma_store_box_3d(const void* src, const TensorMapBytes& map, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(&map), "r"(x),
               "r"(y), "r"(z), "r"(smem_address(src))
               : "memory");
}

// Closes this thread's bulk group and waits until every bulk store it issued
// has read its SMEM source (the source may then be overwritten; the global
// writes complete on their own, before the grid does).
__device__ __forceinline__ void bulk_stores_wait_read() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// This thread's earlier SMEM writes (generic proxy) become visible to the
// async proxy: bulk copies and tensor-core operand reads.
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// A descriptor: the plan's constant fields plus the operand's start address
// (bits 0-13, address >> 4).
__device__ __forceinline__ u64 descriptor_at(u64 fields, const void* operand) {
  return fields | static_cast<u64>((smem_address(operand) >> 4) & 0x3fffu);
}

} // namespace kda
