"""kdajit's exceptions: one per kind of failure, with the library's message."""
from __future__ import annotations


class KdaError(Exception):
    """Base class of every error kdajit raises for a failed call."""


class TensorError(KdaError, ValueError):
    """A bad argument: the message names it, with what was expected and what came."""


class ScheduleError(KdaError, ValueError):
    """A schedule failed to parse, validate or lower (or none is eligible for the call)."""


class ToolchainError(KdaError, RuntimeError):
    """NVRTC or the CUDA driver failed, is missing, or is too old."""


class CacheError(KdaError, OSError):
    """The kernel cache or a bundle could not be read or written."""


class InternalError(KdaError, RuntimeError):
    """A bug in kdajit: please report it with the message."""


_BY_STATUS = {1: TensorError, 2: ScheduleError, 3: ToolchainError, 4: CacheError, 5: InternalError}


def raise_for_status(status: int, message: str) -> None:
    """Raises the exception for a non-zero kda_status."""
    raise _BY_STATUS.get(status, InternalError)(message)


class UnsupportedError(KdaError, NotImplementedError):
    """A feature of a peer's API that kdajit does not implement (it raises
    rather than run something else)."""
