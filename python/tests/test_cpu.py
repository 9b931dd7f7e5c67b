"""What the Python package does without torch and without a GPU: import,
version, errors raised as the right Python exceptions with kdajit's messages."""
from __future__ import annotations

import os

import pytest

import kdajit
from kdajit import compat

from dlpack_stub import BF16, CPU, FP16, FP32, Stub, problem


def test_version_matches_the_library():
    assert kdajit.__version__ == kdajit.library_version()
    assert os.path.isfile(kdajit.library_path) or kdajit.library_path == "libkdajit.so.0"


def test_torch_is_not_imported():
    import subprocess
    import sys
    code = "import sys, kdajit, kdajit.compat; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_error_classes():
    assert issubclass(kdajit.TensorError, ValueError)
    assert issubclass(kdajit.ScheduleError, kdajit.KdaError)
    assert issubclass(kdajit.ToolchainError, RuntimeError)
    assert issubclass(kdajit.CacheError, OSError)
    assert issubclass(kdajit.UnsupportedError, NotImplementedError)


@pytest.mark.parametrize("flag", ["use_qk_l2norm_in_kernel", "use_gate_in_kernel", "beta_is_logit"])
def test_flags_set_false_are_refused(flag):
    with pytest.raises(kdajit.TensorError, match=f"{flag}=False is not supported"):
        kdajit.recurrent_kda_prefill(*problem(), **{flag: False})


def test_not_a_tensor():
    args = problem()
    args[1] = [1, 2, 3]
    with pytest.raises(kdajit.TensorError, match="k: expected a torch tensor or an object with __dlpack__, got list"):
        kdajit.recurrent_kda_prefill(*args, out=Stub((1, 64, 2, 128)))


def test_host_memory_is_refused():
    args = problem()
    args[2] = Stub((1, 64, 2, 128), device=(CPU, 0))
    with pytest.raises(kdajit.TensorError, match="v: must be CUDA device memory"):
        kdajit.recurrent_kda_prefill(*args, out=Stub((1, 64, 2, 128)))


def test_unknown_dtype_is_refused():
    args = problem()
    args[3] = Stub((1, 64, 2, 128), dtype=FP16)
    with pytest.raises(kdajit.TensorError, match=r"g: DLPack dtype \(code 2, 16 bits, 1 lanes\)"):
        kdajit.recurrent_kda_prefill(*args, out=Stub((1, 64, 2, 128)))


def test_tensors_on_two_devices_are_refused():
    args = problem()
    args[4] = Stub((1, 64, 2), device=(2, 1))
    with pytest.raises(kdajit.TensorError, match="beta: is on CUDA device 1, q on 0"):
        kdajit.recurrent_kda_prefill(*args, out=Stub((1, 64, 2, 128)))


def test_outputs_are_required_without_torch():
    with pytest.raises(kdajit.TensorError, match="out: required when the inputs are not torch tensors"):
        kdajit.recurrent_kda_prefill(*problem())


def test_the_stream_reaches_the_producer():
    args = problem()
    try:
        kdajit.recurrent_kda_prefill(*args, out=Stub((1, 64, 2, 128)), stream=1234)
    except kdajit.KdaError:
        pass  # no GPU here
    assert args[1].streams_seen == [1234]


def test_a_library_error_reaches_python_with_its_message(tmp_path):
    bad = tmp_path / "garbage.kdab"
    bad.write_bytes(b"not a bundle at all, just bytes" * 4)
    with pytest.raises(kdajit.CacheError) as e:
        kdajit.register_kernel_bundle(str(bad))
    assert "garbage.kdab" in str(e.value) and "magic" in str(e.value)


def test_without_a_gpu_a_call_raises_toolchain_error():
    if "compile-only" not in kdajit.toolchain():
        pytest.skip("a CUDA driver and device are present")
    with pytest.raises(kdajit.ToolchainError):
        kdajit.recurrent_kda_prefill(*problem(), out=Stub((1, 64, 2, 128)))


def test_bad_family_is_refused():
    with pytest.raises(kdajit.TensorError, match="family: unknown family 'mma'"):
        kdajit.recurrent_kda_prefill(*problem(), out=Stub((1, 64, 2, 128)), family="mma")


def test_missing_bundle_is_a_cache_error(tmp_path):
    with pytest.raises(kdajit.CacheError, match="nothing.kdab"):
        kdajit.register_kernel_bundle(str(tmp_path / "nothing.kdab"))


def test_cache_directory_follows_the_environment():
    expected = os.environ.get("KDAJIT_CACHE_DIR")
    if expected:
        assert os.path.realpath(kdajit.kernel_cache_directory()) == os.path.realpath(expected)
    else:
        assert isinstance(kdajit.kernel_cache_directory(), str)


def test_toolchain_summary_names_the_driver_and_nvrtc():
    summary = kdajit.toolchain()
    assert "NVRTC" in summary


def test_compat_refuses_what_it_cannot_honour():
    with pytest.raises(kdajit.UnsupportedError, match="takes torch tensors"):
        compat.chunk_kda(*problem()[:5], A_log=None)
