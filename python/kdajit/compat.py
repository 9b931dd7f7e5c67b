"""Drop-in forward replacements for peers' KDA entry points.

``chunk_kda`` takes the arguments of FLA's ``fla.ops.kda.chunk_kda`` as
serving engines call it for prefill: gate, L2 norm and beta sigmoid in the
kernel, the safe gate with ``lower_bound``, fp32 states in FLA's layout
(``state_v_first`` False: [N, H, K, V]; True: [N, H, V, K]), the initial
state left unchanged and a new fp32 final state returned, ``cu_seqlens`` for
packed input. What it cannot honour raises UnsupportedError (backward, GVA,
intermediate states, context parallelism, other gates).
"""
from __future__ import annotations

import warnings
from typing import Optional

from ._prefill import recurrent_kda_prefill
from ._tensors import is_torch_tensor, torch_module
from .errors import TensorError, UnsupportedError


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise UnsupportedError("kdajit.compat.chunk_kda: " + message)


def chunk_kda(q, k, v, g, beta, scale: Optional[float] = None, initial_state=None, output_final_state: bool = False,
              use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
              use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False, safe_gate: bool = False,
              lower_bound: Optional[float] = None, disable_recompute: bool = False,
              return_intermediate_states: bool = False, state_v_first: bool = False, cu_seqlens=None,
              cu_seqlens_cpu=None, cp_context=None, **kwargs):
    """FLA ``chunk_kda`` forward on kdajit. Requires use_qk_l2norm_in_kernel,
    use_gate_in_kernel, use_beta_sigmoid_in_kernel and safe_gate with
    lower_bound, and ``A_log`` (``dt_bias`` optional) as keyword arguments.
    Returns ``(o, final_state)``: o bf16 [B, T, H, 128], final_state fp32 in
    the layout state_v_first selects, or None."""
    if "transpose_state_layout" in kwargs:
        if state_v_first:
            raise ValueError("Cannot pass both `state_v_first` and the deprecated `transpose_state_layout`.")
        warnings.warn("`transpose_state_layout` is deprecated and renamed to `state_v_first`.", DeprecationWarning,
                      stacklevel=2)
        state_v_first = kwargs.pop("transpose_state_layout")
    _require(is_torch_tensor(q), "takes torch tensors (as FLA does)")
    torch = torch_module()
    _require(use_qk_l2norm_in_kernel, "needs use_qk_l2norm_in_kernel=True (q and k are normalised in the kernel)")
    _require(use_gate_in_kernel, "needs use_gate_in_kernel=True (the gate is activated in the kernel)")
    _require(use_beta_sigmoid_in_kernel, "needs use_beta_sigmoid_in_kernel=True (beta is a logit)")
    _require(safe_gate and lower_bound is not None,
             "needs safe_gate=True with lower_bound (the gate lower_bound * sigmoid(exp(A_log) * (g + dt_bias)))")
    _require(not allow_neg_eigval, "allow_neg_eigval is not supported")
    _require(not return_intermediate_states, "return_intermediate_states is not supported")
    _require(cp_context is None, "context parallelism (cp_context) is not supported")
    _require("A_log" in kwargs, "needs A_log (use_gate_in_kernel=True)")
    chunk_size = kwargs.pop("chunk_size", 64)
    if chunk_size not in (32, 64):
        raise ValueError(f"`chunk_size` must be either 32 or 64 for KDA, got {chunk_size}.")
    A_log, dt_bias = kwargs.pop("A_log"), kwargs.pop("dt_bias", None)
    if kwargs:
        raise TypeError(f"chunk_kda() got unexpected keyword arguments: {', '.join(sorted(kwargs))}")
    _require(v.dim() == 4 and q.dim() == 4 and v.shape[2] == q.shape[2],
             f"grouped value heads (HV={v.shape[2] if v.dim() == 4 else '?'} != H={q.shape[2]}) are not supported")
    tensors = [q, k, v, g, beta, A_log] + ([dt_bias] if dt_bias is not None else []) + \
        ([initial_state] if initial_state is not None else [])
    _require(not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)),
             "is forward only: no autograd (run under torch.no_grad() or torch.inference_mode())")
    if cu_seqlens is not None and q.shape[0] != 1:
        raise ValueError(f"The batch size is expected to be 1 rather than {q.shape[0]} when using `cu_seqlens`.")
    sequences = (cu_seqlens.shape[0] - 1) if cu_seqlens is not None else q.shape[0]
    heads = q.shape[2]
    if initial_state is not None:
        if initial_state.dtype != torch.float32:
            raise TensorError("initial_state must be in float32.")
        if initial_state.shape[0] != sequences:
            raise ValueError(f"The number of initial states is expected to be equal to the number of input "
                             f"sequences, i.e., {sequences} rather than {initial_state.shape[0]}.")
        # kdajit's state is [N, H, V, K], updated in place: FLA leaves the caller's alone
        state = initial_state.clone() if state_v_first else initial_state.transpose(-1, -2).contiguous()
    elif output_final_state:
        state = torch.zeros((sequences, heads, 128, 128), dtype=torch.float32, device=q.device)
    else:
        state = None
    if dt_bias is None:
        dt_bias = torch.zeros((heads, 128), dtype=torch.float32, device=q.device)
    o, _ = recurrent_kda_prefill(q, k, v, g, beta, A_log, dt_bias, scale=scale, lower_bound=lower_bound,
                                 initial_state=state, cu_seqlens=cu_seqlens)
    if not output_final_state:
        return o, None
    final_state = state if state_v_first else state.transpose(-1, -2).contiguous()
    return o, final_state
