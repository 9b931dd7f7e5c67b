"""kdajit from Python on a CUDA GPU with torch: every layout against the fp64
reference (spec section 8), plans and CUDA graphs, streams, DLPack inputs,
errors, and kdajit.compat.chunk_kda against FLA itself when it is installed."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import kdajit  # noqa: E402
from kdajit import compat  # noqa: E402

from reference import check_output, check_state, kda_reference  # noqa: E402

pytestmark = pytest.mark.gpu
DEV = torch.device("cuda", 0)


def inputs(B, T, H, seed, g_scale=1.0):
    gen = torch.Generator(device=DEV).manual_seed(seed)

    def randn(*shape, dtype=torch.bfloat16, s=1.0):
        return (torch.randn(*shape, generator=gen, device=DEV, dtype=torch.float32) * s).to(dtype)

    q, k, v = randn(B, T, H, 128), randn(B, T, H, 128), randn(B, T, H, 128)
    g = randn(B, T, H, 128, s=g_scale)
    beta = randn(B, T, H)
    A_log = randn(H, dtype=torch.float32, s=0.5)
    dt_bias = randn(H, 128, dtype=torch.float32, s=0.5)
    return q, k, v, g, beta, A_log, dt_bias


def state(N, H, dtype, seed):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    return (torch.randn(N, H, 128, 128, generator=gen, device=DEV) * 0.1).to(dtype)


def poisoned(shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), dtype=dtype, device=DEV)


def fixed_bounds(B, T):
    return [(b, 0, T) for b in range(B)]


def packed_bounds(cu):
    cu = cu.tolist()
    return [(0, cu[i], cu[i + 1]) for i in range(len(cu) - 1)]


@pytest.mark.parametrize("state_dtype", [torch.bfloat16, torch.float32])
def test_fixed_layout_with_state_in_place(state_dtype):
    B, T, H = 2, 300, 4
    x = inputs(B, T, H, seed=1)
    s0 = state(B, H, state_dtype, seed=2)
    before = s0.clone()
    out = poisoned((B, T, H, 128))
    o, s = kdajit.recurrent_kda_prefill(*x, initial_state=s0, output_final_state=True, out=out)
    torch.cuda.synchronize()
    assert o is out and s is s0
    ref_o, ref_s, _ = kda_reference(*x, initial_state=before)
    check_output(o, ref_o, fixed_bounds(B, T))
    check_state(s, ref_s)


@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
def test_packed_layout_without_state_allocates_bf16(offsets_dtype):
    lengths = [37, 0, 130, 1, 64]
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=offsets_dtype, device=DEV)
    H = 3
    x = inputs(1, int(cu[-1]), H, seed=3)
    o, s = kdajit.recurrent_kda_prefill(*x, cu_seqlens=cu, output_final_state=True)
    torch.cuda.synchronize()
    assert s.dtype == torch.bfloat16 and s.shape == (len(lengths), H, 128, 128)
    ref_o, ref_s, _ = kda_reference(*x, cu_seqlens=cu)
    check_output(o, ref_o, packed_bounds(cu))
    check_state(s, ref_s)


def test_no_state_written_without_output_final_state():
    x = inputs(1, 80, 2, seed=4)
    o, s = kdajit.recurrent_kda_prefill(*x)
    torch.cuda.synchronize()
    assert s is None
    ref_o, _, _ = kda_reference(*x)
    check_output(o, ref_o, fixed_bounds(1, 80))


def test_token_strided_beta_view():
    B, T, H = 1, 96, 4
    x = list(inputs(B, T, H, seed=5))
    wide = torch.randn(B, T, H + 4, device=DEV).to(torch.bfloat16)
    x[4] = wide[:, :, :H]  # unit head stride, token-row stride H + 4
    assert not x[4].is_contiguous()
    o, _ = kdajit.recurrent_kda_prefill(*x)
    torch.cuda.synchronize()
    ref_o, _, _ = kda_reference(*x)
    check_output(o, ref_o, fixed_bounds(B, T))


def test_state_pool_touches_only_its_slots_and_seq_order():
    lengths = [50, 20, 90]
    cu = torch.tensor([0, 50, 70, 160], dtype=torch.int32, device=DEV)
    H = 2
    x = inputs(1, 160, H, seed=6)
    pool = state(6, H, torch.bfloat16, seed=7)
    before = pool.clone()
    slots = torch.tensor([4, 0, 2], dtype=torch.int32, device=DEV)
    order = torch.tensor([2, 0, 1], dtype=torch.int32, device=DEV)
    o, s = kdajit.recurrent_kda_prefill(*x, cu_seqlens=cu, initial_state=pool, ssm_state_indices=slots,
                                        seq_order=order, output_final_state=True)
    torch.cuda.synchronize()
    ref_o, ref_s, _ = kda_reference(*x, cu_seqlens=cu, initial_state=before[slots.long()])
    check_output(o, ref_o, packed_bounds(cu))
    check_state(pool[slots.long()], ref_s)
    for untouched in (1, 3, 5):
        assert torch.equal(pool[untouched], before[untouched])
    assert sum(lengths) == 160


def test_native_checkpoints():
    lengths, every = [70, 33, 128], 32
    cu = torch.tensor([0, 70, 103, 231], dtype=torch.int64, device=DEV)
    rows = [-(-n // every) for n in lengths]
    starts = torch.tensor([0, rows[0], rows[0] + rows[1], sum(rows)], dtype=torch.int64, device=DEV)
    H = 2
    x = inputs(1, 231, H, seed=8)
    s0 = state(3, H, torch.float32, seed=9)
    before = s0.clone()
    ckpt = poisoned((sum(rows), H, 128, 128))
    o, s, c = kdajit.recurrent_kda_prefill(*x, cu_seqlens=cu, initial_state=s0, output_final_state=True,
                                           state_checkpoints=ckpt, checkpoint_cu_starts=starts,
                                           checkpoint_every_n_tokens=every)
    torch.cuda.synchronize()
    assert c is ckpt
    ref_o, ref_s, ref_c = kda_reference(*x, cu_seqlens=cu, initial_state=before, checkpoint_every=every)
    check_output(o, ref_o, packed_bounds(cu))
    check_state(s, ref_s)
    expected = torch.stack([row for seq in ref_c for row in seq])
    check_state(c.view(sum(rows), 1, H, 128, 128).flatten(1, 2), expected)


def test_plan_run_matches_the_eager_call_and_replays_in_a_graph():
    B, T, H = 2, 256, 4
    x = inputs(B, T, H, seed=10)
    s0 = state(B, H, torch.bfloat16, seed=11)
    out = torch.empty(B, T, H, 128, dtype=torch.bfloat16, device=DEV)
    p = kdajit.plan(*x, initial_state=s0, output_final_state=True, out=out)
    assert p.schedule and p.target and p.workspace_bytes >= 0
    # eager reference of the same call
    s_eager = s0.clone()
    o_eager, _ = kdajit.recurrent_kda_prefill(*x, initial_state=s_eager, output_final_state=True)
    s_plan = s0.clone()  # another address than the signature's: a plan fixes shapes, not addresses
    o, s = p.run(*x, out=out, initial_state=s_plan)
    torch.cuda.synchronize()
    assert torch.equal(o, o_eager) and torch.equal(s, s_eager)
    # capture with torch's graph API, change the inputs in place, replay
    static = [t.clone() for t in x]
    static_state = s0.clone()
    static_out = torch.empty_like(out)
    p.run(*static, out=static_out, initial_state=static_state)  # warm-up on the side stream torch captures on
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        p.run(*static, out=static_out, initial_state=static_state)
    fresh = inputs(B, T, H, seed=12)
    for dst, src in zip(static, fresh):
        dst.copy_(src)
    fresh_state = state(B, H, torch.bfloat16, seed=13)
    static_state.copy_(fresh_state)
    graph.replay()
    torch.cuda.synchronize()
    ref_o, ref_s, _ = kda_reference(*fresh, initial_state=fresh_state)
    check_output(static_out, ref_o, fixed_bounds(B, T))
    check_state(static_state, ref_s)


def test_native_and_python_plan_runs_agree_bit_for_bit():
    B, T, H = 1, 192, 4
    x = inputs(B, T, H, seed=40)
    cu = torch.tensor([0, 70, 70, 192], dtype=torch.int32, device=DEV)  # a zero-length sequence inside
    s0 = state(3, H, torch.float32, seed=41)
    out = torch.empty(B, T, H, 128, dtype=torch.bfloat16, device=DEV)
    p = kdajit.plan(*x, initial_state=s0, output_final_state=True, out=out, cu_seqlens=cu)
    assert p.native_run, "the installed package lacks kdajit._runner"
    results = []
    for run in (p.run, lambda *a, **kw: kdajit.Plan.run(p, *a, **kw)):
        o = torch.full_like(out, float("nan"))
        s = s0.clone()
        got = run(*x, out=o, initial_state=s, cu_seqlens=cu)
        assert got[0] is o and got[1] is s
        results.append((o, s))
    torch.cuda.synchronize()
    (o1, s1), (o2, s2) = results
    assert torch.equal(o1, o2) and torch.equal(s1, s2)
    ref_o, ref_s, _ = kda_reference(*x, initial_state=s0, cu_seqlens=cu)
    check_output(o1, ref_o, packed_bounds(cu))
    check_state(s1, ref_s)


def test_one_plan_run_from_several_threads_gives_the_sequential_results():
    import threading
    B, T, H = 1, 128, 2
    out0 = torch.empty(B, T, H, 128, dtype=torch.bfloat16, device=DEV)
    p = kdajit.plan(*inputs(B, T, H, seed=50), out=out0)
    calls = [inputs(B, T, H, seed=51 + i) for i in range(8)]
    expected = []
    for x in calls:
        expected.append(torch.empty_like(out0))
        p.run(*x, out=expected[-1])
    torch.cuda.synchronize()
    runs = 25
    outs = [[torch.full_like(out0, float("nan")) for _ in range(runs)] for _ in range(4)]
    failures = []

    def worker(i):
        try:
            # every run its own output, on the default stream torch uses in every thread
            for r in range(runs):
                p.run(*calls[(i + r) % len(calls)], out=outs[i][r])
        except Exception as e:  # reported below
            failures.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    assert not failures
    for i in range(4):
        for r in range(runs):
            assert torch.equal(outs[i][r], expected[(i + r) % len(calls)]), (i, r)


def test_plan_run_refuses_another_signature():
    x = inputs(1, 64, 2, seed=14)
    out = torch.empty(1, 64, 2, 128, dtype=torch.bfloat16, device=DEV)
    p = kdajit.plan(*x, out=out)
    longer = inputs(1, 128, 2, seed=15)
    with pytest.raises(kdajit.TensorError, match=r"q: bfloat16 \[1, 128, 2, 128\].*differs from the plan's"):
        p.run(*longer, out=torch.empty(1, 128, 2, 128, dtype=torch.bfloat16, device=DEV))
    with pytest.raises(kdajit.TensorError, match="initial_state: given, but the plan's signature has none"):
        p.run(*x, out=out, initial_state=state(1, 2, torch.bfloat16, seed=16))


def test_runs_on_the_current_torch_stream():
    x = inputs(1, 128, 2, seed=17)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        o, _ = kdajit.recurrent_kda_prefill(*x)
    side.synchronize()
    ref_o, _, _ = kda_reference(*x)
    check_output(o, ref_o, fixed_bounds(1, 128))


class DLPackOnly:
    """Hides the torch tensor: kdajit sees only __dlpack__."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_dlpack_inputs():
    x = inputs(1, 96, 2, seed=18)
    out = poisoned((1, 96, 2, 128))
    o, _ = kdajit.recurrent_kda_prefill(*[DLPackOnly(t) for t in x], out=DLPackOnly(out))
    torch.cuda.synchronize()
    assert isinstance(o, DLPackOnly)
    ref_o, _, _ = kda_reference(*x)
    check_output(out, ref_o, fixed_bounds(1, 96))


def test_bad_tensors_raise_value_errors_with_kdajit_messages():
    x = list(inputs(1, 64, 2, seed=19))
    x[0] = x[0].float()
    with pytest.raises(ValueError, match="q"):
        kdajit.recurrent_kda_prefill(*x)
    x = list(inputs(1, 64, 2, seed=19))
    x[1] = x[1].cpu()
    with pytest.raises(kdajit.TensorError, match="k: must be a CUDA tensor"):
        kdajit.recurrent_kda_prefill(*x)


def test_explain_route_and_compile():
    x = inputs(1, 64, 2, seed=20)
    text = kdajit.explain_route(*x)
    schedule, target = kdajit.compile(*x, out=torch.empty(1, 64, 2, 128, dtype=torch.bfloat16, device=DEV))
    assert schedule in text and target.startswith("sm_")


# --- kdajit.compat.chunk_kda, against the reference and against FLA itself

def fla_inputs(B, T, H, seed, cu=None):
    q, k, v, g, beta, A_log, dt_bias = inputs(B, T, H, seed)
    return dict(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias.flatten())


FLA_FLAGS = dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                 safe_gate=True, lower_bound=-5.0)


@pytest.mark.parametrize("state_v_first", [False, True])
def test_compat_chunk_kda_against_the_reference(state_v_first):
    lengths = [100, 28, 200]
    cu = torch.tensor([0, 100, 128, 328], dtype=torch.long, device=DEV)
    H = 2
    a = fla_inputs(1, 328, H, seed=21)
    h0 = state(3, H, torch.float32, seed=22)  # FLA's layout: [N,H,K,V], or [N,H,V,K] with state_v_first
    h0_before = h0.clone()
    with torch.inference_mode():
        o, ht = compat.chunk_kda(**a, initial_state=h0, output_final_state=True, cu_seqlens=cu,
                                 state_v_first=state_v_first, **FLA_FLAGS)
    torch.cuda.synchronize()
    assert torch.equal(h0, h0_before), "FLA leaves the initial state alone"
    assert ht.dtype == torch.float32 and ht.shape == h0.shape
    vk = h0 if state_v_first else h0.transpose(-1, -2)
    ref_o, ref_s, _ = kda_reference(a["q"], a["k"], a["v"], a["g"], a["beta"], a["A_log"], a["dt_bias"],
                                    initial_state=vk, cu_seqlens=cu)
    check_output(o, ref_o, packed_bounds(cu))
    check_state(ht if state_v_first else ht.transpose(-1, -2), ref_s)
    assert sum(lengths) == 328


def test_compat_refuses_backward_and_gva():
    a = fla_inputs(1, 64, 2, seed=23)
    a["q"].requires_grad_(True)
    with pytest.raises(kdajit.UnsupportedError, match="forward only"):
        compat.chunk_kda(**a, **FLA_FLAGS)
    a = fla_inputs(1, 64, 2, seed=24)
    a["v"] = torch.randn(1, 64, 4, 128, device=DEV).to(torch.bfloat16)
    with pytest.raises(kdajit.UnsupportedError, match="grouped value heads"):
        compat.chunk_kda(**a, **FLA_FLAGS)
    with pytest.raises(kdajit.UnsupportedError, match="safe_gate"):
        compat.chunk_kda(**fla_inputs(1, 64, 2, seed=25), use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                         use_beta_sigmoid_in_kernel=True)


# FLA's Triton kernels compile on first use (about a minute per variant on
# the H200): marked `fla`, run by `scripts/gpu-tests.sh --fla`.
@pytest.mark.fla
@pytest.mark.parametrize("packed, state_v_first", [(True, False), (False, True)])
def test_compat_chunk_kda_agrees_with_fla(packed, state_v_first):
    fla_kda = pytest.importorskip("fla.ops.kda")
    H = 4
    if packed:
        cu = torch.tensor([0, 300, 301, 812, 1024], dtype=torch.long, device=DEV)
        B, T, N = 1, 1024, 4
    else:
        cu, B, T, N = None, 2, 512, 2
    a = fla_inputs(B, T, H, seed=26)
    h0 = state(N, H, torch.float32, seed=27)
    with torch.inference_mode():
        o_fla, ht_fla = fla_kda.chunk_kda(**a, initial_state=h0.clone(), output_final_state=True, cu_seqlens=cu,
                                          state_v_first=state_v_first, **FLA_FLAGS)
        o, ht = compat.chunk_kda(**a, initial_state=h0.clone(), output_final_state=True, cu_seqlens=cu,
                                 state_v_first=state_v_first, **FLA_FLAGS)
    torch.cuda.synchronize()
    assert o.shape == o_fla.shape and ht.shape == ht_fla.shape and ht.dtype == ht_fla.dtype
    bounds = packed_bounds(cu) if packed else fixed_bounds(B, T)
    vk = h0 if state_v_first else h0.transpose(-1, -2)
    ref_o, ref_s, _ = kda_reference(a["q"], a["k"], a["v"], a["g"], a["beta"], a["A_log"], a["dt_bias"],
                                    initial_state=vk, cu_seqlens=cu)
    as_vk = (lambda s: s) if state_v_first else (lambda s: s.transpose(-1, -2))
    ours = (check_output(o, ref_o, bounds), check_state(as_vk(ht), ref_s))
    theirs = (check_output(o_fla, ref_o, bounds), check_state(as_vk(ht_fla), ref_s))
    # kdajit against FLA, as a reference: spec section 8's tolerances
    check_output(o, o_fla.double(), bounds)
    check_state(as_vk(ht), as_vk(ht_fla).double())
    print(f"\nrel. RMS vs fp64 (out, state): kdajit {ours[0]:.2e} {ours[1]:.2e}, FLA {theirs[0]:.2e} {theirs[1]:.2e}")


def test_llvm_tier_in_a_process_that_ran_triton():
    """Triton carries its own LLVM; with a Triton kernel compiled and run in
    this process first, the LLVM tier's token kernel (family "token") still
    builds and meets the reference, and the tiered JIT reports its tier."""
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(x_ptr + i, tl.load(x_ptr + i, mask=m) + 1.0, mask=m)

    x = torch.zeros(1000, device=DEV)
    add_one[(4,)](x, 1000, BLOCK=256)
    torch.cuda.synchronize()
    assert bool((x == 1.0).all())

    B, T, H = 1, 200, 2
    q = inputs(B, T, H, seed=31)
    s0 = state(B, H, torch.bfloat16, seed=32)
    before = s0.clone()
    out = poisoned((B, T, H, 128))
    o, s = kdajit.recurrent_kda_prefill(*q, initial_state=s0, output_final_state=True, out=out, family="token")
    torch.cuda.synchronize()
    ref_o, ref_s, _ = kda_reference(*q, initial_state=before)
    check_output(o, ref_o, fixed_bounds(B, T))
    check_state(s, ref_s)
    assert kdajit.last_prefill_tier() == "routed"  # asked for by family: the routed (token) kernel
    add_one[(4,)](x, 1000, BLOCK=256)  # and Triton's LLVM still works
    torch.cuda.synchronize()
    assert bool((x == 2.0).all())
