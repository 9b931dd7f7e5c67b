// kdajit fragment: wgmma/fused_persistent_names
// The fused persistent kernel (wgmma/fused_persistent) is the persistent
// recurrence with its prepare inside: one kernel, whose plan constants the
// emitter writes as kda_plan::main. The recurrence's fragments
// (wgmma/recurrence, wgmma/recurrence_persistent) address its buffers as
// kda_plan::recurrence: here the one kernel's names. The prepare helpers
// (common/prepare_ops, common/prepare_step) address theirs as
// kda_plan::prepare, whose "stage" is the prepare kernel's ring slot: here
// it is one of the two scratch sets beside the ring, so kda_plan::prepare is
// the kernel's names with the scratch-set buffers (the raw tiles and what
// aliases them, declared with a leading dimension of 2) marked staged and
// STAGE_BYTES one set's bytes.
namespace kda_plan {
namespace recurrence = main;
namespace prepare {
using namespace main;
constexpr int STAGE_BYTES = main::Q_RAW_BYTES / 2; // one scratch set of a raw tile
constexpr int Q_RAW_STAGED = 1;
constexpr int K_RAW_STAGED = 1;
constexpr int G_RAW_STAGED = 1;
constexpr int KI_STAGED = 1;
constexpr int KD_STAGED = 1;
constexpr int QD_STAGED = 1;
constexpr int KRT_STAGED = 1;
static_assert(!main::Q_RAW_STAGED && !main::K_RAW_STAGED && !main::G_RAW_STAGED && !main::KI_STAGED &&
                  !main::KD_STAGED && !main::QD_STAGED && !main::KRT_STAGED,
              "the scratch sets are shared buffers beside the ring");
static_assert(main::Q_RAW_BYTES == 2 * STAGE_BYTES && main::K_RAW_BYTES == 2 * STAGE_BYTES &&
                  main::G_RAW_BYTES == 2 * STAGE_BYTES && main::KI_BYTES == 2 * STAGE_BYTES &&
                  main::KD_BYTES == 2 * STAGE_BYTES && main::QD_BYTES == 2 * STAGE_BYTES &&
                  main::KRT_BYTES == 2 * STAGE_BYTES && STAGE_BYTES % 16 == 0,
              "two scratch sets of one pitch: set s of each at its offset + s x STAGE_BYTES");
} // namespace prepare
} // namespace kda_plan
