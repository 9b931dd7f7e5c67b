"""kdajit: recurrent Kimi Delta Attention (KDA) prefill on NVIDIA GPUs.

Kernels are generated from schedules, compiled with NVRTC on first use and
cached on disk (``kernel_cache_directory()``); later calls only check their
arguments and launch. Tensors are torch tensors or any ``__dlpack__``
producer on a CUDA device; torch is not imported by this package.

    out, state = kdajit.recurrent_kda_prefill(q, k, v, g, beta, A_log, dt_bias,
                                              initial_state=state, output_final_state=True)
    p = kdajit.plan(q, k, v, g, beta, A_log, dt_bias, out=out, initial_state=state)
    p.run(q, k, v, g, beta, A_log, dt_bias, out=out, initial_state=state)   # capturable

``kdajit.compat.chunk_kda`` takes FLA's ``chunk_kda`` arguments.
"""
from __future__ import annotations

import ctypes as _ctypes

from ._library import lib as _lib, library_path
from ._prefill import Plan, explain_route, last_prefill_tier, plan, recurrent_kda_prefill
from .errors import CacheError, InternalError, KdaError, ScheduleError, TensorError, ToolchainError, UnsupportedError

__version__ = "0.1.0"

__all__ = [
    "recurrent_kda_prefill", "last_prefill_tier", "plan", "Plan", "explain_route", "compile", "register_kernel_bundle",
    "kernel_cache_directory", "toolchain", "library_version", "library_path", "KdaError", "TensorError",
    "ScheduleError", "ToolchainError", "CacheError", "InternalError", "UnsupportedError", "__version__",
]


def _check(status: int) -> None:
    if status != 0:
        from .errors import raise_for_status
        raise_for_status(status, _lib.kda_last_error().decode(errors="replace"))


def library_version() -> str:
    """The loaded libkdajit's version ("major.minor.patch")."""
    return _lib.kda_version().decode()


def compile(q, k, v, g, beta, A_log, dt_bias, **kwargs) -> tuple:
    """Compiles (or loads from the cache or a bundle) the kernel a call like
    this one runs, without launching it; returns ``(schedule, target)``.
    Takes recurrent_kda_prefill's arguments."""
    p = Plan(q, k, v, g, beta, A_log, dt_bias, _allocate_workspace=False, **kwargs)
    return p.schedule, p.target


def register_kernel_bundle(path: str) -> int:
    """Serves the kernels of a bundle (``kdajit aot build``) before the disk
    cache and NVRTC; returns how many entries it registered (0, with a warning
    on stderr, for a bundle of another generator or an NVRTC too new for the
    driver). CacheError for an unreadable or corrupt bundle."""
    entries = _ctypes.c_size_t()
    _check(_lib.kda_register_kernel_bundle(str(path).encode(), _ctypes.byref(entries)))
    return entries.value


def kernel_cache_directory() -> str:
    """The kernel cache directory in use (KDAJIT_CACHE_DIR, else
    $XDG_CACHE_HOME/kdajit, else ~/.cache/kdajit), "" when memory-only."""
    path = _ctypes.c_char_p()
    _check(_lib.kda_kernel_cache_directory(_ctypes.byref(path)))
    return path.value.decode()


def toolchain() -> str:
    """The CUDA driver and NVRTC this process uses, or why either is unavailable."""
    return _lib.kda_toolchain_summary().decode()
