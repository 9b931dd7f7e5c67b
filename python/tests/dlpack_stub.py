"""A minimal DLPack producer for tests that run without torch or a GPU: a
legacy "dltensor" capsule describing memory at any address on any device."""
from __future__ import annotations

import ctypes

from kdajit._tensors import _DLTensor


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# (code, bits) of the DLPack dtypes
BF16, FP32, INT32, INT64, FP16 = (4, 16), (2, 32), (0, 32), (0, 64), (2, 16)
CPU, CUDA = 1, 2


class Stub:
    """`shape` at `address` on (device_type, device_id), contiguous."""

    def __init__(self, shape, dtype=BF16, device=(CUDA, 0), address=0x7F0000000000):
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = address
        t.device.device_type, t.device.device_id = device
        t.ndim = len(shape)
        t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype[0], dtype[1], 1
        t.shape = self._shape
        t.strides = None
        t.byte_offset = 0
        self.streams_seen = []

    def __dlpack__(self, stream=None):
        self.streams_seen.append(stream)
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)

    def __dlpack_device__(self):
        t = self._managed.dl_tensor
        return (t.device.device_type, t.device.device_id)


def problem(B=1, T=64, H=2, device=(CUDA, 0)):
    """The seven inputs of a call as stubs (nothing is allocated)."""
    big = (B, T, H, 128)
    return [Stub(big, device=device), Stub(big, device=device), Stub(big, device=device), Stub(big, device=device),
            Stub((B, T, H), device=device), Stub((H,), FP32, device=device), Stub((H, 128), FP32, device=device)]
