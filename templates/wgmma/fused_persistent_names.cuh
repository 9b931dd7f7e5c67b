// kdajit fragment: wgmma/fused_persistent_names
// The fused persistent kernel (wgmma/fused_persistent) is the persistent
// recurrence with its prepare inside: one kernel, whose plan constants the
// emitter writes as kda_plan::main. The recurrence's fragments
// (wgmma/recurrence, wgmma/recurrence_persistent) address its buffers as
// kda_plan::recurrence and the prepare helpers (common/prepare_ops) as
// kda_plan::prepare: here both names are the one kernel's.
namespace kda_plan {
namespace recurrence = main;
namespace prepare = main;
} // namespace kda_plan
