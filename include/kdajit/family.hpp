/// \file
/// The kernel families a caller may restrict routing to
/// (PrefillOptions::family): warp-level mma.sync, Hopper warpgroup MMAs,
/// Blackwell tcgen05 MMAs, and the LLVM tier's token-recurrent kernel (one
/// token at a time, fp32 FMAs, no tensor cores: a baseline that compiles in a
/// fraction of NVRTC's time). The schedule model spells them "warp_mma",
/// "wgmma", "tcgen05" and "token".
#pragma once

namespace kda {

enum class Family { warp_mma, wgmma, tcgen05, token };

} // namespace kda
