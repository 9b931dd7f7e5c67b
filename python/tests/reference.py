"""The fp64 token-by-token KDA recurrence (spec section 1) in torch, on the
inputs' device: the gold reference the GPU tests measure against."""
from __future__ import annotations

import math

import torch


def kda_reference(q, k, v, g, beta, A_log, dt_bias, scale=None, lower_bound=-5.0, initial_state=None,
                  cu_seqlens=None, checkpoint_every=None):
    """Returns (out fp64 [B,T,H,128], states fp64 [N,H,V,K], checkpoints list
    per sequence of fp64 [H,V,K] states before each interval)."""
    scale = 1.0 / math.sqrt(128.0) if scale is None else scale
    B, T, H, D = q.shape
    if cu_seqlens is None:
        bounds = [(b, 0, T) for b in range(B)]
    else:
        cu = cu_seqlens.tolist()
        bounds = [(0, cu[i], cu[i + 1]) for i in range(len(cu) - 1)]
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    a_rate = torch.exp(A_log.double()).view(H, 1)
    bias = dt_bias.double().view(H, D)
    states, checkpoints = [], []
    for n, (b, start, end) in enumerate(bounds):
        S = (initial_state[n].double().clone() if initial_state is not None
             else torch.zeros((H, D, D), dtype=torch.float64, device=q.device))
        rows = []
        for t in range(start, end):
            if checkpoint_every and (t - start) % checkpoint_every == 0:
                rows.append(S.clone())
            qt, kt, vt = q[b, t].double(), k[b, t].double(), v[b, t].double()
            qt = qt * torch.rsqrt((qt * qt).sum(-1, keepdim=True) + 1e-6)
            kt = kt * torch.rsqrt((kt * kt).sum(-1, keepdim=True) + 1e-6)
            x = a_rate * (g[b, t].double() + bias)
            alpha = torch.exp(lower_bound * torch.sigmoid(x))          # [H, K]
            bt = torch.sigmoid(beta[b, t].double()).view(H, 1)          # [H, 1]
            S = S * alpha.view(H, 1, D)                                 # column k scaled
            p = torch.einsum("hvk,hk->hv", S, kt)
            u = bt * (vt - p)
            S = S + u.view(H, D, 1) * kt.view(H, 1, D)
            out[b, t] = scale * torch.einsum("hvk,hk->hv", S, qt)
        states.append(S)
        checkpoints.append(rows)
    return out, torch.stack(states), checkpoints


def check_output(out, ref, bounds, short=256):
    """Spec section 8: per (sequence, head) relative RMS <= 1e-2, element-wise
    |x - ref| <= 2e-2 + 2e-2 |ref| on short sequences and every last chunk."""
    assert torch.isfinite(out.float()).all(), "NaN or Inf in the output"
    worst = 0.0
    for b, start, end in bounds:
        if end == start:
            continue
        x, r = out[b, start:end].double(), ref[b, start:end]
        for h in range(out.shape[2]):
            err = (x[:, h] - r[:, h]).norm() / r[:, h].norm().clamp_min(1e-30)
            worst = max(worst, float(err))
        tail = slice(max(0, (end - start) - 16), end - start) if end - start > short else slice(0, end - start)
        bad = (x[tail] - r[tail]).abs() > 2e-2 + 2e-2 * r[tail].abs()
        assert not bad.any(), f"element-wise tolerance exceeded in tokens [{start}, {end})"
    assert worst <= 1e-2, f"output relative RMS {worst:.3e} > 1e-2"
    return worst


def check_state(state, ref):
    assert torch.isfinite(state.float()).all(), "NaN or Inf in the state"
    worst = 0.0
    for n in range(state.shape[0]):
        for h in range(state.shape[1]):
            err = (state[n, h].double() - ref[n, h]).norm() / ref[n, h].norm().clamp_min(1e-30)
            worst = max(worst, float(err))
    assert worst <= 1e-2, f"state relative RMS {worst:.3e} > 1e-2"
    return worst
