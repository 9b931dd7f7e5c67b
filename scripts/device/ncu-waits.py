#!/usr/bin/env python3
"""Which mbarrier each hot wait of a kernel waits on, from
`ncu -i REPORT --page source --print-source sass --csv` on stdin (a report
taken with --section SourceCounters) and the kernel's emitted source
(`kdajit emit` with the same schedule, target, state, layout and
checkpoints as the profiled call), whose kda_plan constants give every SMEM
buffer's offset and size.
Usage: ncu ... --csv | ncu-waits.py KERNEL.cu [N]
Each SYNCS...TRYWAIT's address register is traced back to the instruction
that set it; an immediate there that falls inside a buffer names it. A
wait's samples are those of the try-wait up to its branch and of the retry
stub the branch jumps to. Prints the N hottest wait sites (default 20), then
the samples per buffer; 'unknown' where no immediate was found."""
import re
import sys
from collections import defaultdict

from ncu_sass import read_listing


def buffers(path):
    """(start, end, name) of every SMEM buffer with bytes, per plan namespace."""
    offsets, sizes = {}, {}
    space = ""
    for line in open(path, encoding="utf-8"):
        opened = re.match(r"\s*namespace (\w+) \{", line)
        if opened:
            space = opened.group(1)
        constant = re.match(r"\s*constexpr int (\w+)_(OFFSET|BYTES) = (\d+);", line)
        if constant:
            table = offsets if constant.group(2) == "OFFSET" else sizes
            table[(space, constant.group(1))] = int(constant.group(3))
    found = []
    for key, start in offsets.items():
        size = sizes.get(key, 0)
        if size > 0:
            found.append((start, start + size, key[1].lower() if key[0] == "main" else f"{key[0]}::{key[1].lower()}"))
    return found


def operands(text):
    """Opcode and operand list of a SASS line (predicate dropped)."""
    words = text.strip().rstrip(";").split(None, 1)
    if words and words[0].startswith("@"):
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words:
        return "", []
    return words[0], [o.strip() for o in words[1].split(",")] if len(words) > 1 else []


def wait_address(body, src, at):
    """The SMEM immediate (plus displacement) the try-wait at row `at` reads, or None."""
    operand = re.search(r"\[([^\]]+)\]", body[at][src])
    if not operand:
        return None
    parts = operand.group(1).split("+")
    register = parts[0].strip()
    displacement = sum(int(p, 16) for p in parts[1:] if p.strip().startswith("0x"))
    for back in range(at - 1, max(at - 40, -1), -1):
        opcode, ops = operands(body[back][src])
        if ops and ops[0] == register:
            immediates = [int(o, 16) for o in ops[1:] if re.fullmatch(r"0x[0-9a-f]+", o) and int(o, 16) >= 0x400]
            return immediates[0] + displacement if immediates else None
    return None


def main():
    source_file = sys.argv[1]
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    ranges = buffers(source_file)
    header, body = read_listing(sys.stdin)
    address = header.index("Address")
    src = header.index("Source")
    samples = header.index("Warp Stall Sampling (All Samples)")
    executed = header.index("Instructions Executed")
    total = sum(float(r[samples] or 0) for r in body) or 1.0
    row_at = {int(r[address], 16): i for i, r in enumerate(body) if r[address].startswith("0x")}

    def run_to_branch(start):
        """Samples from row `start` up to and including the first BRA, and that branch's target."""
        got = 0.0
        for i in range(start, min(start + 24, len(body))):
            got += float(body[i][samples] or 0)
            opcode, ops = operands(body[i][src])
            if opcode == "BRA":
                target = ops[-1] if ops else ""
                return got, int(target, 16) if target.startswith("0x") else None
        return got, None

    # a wait site: a try-wait whose branch jumps forward to its retry stub (a
    # try-wait of its own, not counted as a site again), or loops in place
    waits = [i for i, r in enumerate(body) if "TRYWAIT" in r[src]]
    stub_of = {}
    for i in waits:
        target = run_to_branch(i)[1]
        if target is not None and target in row_at and row_at[target] > i:
            stub_of.setdefault(i, row_at[target])
    stubs = set(stub_of.values())
    counted = set()
    sites = []
    for i in waits:
        if i in stubs:
            continue
        r = body[i]
        got = run_to_branch(i)[0]
        stub = stub_of.get(i)
        if stub is not None and stub not in counted:  # a stub shared by several sites counts once, with the first
            counted.add(stub)
            got += run_to_branch(stub)[0]
        at = wait_address(body, src, i)
        names = [name for lo, hi, name in ranges if at is not None and lo <= at < hi]
        sites.append((got, i, r[executed], at, "/".join(names) if names else "unknown"))
    sites = [s for s in sites if s[0] > 0]
    sites.sort(key=lambda s: -s[0])
    waited = sum(s[0] for s in sites)
    print(f"{len(body)} SASS lines, {total:.0f} stall samples, {waited / total * 100:.1f} % of them in mbarrier waits")
    for got, i, count, at, name in sites[:top_n]:
        where = f"0x{at:x}" if at is not None else "?"
        print(f"{got / total * 100:5.1f}%  line {i:5d}  executed {count:>10}  smem {where:>8}  {name}")
    per_buffer = defaultdict(float)
    for got, _, _, _, name in sites:
        per_buffer[name] += got
    print("--- per buffer")
    for name, got in sorted(per_buffer.items(), key=lambda x: -x[1]):
        print(f"{got / total * 100:5.1f}%  {name}")


if __name__ == "__main__":
    main()
