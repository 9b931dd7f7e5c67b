"""Device tensors from torch or any ``__dlpack__`` producer, as the C API's kda_tensor.

torch is never imported here: a tensor is recognised as torch's only when the
torch module is already loaded and the object is a ``torch.Tensor``.
"""
from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any, NamedTuple, Optional

from ._library import KdaTensor
from .errors import TensorError

BF16, FP32, INT32, INT64 = 0, 1, 2, 3
DTYPE_NAMES = {BF16: "bfloat16", FP32: "float32", INT32: "int32", INT64: "int64"}

_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13
# DLPack (code, bits) -> kda_dtype
_DLPACK_DTYPES = {(4, 16): BF16, (2, 32): FP32, (0, 32): INT32, (0, 64): INT64}


class Info(NamedTuple):
    """What kdajit needs of one tensor."""
    data: int
    dtype: int
    shape: tuple
    strides: tuple  # in elements
    device: int     # CUDA ordinal
    keepalive: Any  # the DLPack capsule, kept until the call returns


def torch_module():
    return sys.modules.get("torch")


def is_torch_tensor(x: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


_torch_dtypes: dict = {}


def _torch_dtype_code(name: str, x) -> int:
    if not _torch_dtypes:
        torch = torch_module()
        _torch_dtypes.update({torch.bfloat16: BF16, torch.float32: FP32, torch.int32: INT32, torch.int64: INT64})
    code = _torch_dtypes.get(x.dtype)
    if code is None:
        raise TensorError(f"{name}: dtype {x.dtype} is not one kdajit takes (bfloat16, float32, int32, int64)")
    return code


def _from_torch(name: str, x) -> Info:
    if not x.is_cuda:
        raise TensorError(f"{name}: must be a CUDA tensor, got one on {x.device}")
    if x.dim() > 4:
        raise TensorError(f"{name}: rank {x.dim()} is more than 4")
    # contiguous: strides left to kdajit (a size-1 dimension's stride is arbitrary in torch)
    strides = () if x.is_contiguous() else tuple(x.stride())
    return Info(x.data_ptr(), _torch_dtype_code(name, x), tuple(x.shape), strides, x.get_device(), None)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(name: str, x, stream: int) -> Info:
    try:
        capsule = x.__dlpack__(stream=stream if stream != 0 else 1)
    except TypeError:
        capsule = x.__dlpack__()
    address = _capsule_pointer(capsule, b"dltensor")
    t = _DLTensor.from_address(address)  # DLManagedTensor starts with its DLTensor
    if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise TensorError(f"{name}: must be CUDA device memory (DLPack device type {t.device.device_type})")
    if t.ndim > 4:
        raise TensorError(f"{name}: rank {t.ndim} is more than 4")
    code = _DLPACK_DTYPES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if code is None:
        raise TensorError(f"{name}: DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes) "
                          "is not one kdajit takes (bfloat16, float32, int32, int64)")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides, running = [], 1
        for extent in reversed(shape):
            strides.append(running)
            running *= extent
        strides = tuple(reversed(strides))
    return Info((t.data or 0) + t.byte_offset, code, shape, strides, t.device.device_id, capsule)


def describe(name: str, x: Any, stream: int = 0) -> Optional[Info]:
    """The Info of `x` (None for None); TensorError for what kdajit cannot take."""
    if x is None:
        return None
    if is_torch_tensor(x):
        return _from_torch(name, x)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(name, x, stream)
    raise TensorError(f"{name}: expected a torch tensor or an object with __dlpack__, got {type(x).__name__}")


def buffer_extent(name: str, x: Any) -> tuple:
    """(device pointer, bytes, device) of a device buffer of any dtype: a
    torch tensor or a ``__dlpack__`` producer, contiguous."""
    if is_torch_tensor(x):
        if not x.is_cuda or not x.is_contiguous():
            raise TensorError(f"{name}: must be a contiguous CUDA tensor")
        return x.data_ptr(), x.numel() * x.element_size(), x.get_device()
    if not hasattr(x, "__dlpack__"):
        raise TensorError(f"{name}: expected a torch tensor or an object with __dlpack__, got {type(x).__name__}")
    capsule = x.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise TensorError(f"{name}: must be CUDA device memory (DLPack device type {t.device.device_type})")
    count = 1
    for i in range(t.ndim):
        count *= t.shape[i]
    return (t.data or 0) + t.byte_offset, count * t.dtype.bits * t.dtype.lanes // 8, t.device.device_id


# kda_tensor: data, dtype, rank, shape[4], strides[4] (native alignment)
_TENSOR_LAYOUT = struct.Struct("Pii4q4q")
assert _TENSOR_LAYOUT.size == ctypes.sizeof(KdaTensor)
_ZERO4 = (0, 0, 0, 0)


def fill(args: ctypes.Structure, offset: int, info: Optional[Info]) -> None:
    """Writes `info` into the kda_tensor at `offset` of `args` (all zero for None)."""
    if info is None:
        _TENSOR_LAYOUT.pack_into(args, offset, 0, 0, 0, *_ZERO4, *_ZERO4)
        return
    rank = len(info.shape)
    shape = info.shape + _ZERO4[rank:]
    strides = (info.strides + _ZERO4[len(info.strides):]) if info.strides else _ZERO4  # () = contiguous
    _TENSOR_LAYOUT.pack_into(args, offset, info.data, info.dtype, rank, *shape, *strides)
