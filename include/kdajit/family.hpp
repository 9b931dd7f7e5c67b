/// \file
/// The kernel families a caller may restrict routing to
/// (PrefillOptions::family): warp-level mma.sync, Hopper warpgroup MMAs,
/// Blackwell tcgen05 MMAs. The schedule model spells them "warp_mma",
/// "wgmma" and "tcgen05".
#pragma once

namespace kda {

enum class Family { warp_mma, wgmma, tcgen05 };

} // namespace kda
