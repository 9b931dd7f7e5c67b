"""kdajit._runner (Plan.run's common case in C) without a GPU: a ctypes
callback stands in for kda_plan_run and records the arguments it is given,
and objects with torch.Tensor's attributes stand in for tensors."""
import ctypes
import itertools

import pytest

from kdajit import _runner
from kdajit._library import KdaPrefillArgs
from kdajit._prefill import _FIELD_OFFSETS, _RUN_ORDER, _RUN_PARAMETERS

BF16, FP32 = object(), object()  # dtypes are compared by identity
_addresses = itertools.count(0x7F0000001000, 0x1000)


class FakeTensor:
    def __init__(self, shape, dtype=BF16, device=0, strides=None):
        self.shape, self.dtype, self.device, self.strides = tuple(shape), dtype, device, strides
        self.address = next(_addresses)


METHODS = (lambda t: t.address, lambda t: t.device, lambda t: t.strides,
           lambda t: t.strides is None)
PLAN_RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
SHAPES = {"q": (1, 64, 2, 128), "k": (1, 64, 2, 128), "v": (1, 64, 2, 128), "g": (1, 64, 2, 128),
          "beta": (1, 64, 2), "a_log": (2,), "dt_bias": (2, 128), "out": (1, 64, 2, 128),
          "initial_state": (1, 2, 128, 128)}
DTYPES = {"a_log": FP32, "dt_bias": FP32}


class Harness:
    """A Runner over a fake kda_plan_run, for a signature of q..dt_bias, out
    and an initial state, with output_final_state."""

    def __init__(self, status=0, beta_strides=None):
        self.calls, self.fallbacks, self.status = [], [], status
        self.args = KdaPrefillArgs()
        self.fn = PLAN_RUN(self._record)
        present = [n for n in _RUN_ORDER if n in SHAPES]
        self.strides = {"beta": beta_strides}
        slots = tuple((_RUN_ORDER.index(n), _FIELD_OFFSETS[n], DTYPES.get(n, BF16), SHAPES[n],
                       self.strides.get(n), 0) for n in present)
        absent = sum(1 << p for p, n in enumerate(_RUN_ORDER) if n not in SHAPES)
        results = ((_RUN_ORDER.index("out"),), (_RUN_ORDER.index("initial_state"), _RUN_ORDER.index("final_state")))
        self.runner = _runner.Runner(
            ctypes.cast(self.fn, ctypes.c_void_p).value, 0x1234, ctypes.addressof(self.args),
            KdaPrefillArgs.stream.offset, 0x5000, 4096, slots, absent, results, _RUN_PARAMETERS, 0,
            lambda device: 0xABC0 + device, METHODS, self._raise, self._fallback, (self.args,))

    def _record(self, plan, args, workspace, nbytes):
        a = KdaPrefillArgs.from_address(args)
        self.calls.append({"plan": plan, "workspace": workspace, "bytes": nbytes, "stream": a.stream,
                           **{n: getattr(a, n).data for n in SHAPES}})
        return self.status

    def _raise(self, status):
        raise RuntimeError(f"status {status}")

    def _fallback(self, *args, **kwargs):
        self.fallbacks.append((args, kwargs))
        return "fallback"

    def tensors(self):
        x = [FakeTensor(SHAPES[n], DTYPES.get(n, BF16), strides=self.strides.get(n)) for n in _RUN_ORDER[:7]]
        return x, {"out": FakeTensor(SHAPES["out"]), "initial_state": FakeTensor(SHAPES["initial_state"])}


def test_a_matching_call_passes_every_pointer_and_the_current_stream():
    h = Harness()
    x, kw = h.tensors()
    result = h.runner.run(*x, **kw)
    assert result == (kw["out"], kw["initial_state"]) and not h.fallbacks
    (call,) = h.calls
    assert call["plan"] == 0x1234 and call["workspace"] == 0x5000 and call["bytes"] == 4096
    assert call["stream"] == 0xABC0
    for name, t in zip(_RUN_ORDER, x):
        assert call[name] == t.address, name
    assert call["out"] == kw["out"].address and call["initial_state"] == kw["initial_state"].address


def test_each_call_passes_its_own_pointers():
    h = Harness()
    for _ in range(3):
        x, kw = h.tensors()
        h.runner.run(*x, **kw)
        assert h.calls[-1]["q"] == x[0].address and h.calls[-1]["out"] == kw["out"].address
    assert len(h.calls) == 3


def test_tensors_may_be_given_by_keyword():
    h = Harness()
    x, kw = h.tensors()
    h.runner.run(*x[:5], A_log=x[5], dt_bias=x[6], **kw)
    assert h.calls[-1]["a_log"] == x[5].address and not h.fallbacks


@pytest.mark.parametrize("change", ["dtype", "shape", "device", "strides", "not a tensor"])
def test_what_differs_from_the_signature_goes_to_the_python_checks(change):
    h = Harness()
    x, kw = h.tensors()
    if change == "dtype":
        x[0].dtype = FP32
    elif change == "shape":
        x[1].shape = (1, 65, 2, 128)
    elif change == "device":
        x[2].device = 1
    elif change == "strides":
        x[3].strides = (64 * 256, 256, 128, 1)  # contiguous in the signature
    else:
        x[4] = object()
    assert h.runner.run(*x, **kw) == "fallback" and not h.calls
    (args, kwargs), = h.fallbacks
    assert args == tuple(x) and kwargs == kw


def test_strided_signature_tensors_are_compared_by_strides():
    h = Harness(beta_strides=(64 * 4, 4, 1))
    x, kw = h.tensors()
    h.runner.run(*x, **kw)
    assert len(h.calls) == 1
    x[4].strides = (64 * 2, 2, 1)
    assert h.runner.run(*x, **kw) == "fallback"


@pytest.mark.parametrize("extra", [{"cu_seqlens": "tensor"}, {"stream": 5}, {"workspace": "buffer"},
                                   {"unknown": 1}, {"q": "twice"}])
def test_anything_but_the_common_case_goes_to_the_python_checks(extra):
    h = Harness()
    x, kw = h.tensors()
    kw.update({k: (FakeTensor((3,)) if v == "tensor" else v) for k, v in extra.items()})
    assert h.runner.run(*x, **kw) == "fallback" and not h.calls


def test_missing_tensors_go_to_the_python_checks():
    h = Harness()
    x, kw = h.tensors()
    del kw["out"]
    assert h.runner.run(*x, **kw) == "fallback"
    assert h.runner.run(*x[:6], out=kw.get("out")) == "fallback"
    assert not h.calls


def test_none_for_stream_workspace_and_absent_tensors_is_the_common_case():
    h = Harness()
    x, kw = h.tensors()
    h.runner.run(*x, stream=None, workspace=None, cu_seqlens=None, seq_order=None, **kw)
    assert len(h.calls) == 1 and not h.fallbacks


def test_a_failed_run_raises_through_the_status_handler():
    h = Harness(status=7)
    x, kw = h.tensors()
    with pytest.raises(RuntimeError, match="status 7"):
        h.runner.run(*x, **kw)


def test_a_bad_runner_is_refused():
    with pytest.raises(TypeError):
        _runner.Runner(1, 2, 3)
    h = Harness()
    with pytest.raises(ValueError, match="null address"):
        _runner.Runner(0, 0x1234, ctypes.addressof(h.args), 0, None, 0, (), 0, ((),), _RUN_PARAMETERS, 0,
                       lambda d: 0, METHODS, h._raise, h._fallback, ())
    with pytest.raises(ValueError, match="15 names"):
        _runner.Runner(1, 0x1234, ctypes.addressof(h.args), 0, None, 0, (), 0, ((),), ("q",), 0,
                       lambda d: 0, METHODS, h._raise, h._fallback, ())
