#!/usr/bin/env python3
"""Top SASS lines of one kernel by sampled warp stalls, from
`ncu -i REPORT --page source --print-source sass --csv` on stdin.
Usage: ncu ... --csv | ncu-hot-sass.py [N]"""
import sys

from ncu_sass import read_listing

header, body = read_listing(sys.stdin)
src = header.index("Source")
samples = next(i for i, c in enumerate(header) if c.startswith("Warp Stall Sampling (All"))
reasons = [i for i, c in enumerate(header) if c.startswith("stall_") or "Stall" in c and i != samples]
total = sum(float(r[samples] or 0) for r in body)
print(f"{len(body)} SASS lines, {total:.0f} samples")
top = sorted(body, key=lambda r: -float(r[samples] or 0))[: int(sys.argv[1]) if len(sys.argv) > 1 else 40]
for r in top:
    print(f"{float(r[samples]):8.0f} {100 * float(r[samples]) / total:5.1f}%  {r[0]:>6}  {r[src][:90]}")
# the loop body in address order with samples, for context
print("--- all lines with >= 0.3% of samples, in address order")
for r in body:
    v = float(r[samples] or 0)
    if v >= 0.003 * total:
        print(f"{v:8.0f} {100 * v / total:5.1f}%  {r[0]:>6}  {r[src][:90]}")
