"""Loads libkdajit.so and declares its C API (kdajit/kda_c.h) for ctypes.

The library is looked up, in order: $KDAJIT_LIBRARY (a path: used alone),
the copy installed inside this package, then ``libkdajit.so.0`` on the
loader's search path (an installed kdajit). The one compiled module of the
package (kdajit._runner) is built on CPython's stable ABI and calls the
library only through the pointers resolved here.
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SONAME = "libkdajit.so.0"


class KdaTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
    ]


TENSOR_FIELDS = (
    "q", "k", "v", "g", "beta", "a_log", "dt_bias", "initial_state", "cu_seqlens", "out", "final_state",
    "ssm_state_indices", "seq_order", "state_checkpoints", "checkpoint_cu_starts",
)


class KdaPrefillArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("q", KdaTensor), ("k", KdaTensor), ("v", KdaTensor), ("g", KdaTensor), ("beta", KdaTensor),
        ("a_log", KdaTensor), ("dt_bias", KdaTensor),
        ("scale", ctypes.c_double),
        ("lower_bound", ctypes.c_double),
        ("initial_state", KdaTensor),
        ("output_final_state", ctypes.c_int32),
        ("cu_seqlens", KdaTensor),
        ("out", KdaTensor),
        ("final_state", KdaTensor),
        ("stream", ctypes.c_void_p),
        ("schedule", ctypes.c_char_p),
        ("family", ctypes.c_char_p),
        ("ssm_state_indices", KdaTensor),
        ("seq_order", KdaTensor),
        ("state_checkpoints", KdaTensor),
        ("checkpoint_cu_starts", KdaTensor),
        ("checkpoint_every_n_tokens", ctypes.c_int64),
        ("prepare_overlap", ctypes.c_int32),
        ("tiered", ctypes.c_int32),
        ("ran_tier", ctypes.POINTER(ctypes.c_int32)),
    ]


def _candidates() -> list[str]:
    override = os.environ.get("KDAJIT_LIBRARY")
    if override:
        return [override]
    return [str(_HERE / _SONAME), _SONAME]


def _load() -> tuple[ctypes.CDLL, str]:
    errors = []
    for candidate in _candidates():
        if candidate.startswith("/") and not os.path.exists(candidate):
            errors.append(f"{candidate}: no such file")
            continue
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise ImportError("kdajit: cannot load libkdajit.so.0 (" + "; ".join(errors) +
                      "); set KDAJIT_LIBRARY to its path or reinstall the package")


def _declare(lib: ctypes.CDLL) -> None:
    args_p = ctypes.POINTER(KdaPrefillArgs)
    vp = ctypes.c_void_p
    status = ctypes.c_int
    signatures = {
        "kda_prefill_args_init": (None, [args_p]),
        "kda_recurrent_prefill": (status, [args_p, ctypes.POINTER(vp), ctypes.POINTER(vp), ctypes.POINTER(vp),
                                           ctypes.POINTER(vp)]),
        "kda_plan_create": (status, [args_p, ctypes.POINTER(vp)]),
        "kda_plan_workspace_bytes": (status, [vp, ctypes.POINTER(ctypes.c_int64)]),
        "kda_plan_run": (status, [vp, args_p, vp, ctypes.c_int64]),
        "kda_plan_describe": (status, [vp, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(ctypes.c_int32)]),
        "kda_plan_destroy": (None, [vp]),
        "kda_buffer_release": (None, [vp]),
        "kda_buffer_data": (vp, [vp]),
        "kda_explain_route": (status, [args_p, ctypes.POINTER(ctypes.c_char_p)]),
        "kda_register_kernel_bundle": (status, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]),
        "kda_kernel_cache_directory": (status, [ctypes.POINTER(ctypes.c_char_p)]),
        "kda_add_nvrtc_library_candidate": (status, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32)]),
        "kda_toolchain_summary": (ctypes.c_char_p, []),
        "kda_last_error": (ctypes.c_char_p, []),
        "kda_version": (ctypes.c_char_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _nvrtc_wheel_libraries() -> list[str]:
    """libnvrtc from the nvidia-cuda-nvrtc wheels (CUDA 13 and 12) on sys.path."""
    out = []
    for relative in ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.13",
                     "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"):
        for entry in sys.path:
            path = os.path.join(entry or ".", relative)
            if os.path.isfile(path) and path not in out:
                out.append(os.path.abspath(path))
    return out


lib, library_path = _load()
_declare(lib)
for _nvrtc in _nvrtc_wheel_libraries():
    lib.kda_add_nvrtc_library_candidate(_nvrtc.encode(), None)
