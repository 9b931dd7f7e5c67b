#!/usr/bin/env python3
"""Instructions, shared-memory wavefronts and stall samples of one kernel per
phase, the phases being the SASS between CTA barriers (BAR.SYNC, named ones
included), from `ncu -i REPORT --page source --print-source sass --csv` on
stdin (a report taken with --section SourceCounters).
Usage: ncu ... --csv | ncu-phases.py [UNITS]
UNITS divides the instruction and wavefront counts (e.g. the chunk count, to
read them per chunk). Stall samples that wait at a barrier are attributed by
ncu to the instruction after it, i.e. to the first line of the next phase."""
import sys
from collections import Counter

from ncu_sass import read_listing

header, body = read_listing(sys.stdin)
src = header.index("Source")
executed = header.index("Instructions Executed")
samples = header.index("Warp Stall Sampling (All Samples)")
wavefronts = header.index("L1 Wavefronts Shared")
reasons = [i for i, c in enumerate(header) if c.startswith("stall_") and "Not Issued" not in c]
units = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def number(cell):
    return float(cell or 0)


def opcode(text):
    words = text.split()
    if not words:
        return ""
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


total_instr = sum(number(r[executed]) for r in body)
total_samples = sum(number(r[samples]) for r in body) or 1.0
print(f"{total_instr / units:.0f} warp instructions per unit, {total_samples:.0f} stall samples")
phase = 0
first = 0
acc = {"instr": 0.0, "samples": 0.0, "wavefronts": 0.0, "reasons": Counter(), "ops": Counter()}
for index, r in enumerate(body):
    n = number(r[executed])
    acc["instr"] += n
    acc["samples"] += number(r[samples])
    acc["wavefronts"] += number(r[wavefronts])
    for k in reasons:
        acc["reasons"][header[k][len("stall_"):]] += number(r[k])
    if n > 0:
        acc["ops"][opcode(r[src].strip())] += n / units
    last = index == len(body) - 1
    if "BAR.SYNC" in r[src] or last:
        if acc["instr"] > 0:
            top_reasons = " ".join(f"{k}:{100 * v / total_samples:.1f}" for k, v in acc["reasons"].most_common(3))
            top_ops = " ".join(f"{k}:{v:.0f}" for k, v in acc["ops"].most_common(8))
            print(f"phase {phase:2d} lines {first + 1:5d}-{index + 1:5d}  instr {acc['instr'] / units:7.0f} "
                  f"({100 * acc['instr'] / total_instr:4.1f} %)  wavefronts {acc['wavefronts'] / units:6.0f}  "
                  f"samples {100 * acc['samples'] / total_samples:4.1f} % ({top_reasons})  | {top_ops}")
            phase += 1
        first = index + 1
        acc = {"instr": 0.0, "samples": 0.0, "wavefronts": 0.0, "reasons": Counter(), "ops": Counter()}
