#!/usr/bin/env python3
"""The measured goals of the performance and serving-engine work in one run on
the H200 (docs/bench/CURRENT.md states them), each part as interleaved rounds
of `kdajit bench` on one instance, with a verdict per goal:

  base         the ten workloads of ca117bf's bench, a round of the base build
               (--base) and a round of this one (routed) in turn: a workload
               is "slower" where every round of this build is above every
               round of the base, "faster" where every one is below
  standard     from this build's rounds of `base`: the geometric mean over
               FlashKDA on the six standard workloads (goal >= 2.4x, none
               below 2.0x) and h96_fixed_8192 <= 0.50 ms
  short        h96_packed_1024x8 <= 2.5 ms and h32_packed_256x64 <= 0.42 ms
               (routed; the median of the rounds)
  checkpoints  the six standard workloads plain and with checkpoints every 64
               tokens: in each round the checkpointed call against the plain
               one x 1.03 + the rows' bytes at 4.3 TB/s
  pools        the six standard workloads plain and with a state pool of 2N
               slots: in each round at most 3 % over the plain call

Usage: scripts/device/acceptance.py [--rounds N] [--base PATH] [--kdajit PATH]
           [--parts base,standard,short,checkpoints,pools] [--any-gpu]
  --base    the base build's CLI (scripts/build-at.sh ca117bf makes
            build/kdajit_ca117bf, the default)
  --kdajit  this build's CLI (default build/tools/kdajit)
  --any-gpu run on a GPU other than an H200 (the goals are the H200's; the
            verdicts then compare designs, not the goals)
Writes the summary to stdout and ${OUT:-.}/acceptance.txt, every bench's
output to ${OUT:-.}/acceptance-raw.log. Under each part, the GPU's state
while each variant's benches ran, from nvidia-smi samples every 100 ms: the
SM clock, the share of busy samples (over 300 W) with the power cap lowering
it (clock event reason SW power cap), the highest power and the temperature;
a build whose bench finds the GPU capped more often than the other's is not
compared on equal terms (docs/bench/archive/LOG.md, "The bench's own calls and
the GPU's power cap"). Exit status 0 when it ran (whatever the verdicts), 2
on bad usage or no H200.
"""
import argparse
import atexit
import datetime
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time

STANDARD = ["h96_fixed_8192", "h96_mixed", "h96_uniform_8x1024", "h64_fixed_8192", "h64_mixed",
            "h64_uniform_8x1024"]
BASE_CASES = STANDARD + ["h16_fixed_32768", "h32_uniform_8x4096", "h8_fixed_2048", "h64_fixed_65536"]
SHORT_GOALS = {"h96_packed_1024x8": 2.5, "h32_packed_256x64": 0.42}
PARTS = ["base", "standard", "short", "checkpoints", "pools"]


class GpuSampler:
    """nvidia-smi samples every 100 ms, each stamped on arrival: (time, SM
    clock MHz, power W, temperature C, clock event reasons)."""

    FIELDS = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
    SW_POWER_CAP = 0x4

    def __init__(self):
        self.samples = []
        try:
            self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={self.FIELDS}", "--format=csv,noheader,nounits",
                                          "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            fields = [f.strip() for f in line.split(",")]
            try:
                self.samples.append((time.monotonic(), float(fields[0]), float(fields[1]), float(fields[2]),
                                     int(fields[3], 16)))
            except (IndexError, ValueError):
                continue

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()

    def summary(self, spans):
        """One line on the samples taken during the given (start, end) spans."""
        inside = [s for s in self.samples if any(t0 <= s[0] <= t1 for t0, t1 in spans)]
        busy = [s for s in inside if s[2] > 300.0]
        if not busy:
            return f"no busy samples ({len(inside)} in all)"
        clocks = [s[1] for s in busy]
        capped = sum(1 for s in busy if s[4] & self.SW_POWER_CAP)
        return (f"{len(busy)} busy samples: SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz (median "
                f"{statistics.median(clocks):.0f}), power cap in {capped / len(busy):.0%}, at most "
                f"{max(s[2] for s in busy):.0f} W, {min(s[3] for s in busy):.0f}-{max(s[3] for s in busy):.0f} C")


class Bench:
    """Runs `kdajit bench` and keeps each run's parsed rows and its span."""

    def __init__(self, raw_log, sampler):
        self.raw = open(raw_log, "w")
        self.sampler = sampler
        self.spans = []  # (variant, start, end) of every run

    def gpu_lines(self, variants, first_span):
        """Per variant, the GPU's state during its runs from span first_span on."""
        return [f"  gpu during {name}: " + self.sampler.summary(
                    [(t0, t1) for v, t0, t1 in self.spans[first_span:] if v == name]) for name in variants]

    def run(self, binary, cases, extra=(), variant=""):
        """{case: {"ms", "flashkda_ms", "rows_ms"}} of one bench run."""
        cmd = [binary, "bench", "--cases", ",".join(cases), *extra]
        self.raw.write(f"=== {' '.join(cmd)}\n")
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True)
        self.spans.append((variant, start, time.monotonic()))
        self.raw.write(done.stdout + done.stderr)
        self.raw.flush()
        if done.returncode != 0:
            raise SystemExit(f"acceptance: `{' '.join(cmd)}` failed (exit {done.returncode}); see the raw log")
        rows, last = {}, None
        for line in done.stdout.splitlines():
            fields = line.split()
            if len(fields) > 6 and fields[0] in cases:
                try:
                    ms = float(fields[1])
                except ValueError:
                    continue
                flashkda = float(fields[5]) if fields[5] != "-" else None
                rows[fields[0]] = {"ms": ms, "flashkda_ms": flashkda, "rows_ms": None}
                last = fields[0]
                continue
            rows_line = re.search(r"checkpoint rows [0-9.]+ MB, ([0-9.]+) ms at", line)
            if rows_line and last is not None:
                rows[last]["rows_ms"] = float(rows_line.group(1))
        missing = [c for c in cases if c not in rows]
        if missing:
            raise SystemExit(f"acceptance: no figure for {', '.join(missing)} from `{' '.join(cmd)}`")
        return rows


def rounds_of(bench, rounds, variants, cases):
    """Interleaved rounds: {variant name: [rows of round 1, ...]}, and the
    lines on the GPU's state during each variant's runs."""
    first = len(bench.spans)
    out = {name: [] for name, _, _ in variants}
    for _ in range(rounds):
        for name, binary, extra in variants:
            out[name].append(bench.run(binary, cases, extra, name))
    return out, bench.gpu_lines([name for name, _, _ in variants], first)


def series(runs, case):
    return [r[case]["ms"] for r in runs]


def fmt_series(values):
    return " / ".join(f"{v:.3f}" for v in values)


def part_base(bench, args, report):
    runs, gpu = rounds_of(bench, args.rounds, [("base", args.base, []), ("this", args.kdajit, [])],
                          BASE_CASES)
    report.append(f"## base: {args.base} against {args.kdajit}, routed, {args.rounds} interleaved rounds (ms)")
    slower = 0
    for case in BASE_CASES:
        base, this = series(runs["base"], case), series(runs["this"], case)
        verdict = "slower" if min(this) > max(base) else "faster" if max(this) < min(base) else "within"
        slower += verdict == "slower"
        change = (statistics.median(this) / statistics.median(base) - 1) * 100
        report.append(f"{case:<20} base {fmt_series(base)}  this {fmt_series(this)}  {change:+.1f} %  {verdict}")
    report.append(f"goal (no workload slower than the base): {'met' if slower == 0 else f'missed ({slower} slower)'}")
    report.extend(gpu)
    return runs["this"]


def part_standard(runs, report):
    report.append("## standard: this build's rounds of the base part (median of the rounds)")
    logs, lowest = [], None
    for case in STANDARD:
        ms = statistics.median(series(runs, case))
        speedup = runs[0][case]["flashkda_ms"] / ms
        logs.append(math.log(speedup))
        lowest = speedup if lowest is None else min(lowest, speedup)
        report.append(f"{case:<20} {ms:.3f} ms  {speedup:.2f}x FlashKDA")
    geomean = math.exp(sum(logs) / len(logs))
    h96 = statistics.median(series(runs, "h96_fixed_8192"))
    report.append(f"geomean {geomean:.3f}x (goal 2.4x: {'met' if geomean >= 2.4 else 'missed'}), lowest {lowest:.2f}x "
                  f"(goal 2.0x: {'met' if lowest >= 2.0 else 'missed'}), h96_fixed_8192 {h96:.3f} ms "
                  f"(goal 0.50: {'met' if h96 <= 0.50 else 'missed'})")


def part_short(bench, args, report):
    cases = list(SHORT_GOALS)
    all_runs, gpu = rounds_of(bench, args.rounds, [("this", args.kdajit, [])], cases)
    runs = all_runs["this"]
    report.append(f"## short: routed, {args.rounds} rounds (ms)")
    for case, goal in SHORT_GOALS.items():
        values = series(runs, case)
        median = statistics.median(values)
        report.append(f"{case:<20} {fmt_series(values)}  goal {goal:.2f}: {'met' if median <= goal else 'missed'} "
                      f"({median / goal - 1:+.1%})")
    report.extend(gpu)


def part_against_plain(bench, args, report, name, extra, bound):
    runs, gpu = rounds_of(bench, args.rounds, [("plain", args.kdajit, []), (name, args.kdajit, extra)], STANDARD)
    report.append(f"## {name}: the six standard workloads plain and with {' '.join(extra)}, {args.rounds} interleaved "
                  "rounds (ms; over: against the bound of each round)")
    missed = 0
    for case in STANDARD:
        plain, other = series(runs["plain"], case), series(runs[name], case)
        overs = [o / bound(p, r[case]) - 1 for p, o, r in zip(plain, other, runs[name])]
        within = all(over <= 0 for over in overs)
        missed += not within
        report.append(f"{case:<20} plain {fmt_series(plain)}  {name} {fmt_series(other)}  over the bound "
                      + " / ".join(f"{over:+.1%}" for over in overs) + f"  {'met' if within else 'missed'}")
    report.append(f"goal: {'met' if missed == 0 else f'missed on {missed} workload(s)'}")
    report.extend(gpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", default="build/kdajit_ca117bf")
    parser.add_argument("--kdajit", default="build/tools/kdajit")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--any-gpu", action="store_true")
    args = parser.parse_args()
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown or args.rounds < 1:
        parser.error(f"unknown part(s) {', '.join(unknown)}" if unknown else "--rounds takes a positive count")
    if "standard" in parts and "base" not in parts:
        parser.error("the standard part reads the base part's rounds: name both")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    if "H200" not in gpu and not args.any_gpu:
        print(f"acceptance: the goals are the H200's; this GPU is {gpu or 'unknown'} (--any-gpu runs anyway)")
        return 2
    for binary in [args.kdajit] + ([args.base] if "base" in parts else []):
        if not os.access(binary, os.X_OK):
            parser.error(f"no CLI at {binary}")
    out = os.environ.get("OUT", ".")
    sampler = GpuSampler()
    atexit.register(sampler.stop)  # also when a bench fails
    bench = Bench(os.path.join(out, "acceptance-raw.log"), sampler)
    report = [f"# kdajit acceptance, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {gpu}",
              f"# {' '.join(sys.argv)}"]
    this_runs = part_base(bench, args, report) if "base" in parts else None
    if "standard" in parts:
        part_standard(this_runs, report)
    if "short" in parts:
        part_short(bench, args, report)
    if "checkpoints" in parts:
        part_against_plain(bench, args, report, "checkpoints", ["--checkpoint-every", "64"],
                           lambda plain, row: plain * 1.03 + row["rows_ms"])
    if "pools" in parts:
        part_against_plain(bench, args, report, "pools", ["--pool"], lambda plain, row: plain * 1.03)
    text = "\n".join(report) + "\n"
    print(text, end="")
    with open(os.path.join(out, "acceptance.txt"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
