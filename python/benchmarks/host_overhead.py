"""Host time per call of kdajit from Python against the C API underneath, on
the bench workloads h8_fixed_2048 and h64_mixed (bf16 state in place, output
given, the kernel ready). Compare with `kdajit bench --cases CASE --planned`,
which prints the C++ figures of the same calls.

    python3 python/benchmarks/host_overhead.py

Each figure is the least over 20 rounds of the time per call of a loop of 50
enqueued calls (synchronised between loops; the kinds of loop take
turns in each round, so that a slow spell of the host hits them alike). 50
calls keep the launch queue far from full.
Printed per case:
  Plan.run              plan.run() (kdajit._runner's C code when installed)
  Plan.run in Python    the same call through Plan.run's Python code
  kda_plan_run (ctypes) the C call alone with prebuilt arguments
  ctypes call           a trivial C call (kda_version), the binding's floor
  eager                 kdajit.recurrent_kda_prefill with out and state given
The calls run on a non-blocking torch stream, as kdajit bench's on its own.
"Python over the C API" is Plan.run minus kda_plan_run plus the ctypes call;
the overhead over the C++ PrefillPlan::run is Plan.run minus kdajit bench's
figure for the same case on the same machine.
"""
from __future__ import annotations

import ctypes
import time

import torch

import kdajit
from kdajit._library import lib
from kdajit._prefill import _plan_run as raw_run

CASES = {"h8_fixed_2048": (8, [2048]), "h64_mixed": (64, [1300, 547, 2048, 963, 271, 3063])}
CALLS, ROUNDS = 50, 20


def per_call(fn) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    us = (time.perf_counter() - t0) / CALLS * 1e6
    torch.cuda.synchronize()
    return us


def least_per_call(fns: dict) -> dict:
    best = {name: float("inf") for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            best[name] = min(best[name], per_call(fn))
    return best


def case_tensors(heads, lengths):
    dev = torch.device("cuda", 0)
    total = sum(lengths)
    packed = len(lengths) > 1
    B, T = (1, total) if packed else (1, lengths[0])
    big = lambda: torch.randn(B, T, heads, 128, device=dev).to(torch.bfloat16)  # noqa: E731
    x = [big(), big(), big(), big(), torch.randn(B, T, heads, device=dev).to(torch.bfloat16),
         torch.randn(heads, device=dev) * 0.5, torch.randn(heads, 128, device=dev) * 0.5]
    kw = dict(out=torch.empty(B, T, heads, 128, dtype=torch.bfloat16, device=dev),
              initial_state=(torch.randn(len(lengths), heads, 128, 128, device=dev) * 0.1).to(torch.bfloat16))
    if packed:
        cu = [0]
        for n in lengths:
            cu.append(cu[-1] + n)
        kw["cu_seqlens"] = torch.tensor(cu, dtype=torch.int32, device=dev)
    return x, kw


def main() -> None:
    print(f"kdajit {kdajit.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print(kdajit.toolchain())
    # on a stream of torch's (non-blocking), as `kdajit bench` runs on one of its own
    side = torch.cuda.Stream()
    torch.cuda.set_stream(side)
    for name, (heads, lengths) in CASES.items():
        x, kw = case_tensors(heads, lengths)
        p = kdajit.plan(*x, **kw)
        p.run(*x, **kw)
        args_ref = ctypes.byref(p._args)
        ws, ws_bytes = ctypes.c_void_p(p._workspace[0]), ctypes.c_int64(p._workspace[1])
        t = least_per_call({
            "plan": lambda: p.run(*x, **kw),
            "python": lambda: kdajit.Plan.run(p, *x, **kw),
            "raw": lambda: raw_run(p._handle, args_ref, ws, ws_bytes),
            "ctypes": lambda: lib.kda_version(),
            "eager": lambda: kdajit.recurrent_kda_prefill(*x, **kw),
        })
        plan_us, python_us, raw_us, ctypes_us, eager_us = t["plan"], t["python"], t["raw"], t["ctypes"], t["eager"]
        print(f"{name}: {p!r}")
        print(f"  Plan.run {plan_us:.2f} us ({'native' if p.native_run else 'Python'}), Plan.run in Python "
              f"{python_us:.2f} us, kda_plan_run (ctypes) {raw_us:.2f} us, ctypes call {ctypes_us:.2f} us, "
              f"eager {eager_us:.2f} us")
        print(f"  Python over the C API: Plan.run {plan_us - raw_us + ctypes_us:.2f} us")


if __name__ == "__main__":
    main()
