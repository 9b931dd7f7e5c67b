#!/usr/bin/env python3
"""How long PTX takes to become a loaded module on this GPU host, the first
time in a process: the question the LLVM tier-0 backend (issue: a token-
recurrent kernel emitted as NVVM IR, lowered to PTX in process) depends on.

For each path, N fresh processes each: create the CUDA context (not timed),
then time
  driver-nocache: cuModuleLoadDataEx(PTX) with CUDA_CACHE_DISABLE=1
                  (the driver's PTX JIT, compiled in every process)
  driver:    cuModuleLoadDataEx(PTX)          (the driver's PTX JIT; after
             the first process its compute cache answers)
  nvjitlink: dlopen libnvJitLink + create/add/complete/get cubin, then
             cuModuleLoadData(cubin)          (both parts printed)
The PTX is token_prefill.sm_90.ptx, compiled by nvcc from token_prefill.cu
(a stand-in of the size a token-recurrent kernel has; the tier-0 kernel will
come from LLVM's NVPTX backend instead). Usage: measure.py [runs]
Prints one line per process and the medians.
"""
import ctypes, glob, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
PTX = os.path.join(HERE, "token_prefill.sm_90.ptx")


def context():
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    dev = ctypes.c_int()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    ctx = ctypes.c_void_p()
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    return cuda


def load(cuda, image):
    mod = ctypes.c_void_p()
    rc = cuda.cuModuleLoadDataEx(ctypes.byref(mod), image, 0, None, None)
    assert rc == 0, f"cuModuleLoadDataEx: {rc}"
    fn = ctypes.c_void_p()
    assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"token_prefill") == 0


def nvjitlink_library():
    for pattern in ("/usr/local/cuda*/lib64/libnvJitLink.so*", "/usr/local/cuda*/targets/*/lib/libnvJitLink.so*",
                    "/usr/lib/x86_64-linux-gnu/libnvJitLink.so*"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    try:
        import nvidia  # torch's wheels
        for base in nvidia.__path__:
            found = sorted(glob.glob(os.path.join(base, "**", "libnvJitLink.so*"), recursive=True))
            if found:
                return found[0]
    except ImportError:
        pass
    return "libnvJitLink.so.13"


def child(mode):
    ptx = open(PTX, "rb").read() + b"\0"
    cuda = context()
    result = {"mode": mode}
    if mode in ("driver", "driver-nocache"):
        t = time.perf_counter()
        load(cuda, ptx)
        result["load_ms"] = (time.perf_counter() - t) * 1e3
    else:
        t = time.perf_counter()
        lib = ctypes.CDLL(nvjitlink_library())
        handle = ctypes.c_void_p()
        opts = (ctypes.c_char_p * 1)(b"-arch=sm_90")
        assert lib.nvJitLinkCreate(ctypes.byref(handle), 1, opts) == 0
        rc = lib.nvJitLinkAddData(handle, 2, ptx, len(ptx) - 1, b"token_prefill.ptx")  # 2 = NVJITLINK_INPUT_PTX
        assert rc == 0, f"nvJitLinkAddData: {rc}"  # Complete would succeed with an empty cubin
        rc = lib.nvJitLinkComplete(handle)
        assert rc == 0, f"nvJitLinkComplete: {rc}"
        size = ctypes.c_size_t()
        assert lib.nvJitLinkGetLinkedCubinSize(handle, ctypes.byref(size)) == 0
        cubin = ctypes.create_string_buffer(size.value)
        assert lib.nvJitLinkGetLinkedCubin(handle, cubin) == 0
        result["link_ms"] = (time.perf_counter() - t) * 1e3
        result["cubin_bytes"] = size.value
        t = time.perf_counter()
        load(cuda, cubin)
        result["load_ms"] = (time.perf_counter() - t) * 1e3
    print(json.dumps(result), flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"PTX {os.path.getsize(PTX)} bytes; nvJitLink: {nvjitlink_library()}")
    for mode in ("driver-nocache", "driver", "nvjitlink"):
        rows = []
        env = dict(os.environ)
        if mode == "driver-nocache":
            env["CUDA_CACHE_DISABLE"] = "1"  # every process JIT-compiles: the cold cost without the driver's cache
        for _ in range(runs):
            out = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                print(f"{mode}: failed: {out.stderr.strip()[-400:]}")
                break
            print(out.stdout.strip())
            rows.append(json.loads(out.stdout))
        if rows:
            keys = [k for k in rows[0] if k.endswith("_ms")]
            print(f"{mode}: median over {len(rows)} processes: " +
                  ", ".join(f"{k} {statistics.median(r[k] for r in rows):.1f}" for k in keys))


if __name__ == "__main__":
    main()
