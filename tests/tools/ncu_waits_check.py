#!/usr/bin/env python3
"""scripts/device/ncu-waits.py on a made-up Nsight Compute SASS listing whose
try-waits read the `full` and `state_full` mbarriers of the emitted
sm90_wgmma_c16_fused kernel (`kdajit emit`, CPU only): each wait and its
retry stub are attributed to the buffer its SMEM immediate falls in, and an
address that no instruction sets is 'unknown'.
Usage: ncu_waits_check.py KDAJIT SOURCE_DIR"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

kdajit, source_dir = sys.argv[1], Path(sys.argv[2])
emitted = subprocess.run([kdajit, "emit", "--schedule", "sm90_wgmma_c16_fused", "--target", "sm_90a", "--state", "bf16",
                          "--layout", "packed"], check=True, capture_output=True, text=True).stdout
offset = {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr int (\w+)_OFFSET = (\d+);", emitted)}
full, state_full = offset["FULL"], offset["STATE_FULL"]
header = "Address,Source,Warp Stall Sampling (All Samples),Warp Stall Sampling (Not-issued Samples),Instructions Executed"
lines = [
    ("0x1000", f"UIADD3 UR29, UR28, 0x{full + 8:x}, URZ", 0, 100),  # ring slot 1's full barrier
    ("0x1010", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR29], R3", 2, 100),
    ("0x1020", "@!P0 BRA 0x1100", 48, 100),
    ("0x1030", f"VIADD R9, R46, 0x{state_full:x}", 0, 100),
    ("0x1040", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9+URZ], R4", 1, 100),
    ("0x1050", "@!P0 BRA 0x1120", 19, 100),
    ("0x1060", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R12+URZ], R4", 5, 7),  # R12 set by nothing here
    ("0x1070", "@!P0 BRA 0x1060", 5, 7),
    ("0x1080", "EXIT", 10, 100),
    ("0x1100", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR29], R3", 6, 3),  # the first wait's retry stub
    ("0x1110", "@!P0 BRA 0x1030", 4, 3),
    ("0x1120", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9+URZ], R4", 0, 1),
    ("0x1130", "@!P0 BRA 0x1060", 0, 1),
]
with tempfile.TemporaryDirectory() as scratch:
    kernel = Path(scratch) / "kernel.cu"
    kernel.write_text(emitted)
    listing = header + "\n" + "\n".join(f'{a},"      {s}",{n},{n},{e}' for a, s, n, e in lines) + "\n"
    out = subprocess.run([sys.executable, str(source_dir / "scripts/device/ncu-waits.py"), str(kernel)], input=listing,
                         check=True, capture_output=True, text=True).stdout
print(out)
per_buffer = {m.group(2): float(m.group(1)) for m in re.finditer(r"^\s*([\d.]+)%  (\S+)$", out, re.M)}
expected = {"full": 60.0, "state_full": 20.0, "unknown": 10.0}  # of 100 samples: 2+48+6+4, 1+19, 5+5
problems = [f"{name}: {per_buffer.get(name)} % (expected {share} %)" for name, share in expected.items()
            if per_buffer.get(name) != share]
if "90.0 % of them in mbarrier waits" not in out:
    problems.append("the waits' share of all samples is not 90.0 %")
if problems:
    sys.exit("ncu-waits.py: " + "; ".join(problems))
