"""recurrent_kda_prefill and plans, over the C API."""
from __future__ import annotations

import ctypes
import math
import struct
import threading
import weakref
from typing import Any, Optional, Tuple

from . import _tensors
from ._library import TENSOR_FIELDS, KdaPrefillArgs, lib
from ._tensors import Info, describe, fill, is_torch_tensor, torch_module
from .errors import TensorError, raise_for_status

try:
    from . import _runner  # Plan.run's common case in C (python/src/runner.c)
except ImportError:  # a source tree without the built module: Plan.run in Python only
    _runner = None

_DEFAULT_SCALE = 1.0 / math.sqrt(128.0)
_FIELD_OFFSETS = {name: getattr(KdaPrefillArgs, name).offset for name in TENSOR_FIELDS}
# Plan.run's parameters, in the order it passes them on
_RUN_ORDER = ("q", "k", "v", "g", "beta", "a_log", "dt_bias", "initial_state", "cu_seqlens", "out", "final_state",
              "ssm_state_indices", "seq_order", "state_checkpoints", "checkpoint_cu_starts")
# ... and their names as run() spells them
_RUN_PARAMETERS = ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state", "cu_seqlens", "out",
                   "final_state", "ssm_state_indices", "seq_order", "state_checkpoints", "checkpoint_cu_starts")
_POINTER = struct.Struct("P")
_FAMILIES = ("warp_mma", "wgmma", "tcgen05", "token")


def _check(status: int) -> None:
    if status != 0:
        raise_for_status(status, lib.kda_last_error().decode(errors="replace"))


def _refuse_unsupported(use_qk_l2norm_in_kernel: bool, use_gate_in_kernel: bool, beta_is_logit: bool) -> None:
    for name, value, why in (
        ("use_qk_l2norm_in_kernel", use_qk_l2norm_in_kernel, "q and k are always L2-normalised in the kernel"),
        ("use_gate_in_kernel", use_gate_in_kernel, "g is always the raw gate input, activated in the kernel"),
        ("beta_is_logit", beta_is_logit, "beta is always a logit, passed through a sigmoid in the kernel"),
    ):
        if not value:
            raise TensorError(f"{name}=False is not supported: {why}")


def _stream_handle(stream: Any, device: int, torch_inputs: bool) -> int:
    """The CUstream to run on: `stream` when given, else torch's current stream
    of `device` for torch inputs, else the legacy default stream."""
    if stream is not None:
        if isinstance(stream, int):
            return stream
        for attribute in ("cuda_stream", "ptr", "handle"):
            handle = getattr(stream, attribute, None)
            if isinstance(handle, int):
                return handle
        raise TensorError(f"stream: expected an int CUstream or a stream object, got {type(stream).__name__}")
    if torch_inputs:
        torch = torch_module()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    return 0


class _DeviceGuard:
    """Makes torch's current device `device` for the call (a no-op when it is)."""

    def __init__(self, device: int, torch_inputs: bool):
        self._guard = None
        if torch_inputs:
            torch = torch_module()
            if torch.cuda.current_device() != device:
                self._guard = torch.cuda.device(device)

    def __enter__(self):
        if self._guard is not None:
            self._guard.__enter__()
        return self

    def __exit__(self, *exc):
        if self._guard is not None:
            self._guard.__exit__(*exc)
        return False


class _Call:
    """One call's tensors described, checked for a common device, and its scalars."""

    def __init__(self, tensors: dict, stream: Any):
        self.torch_inputs = is_torch_tensor(tensors["q"])
        first = describe("q", tensors["q"]) if tensors["q"] is not None else None
        if first is None:
            raise TensorError("q: is required")
        self.device = first.device
        self.stream = _stream_handle(stream, self.device, self.torch_inputs)
        self.infos: dict = {}
        for name, value in tensors.items():
            info = first if name == "q" else describe(name, value, self.stream)
            if info is not None and info.device != self.device:
                raise TensorError(f"{name}: is on CUDA device {info.device}, q on {self.device}")
            self.infos[name] = info

    def sequences(self) -> int:
        cu = self.infos.get("cu_seqlens")
        return (cu.shape[0] - 1) if cu is not None and cu.shape else self.infos["q"].shape[0]


def _make_args(call: _Call, values: dict, scale: Optional[float], lower_bound: float, output_final_state: bool,
               checkpoint_every_n_tokens: Optional[int], schedule: Optional[str], family: Optional[str],
               prepare_overlap: bool, tiered: Optional[bool] = None) -> KdaPrefillArgs:
    args = KdaPrefillArgs()
    lib.kda_prefill_args_init(ctypes.byref(args))  # every tensor empty
    for name, info in call.infos.items():
        if info is not None:
            fill(args, _FIELD_OFFSETS[name], info)
    args.scale = _DEFAULT_SCALE if scale is None else float(scale)
    args.lower_bound = float(lower_bound)
    args.output_final_state = 1 if output_final_state else 0
    args.stream = call.stream or None
    args.checkpoint_every_n_tokens = int(checkpoint_every_n_tokens or 0)
    if family is not None and family not in _FAMILIES:
        raise TensorError(f"family: unknown family '{family}' (known: {', '.join(_FAMILIES)})")
    args.schedule = schedule.encode() if schedule else None
    args.family = family.encode() if family else None
    args.prepare_overlap = 1 if prepare_overlap else 0
    args.tiered = -1 if tiered is None else (1 if tiered else 0)
    return args


def _tensor_dict(q, k, v, g, beta, A_log, dt_bias, initial_state, cu_seqlens, out, final_state, ssm_state_indices,
                 seq_order, state_checkpoints, checkpoint_cu_starts) -> dict:
    return {"q": q, "k": k, "v": v, "g": g, "beta": beta, "a_log": A_log, "dt_bias": dt_bias,
            "initial_state": initial_state, "cu_seqlens": cu_seqlens, "out": out, "final_state": final_state,
            "ssm_state_indices": ssm_state_indices, "seq_order": seq_order, "state_checkpoints": state_checkpoints,
            "checkpoint_cu_starts": checkpoint_cu_starts}


def _allocate_missing(call: _Call, tensors: dict, output_final_state: bool) -> None:
    """Output and (when one is written without an initial state) the final
    state, as torch tensors on the call's device; non-torch callers pass them."""
    need_state = output_final_state and tensors["initial_state"] is None and tensors["final_state"] is None
    if tensors["out"] is not None and not need_state:
        return
    if not call.torch_inputs:
        missing = "out" if tensors["out"] is None else "final_state"
        raise TensorError(f"{missing}: required when the inputs are not torch tensors (kdajit allocates outputs "
                          "as torch tensors)")
    torch = torch_module()
    device = torch.device("cuda", call.device)
    if tensors["out"] is None:
        tensors["out"] = torch.empty(tuple(call.infos["v"].shape) if call.infos["v"] else (0,),
                                     dtype=torch.bfloat16, device=device)
        call.infos["out"] = describe("out", tensors["out"])
    if need_state:
        heads = call.infos["q"].shape[2] if len(call.infos["q"].shape) == 4 else 0
        tensors["final_state"] = torch.empty((call.sequences(), heads, 128, 128), dtype=torch.bfloat16, device=device)
        call.infos["final_state"] = describe("final_state", tensors["final_state"])


def _results(tensors: dict, output_final_state: bool, checkpoint_every_n_tokens: Optional[int]) -> tuple:
    if tensors["initial_state"] is not None:
        state = tensors["initial_state"] if output_final_state else None
    else:
        state = tensors["final_state"] if output_final_state else None
    if checkpoint_every_n_tokens:
        return tensors["out"], state, tensors["state_checkpoints"]
    return tensors["out"], state


def recurrent_kda_prefill(q, k, v, g, beta, A_log, dt_bias, scale: Optional[float] = None, lower_bound: float = -5.0,
                          initial_state=None, output_final_state: bool = False, cu_seqlens=None, out=None,
                          ssm_state_indices=None, seq_order=None, state_checkpoints=None, checkpoint_cu_starts=None,
                          checkpoint_every_n_tokens: Optional[int] = None, use_qk_l2norm_in_kernel: bool = True,
                          use_gate_in_kernel: bool = True, beta_is_logit: bool = True, *, final_state=None,
                          stream: Any = None, schedule: Optional[str] = None, family: Optional[str] = None,
                          prepare_overlap: bool = True, tiered: Optional[bool] = None) -> tuple:
    """Recurrent KDA prefill (gate, L2 norm and beta sigmoid in the kernel).

    q, k, v, g: bf16 [B, T, H, 128] (packed: B = 1 with ``cu_seqlens`` int32
    or int64 [N+1]); beta: bf16 [B, T, H] logits; A_log: fp32 [H]; dt_bias:
    fp32 [H, 128] or [H*128]. ``initial_state`` (bf16 or fp32 [N, H, 128, 128],
    index 2 the value row, 3 the key column; with ``ssm_state_indices`` int32
    [N] a pool of slots) is updated in place even when ``output_final_state``
    is False. Native checkpoints: ``state_checkpoints`` bf16 [C, H, 128, 128],
    ``checkpoint_cu_starts`` int64 [N+1] and ``checkpoint_every_n_tokens`` (a
    positive multiple of 16) together. ``seq_order`` int32 [N] (packed only)
    is the order the kernels take the sequences in.

    ``tiered`` (None: the environment's KDAJIT_TIERED=1 decides; off by
    default): when the routed kernel is not compiled yet, run the LLVM tier's
    token kernel while NVRTC builds it in the background (both meet the
    spec's tolerances, their bits differ); ``last_prefill_tier()`` says which
    ran on this thread.

    Runs on the tensors' device, on ``stream`` (an int CUstream or a stream
    object) or else torch's current stream. Returns ``(out, final_state)``, or
    ``(out, final_state, state_checkpoints)`` with checkpoints; final_state
    is the updated initial_state (when output_final_state), a new bf16 state
    (output_final_state without initial_state) or None. Outputs not given are
    allocated as torch tensors (non-torch callers pass ``out`` and, when
    needed, ``final_state``). Raises TensorError (a ValueError) for bad
    arguments, ToolchainError when NVRTC or the driver fails, ScheduleError,
    CacheError or InternalError otherwise.
    """
    _refuse_unsupported(use_qk_l2norm_in_kernel, use_gate_in_kernel, beta_is_logit)
    tensors = _tensor_dict(q, k, v, g, beta, A_log, dt_bias, initial_state, cu_seqlens, out, final_state,
                           ssm_state_indices, seq_order, state_checkpoints, checkpoint_cu_starts)
    call = _Call(tensors, stream)
    with _DeviceGuard(call.device, call.torch_inputs):
        _allocate_missing(call, tensors, output_final_state)
        args = _make_args(call, tensors, scale, lower_bound, output_final_state, checkpoint_every_n_tokens, schedule,
                          family, prepare_overlap, tiered)
        ran_tier = ctypes.c_int32(0)
        args.ran_tier = ctypes.pointer(ran_tier)
        out_ptr, state_ptr = ctypes.c_void_p(), ctypes.c_void_p()
        _check(lib.kda_recurrent_prefill(ctypes.byref(args), ctypes.byref(out_ptr), ctypes.byref(state_ptr), None,
                                         None))
        _last_call.tier = "tier0" if ran_tier.value else "routed"
    return _results(tensors, output_final_state, checkpoint_every_n_tokens)


_last_call = threading.local()


def last_prefill_tier() -> Optional[str]:
    """Which kernel this thread's last recurrent_kda_prefill ran: "routed" (the
    routed schedule's) or "tier0" (the LLVM tier's token kernel, with
    ``tiered`` while the routed one compiles); None before any call."""
    return getattr(_last_call, "tier", None)


def explain_route(q, k, v, g, beta, A_log, dt_bias, **kwargs) -> str:
    """Why kdajit would run what it runs for this call (nothing is launched).
    Takes recurrent_kda_prefill's arguments."""
    _refuse_unsupported(kwargs.pop("use_qk_l2norm_in_kernel", True), kwargs.pop("use_gate_in_kernel", True),
                        kwargs.pop("beta_is_logit", True))
    call, args, _ = _prepare_signature(q, k, v, g, beta, A_log, dt_bias, **kwargs)
    text = ctypes.c_char_p()
    with _DeviceGuard(call.device, call.torch_inputs):
        _check(lib.kda_explain_route(ctypes.byref(args), ctypes.byref(text)))
    return text.value.decode()


def _prepare_signature(q, k, v, g, beta, A_log, dt_bias, scale=None, lower_bound=-5.0, initial_state=None,
                       output_final_state=False, cu_seqlens=None, out=None, ssm_state_indices=None, seq_order=None,
                       state_checkpoints=None, checkpoint_cu_starts=None, checkpoint_every_n_tokens=None, *,
                       final_state=None, stream=None, schedule=None, family=None, prepare_overlap=True):
    tensors = _tensor_dict(q, k, v, g, beta, A_log, dt_bias, initial_state, cu_seqlens, out, final_state,
                           ssm_state_indices, seq_order, state_checkpoints, checkpoint_cu_starts)
    call = _Call(tensors, stream)
    args = _make_args(call, tensors, scale, lower_bound, output_final_state, checkpoint_every_n_tokens, schedule,
                      family, prepare_overlap)
    return call, args, tensors


class _PlanHandle:
    """Owns one kda_plan: destroyed with the last reference to it (the Plan's
    or its native runner's)."""
    __slots__ = ("value",)

    def __init__(self, value: ctypes.c_void_p):
        self.value = value

    def __del__(self):
        if self.value is not None and lib is not None:
            lib.kda_plan_destroy(self.value)
            self.value = None


class Plan:
    """A prefill planned once for one call signature and run many times, the
    path for serving loops and CUDA-graph capture (kdajit/kda.hpp,
    kda::PrefillPlan, has the full rules).

    Made from a real call's tensors (checked like recurrent_kda_prefill's; the
    kernel is compiled or loaded, nothing is launched). ``run()`` then takes a
    call of the same signature (shapes, strides, dtypes, device, which optional
    tensors are given) with ``out`` given, and launches on the stream with no
    allocation, no synchronisation and no compile, so it can be captured into
    a CUDA graph. The plan's workspace is allocated once (a torch uint8
    tensor, or pass ``workspace``: any device buffer of ``workspace_bytes``);
    runs on several streams at once need one workspace each (``run(...,
    workspace=...)``).

    With torch tensors, on torch's current stream and with the plan's own
    workspace, ``run()`` is kdajit._runner's C code (``native_run`` is then
    True); any other call takes the same checks in Python. Either way one
    run's arguments are never mixed with another thread's.
    """

    def __init__(self, q, k, v, g, beta, A_log, dt_bias, scale: Optional[float] = None, lower_bound: float = -5.0,
                 initial_state=None, output_final_state: bool = False, cu_seqlens=None, out=None,
                 ssm_state_indices=None, seq_order=None, state_checkpoints=None, checkpoint_cu_starts=None,
                 checkpoint_every_n_tokens: Optional[int] = None, use_qk_l2norm_in_kernel: bool = True,
                 use_gate_in_kernel: bool = True, beta_is_logit: bool = True, *, final_state=None,
                 stream: Any = None, schedule: Optional[str] = None, family: Optional[str] = None,
                 prepare_overlap: bool = True, workspace=None, _allocate_workspace: bool = True):
        _refuse_unsupported(use_qk_l2norm_in_kernel, use_gate_in_kernel, beta_is_logit)
        call, args, tensors = _prepare_signature(
            q, k, v, g, beta, A_log, dt_bias, scale, lower_bound, initial_state, output_final_state, cu_seqlens, out,
            ssm_state_indices, seq_order, state_checkpoints, checkpoint_cu_starts, checkpoint_every_n_tokens,
            final_state=final_state, stream=stream, schedule=schedule, family=family,
            prepare_overlap=prepare_overlap)
        handle = ctypes.c_void_p()
        with _DeviceGuard(call.device, call.torch_inputs):
            _check(lib.kda_plan_create(ctypes.byref(args), ctypes.byref(handle)))
        self._owner = _PlanHandle(handle)
        self._handle = handle
        self._args = args
        self.device = call.device
        self._torch = call.torch_inputs
        self._output_final_state = output_final_state
        self._checkpoints = checkpoint_every_n_tokens
        self._signature = {name: info for name, info in call.infos.items()}
        nbytes = ctypes.c_int64()
        _check(lib.kda_plan_workspace_bytes(handle, ctypes.byref(nbytes)))
        self.workspace_bytes = nbytes.value
        schedule_name, target_name, overlapped = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int32()
        _check(lib.kda_plan_describe(handle, ctypes.byref(schedule_name), ctypes.byref(target_name),
                                     ctypes.byref(overlapped)))
        self.schedule = schedule_name.value.decode()
        self.target = target_name.value.decode()
        self.prepare_overlapped = bool(overlapped.value)
        self.workspace = workspace
        if workspace is None and self.workspace_bytes > 0 and _allocate_workspace:
            if not self._torch:
                raise TensorError("workspace: required when the inputs are not torch tensors "
                                  f"({self.workspace_bytes} bytes of device memory)")
            torch = torch_module()
            self.workspace = torch.empty(self.workspace_bytes, dtype=torch.uint8,
                                         device=torch.device("cuda", self.device))
        self._workspace = self._extent_of(self.workspace)
        # run(): for each tensor of the signature, its position among run()'s
        # parameters, what it must match and where its pointer goes; the
        # positions of the tensors the signature has not
        self._present, self._absent = [], []
        for position, name in enumerate(_RUN_ORDER):
            info = self._signature.get(name)
            if info is None:
                self._absent.append(position)
                continue
            dtype = _torch_dtype(info.dtype) if self._torch else None
            self._present.append((position, name, info, _FIELD_OFFSETS[name], info.shape, dtype, info.device,
                                  info.strides))  # kda_tensor.data comes first
        self.native_run = False
        if _runner is not None and self._torch:
            self.run = self._native_runner().run
            self.native_run = True

    def _native_runner(self):
        """A kdajit._runner.Runner for this plan: it holds what the plan's
        runs need (the kda_plan, the arguments, the workspace), and reaches
        the plan itself only through a weak reference, for the calls it
        leaves to Plan.run."""
        slots = tuple((position, offset, dtype, tuple(shape), tuple(strides) if strides else None, device)
                      for position, _, _, offset, shape, dtype, device, strides in self._present)
        position = _RUN_ORDER.index
        state = (position("initial_state"), position("final_state")) if self._output_final_state else ()
        results = ((position("out"),), state) + (((position("state_checkpoints"),),) if self._checkpoints else ())
        plan = weakref.ref(self)

        def in_python(*args, **kwargs):
            alive = plan()
            if alive is None:
                raise RuntimeError("kdajit.Plan.run: the plan was destroyed")
            return Plan.run(alive, *args, **kwargs)

        _current_raw_stream(self.device)  # resolves torch's stream lookup
        return _runner.Runner(
            ctypes.cast(_plan_run, ctypes.c_void_p).value, self._handle.value, ctypes.addressof(self._args),
            KdaPrefillArgs.stream.offset, self._workspace[0], self._workspace[1], slots,
            sum(1 << p for p in self._absent), results, _RUN_PARAMETERS, self.device, _raw_stream, _torch_methods(),
            _check, in_python, (self._owner, self._args, self.workspace))

    def _extent_of(self, buffer) -> tuple:
        """(pointer, bytes) of a workspace; the library refuses one that is too
        small, on another device or bound to another live plan."""
        if buffer is None:
            return None, 0
        pointer, nbytes, device = _tensors.buffer_extent("workspace", buffer)
        if device != self.device:
            raise TensorError(f"workspace: is on CUDA device {device}, the plan on {self.device}")
        return pointer, nbytes

    def run(self, q, k, v, g, beta, A_log, dt_bias, *, out, initial_state=None, cu_seqlens=None,
            ssm_state_indices=None, seq_order=None, state_checkpoints=None, checkpoint_cu_starts=None,
            final_state=None, stream: Any = None, workspace=None) -> tuple:
        """Runs a call of the plan's signature (TensorError naming what differs
        otherwise) on ``stream`` or torch's current stream. Returns what
        recurrent_kda_prefill returns."""
        given = (q, k, v, g, beta, A_log, dt_bias, initial_state, cu_seqlens, out, final_state, ssm_state_indices,
                 seq_order, state_checkpoints, checkpoint_cu_starts)
        for position in self._absent:
            if given[position] is not None:
                raise TensorError(f"{_RUN_ORDER[position]}: given, but the plan's signature has none")
        # a copy of the arguments per call: concurrent runs of one plan from
        # several threads each pass their own
        args = KdaPrefillArgs.from_buffer_copy(self._args)
        if self._torch:
            data_ptr, get_device, stride, is_contiguous = _torch_methods()
            for position, name, info, offset, shape, dtype, device, strides in self._present:
                x = given[position]
                try:
                    if (x.dtype is not dtype or x.shape != shape or get_device(x) != device or
                            (stride(x) != strides if strides else not is_contiguous(x))):
                        self._mismatch(name, info, x)
                    _POINTER.pack_into(args, offset, data_ptr(x))
                except (AttributeError, TypeError):  # not a tensor
                    self._mismatch(name, info, x)
        else:
            for position, name, info, offset, shape, dtype, device, strides in self._present:
                x = given[position]
                now = describe(name, x) if x is not None else None
                if now is None or now[1:4] != info[1:4] or now.device != info.device:
                    self._mismatch(name, info, x)
                _POINTER.pack_into(args, offset, now.data)
        if stream is None and self._torch:
            handle = _current_raw_stream(self.device)
        else:
            handle = _stream_handle(stream, self.device, self._torch)
        _POINTER.pack_into(args, KdaPrefillArgs.stream.offset, handle or 0)
        if workspace is None:
            pointer, nbytes = self._workspace
        else:
            pointer, nbytes = self._extent_of(workspace)
        status = _plan_run(self._handle, ctypes.byref(args), ctypes.c_void_p(pointer), ctypes.c_int64(nbytes))
        if status != 0:
            _check(status)
        if self._checkpoints:
            return out, self._state_result(initial_state, final_state), state_checkpoints
        return out, self._state_result(initial_state, final_state)

    def _state_result(self, initial_state, final_state):
        if not self._output_final_state:
            return None
        return initial_state if initial_state is not None else final_state

    def _mismatch(self, name: str, info: Info, x) -> None:
        if x is None:
            raise TensorError(f"{name}: missing, but the plan's signature has one")
        now = describe(name, x)
        raise TensorError(f"{name}: {_tensors.DTYPE_NAMES[now.dtype]} {list(now.shape)} strides "
                          f"{list(now.strides) or 'contiguous'} on cuda:{now.device} differs from the plan's "
                          f"{_tensors.DTYPE_NAMES[info.dtype]} {list(info.shape)} strides "
                          f"{list(info.strides) or 'contiguous'} on cuda:{info.device}")

    def __repr__(self) -> str:
        return (f"kdajit.Plan(schedule={self.schedule!r}, target={self.target!r}, "
                f"prepare_overlapped={self.prepare_overlapped}, workspace_bytes={self.workspace_bytes}, "
                f"native_run={self.native_run})")


_torch_by_code: dict = {}


def _torch_dtype(code: int):
    if not _torch_by_code:
        torch = torch_module()
        _torch_by_code.update({0: torch.bfloat16, 1: torch.float32, 2: torch.int32, 3: torch.int64})
    return _torch_by_code[code]


# kda_plan_run for Plan.run, called with ctypes objects only: no argument
# conversion on the way
_plan_run = lib["kda_plan_run"]
_plan_run.restype = ctypes.c_int
_plan_run.argtypes = None

_methods: tuple = ()


def _torch_methods() -> tuple:
    """torch.Tensor's data_ptr, get_device, stride and is_contiguous, unbound."""
    global _methods
    if not _methods:
        tensor = torch_module().Tensor
        _methods = (tensor.data_ptr, tensor.get_device, tensor.stride, tensor.is_contiguous)
    return _methods


_raw_stream = None


def _current_raw_stream(device: int) -> int:
    global _raw_stream
    if _raw_stream is None:
        torch = torch_module()
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _raw_stream(device)


def plan(q, k, v, g, beta, A_log, dt_bias, **kwargs) -> Plan:
    """Plans for calls shaped like this one (``Plan``'s arguments)."""
    return Plan(q, k, v, g, beta, A_log, dt_bias, **kwargs)
