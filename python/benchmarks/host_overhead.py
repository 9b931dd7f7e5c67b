"""Host time per call of kdajit from Python against the C API underneath, on
the bench workloads h8_fixed_2048 and h64_mixed (bf16 state in place, output
given, the kernel ready). Compare with `kdajit bench --cases CASE --planned`,
which prints the C++ figures of the same calls.

    python3 python/benchmarks/host_overhead.py

Each figure is the least of 5 loops of 200 enqueued calls (synchronised
between loops); the GPU work of 200 calls stays under the launch queue's
depth. Printed per case:
  Plan.run              the Python plan.run()
  kda_plan_run (ctypes) the C call alone with prebuilt arguments
  ctypes call           a trivial C call (kda_version), the binding's floor
  eager                 kdajit.recurrent_kda_prefill with out and state given
Python's overhead over the C++ PrefillPlan::run is Plan.run minus
kda_plan_run plus the ctypes call (the C++ figure excludes both).
"""
from __future__ import annotations

import ctypes
import time

import torch

import kdajit
from kdajit._library import lib

CASES = {"h8_fixed_2048": (8, [2048]), "h64_mixed": (64, [1300, 547, 2048, 963, 271, 3063])}
CALLS, LOOPS = 200, 5


def least_per_call(fn) -> float:
    best = float("inf")
    for _ in range(LOOPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.perf_counter() - t0) / CALLS * 1e6)
        torch.cuda.synchronize()
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
    for name, (heads, lengths) in CASES.items():
        x, kw = case_tensors(heads, lengths)
        p = kdajit.plan(*x, **kw)
        p.run(*x, **kw)
        args_ref = ctypes.byref(p._args)
        ws, ws_bytes = p._workspace
        plan_us = least_per_call(lambda: p.run(*x, **kw))
        raw_us = least_per_call(lambda: lib.kda_plan_run(p._handle, args_ref, ws, ws_bytes))
        ctypes_us = least_per_call(lambda: lib.kda_version())
        eager_us = least_per_call(lambda: kdajit.recurrent_kda_prefill(*x, **kw))
        print(f"{name}: {p!r}")
        print(f"  Plan.run {plan_us:.2f} us, kda_plan_run (ctypes) {raw_us:.2f} us, ctypes call {ctypes_us:.2f} us, "
              f"eager {eager_us:.2f} us")
        print(f"  Python over C++: Plan.run {plan_us - raw_us + ctypes_us:.2f} us")


if __name__ == "__main__":
    main()
