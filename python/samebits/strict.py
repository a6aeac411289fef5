"""Strict execution of model code: every torch call a model's own forward
makes is samebits arithmetic, pure data movement, or an error.

Module replacement (samebits.from_torch_module) only covers layers. A custom
module's forward also calls torch itself (torch.tanh(x), x.mean(1), x @ w,
x + y), and those would run PyTorch's kernels, whose bits depend on the CPU,
the thread count and the PyTorch build. StrictMode is a
torch.overrides.TorchFunctionMode (PyTorch 1.13 and 2.x): while it is active
every torch function and Tensor method call reaches `__torch_function__`
below, which looks the call up in the two tables of this file:

  ROUTED       calls samebits has an op for: they run samebits.nn.functional
               (the C kernels), whose autograd Functions record samebits'
               own backward formulas;
  PASS_THROUGH calls that only move, describe or allocate bits (views,
               indexing, cat, copies, shape queries): PyTorch runs them, and
               their backward is again only data movement;

and anything else raises NotReproducibleError naming the torch op and the
module path it was called from. samebits' own code (samebits.nn modules,
samebits.ops) is trusted: its torch calls are the plumbing around the C
kernels (detach, from_numpy...) and pass.

audit() runs the same lookup in recording mode: nothing is raised, missing
ops run PyTorch's kernels, and the report lists covered, passed-through and
missing ops with their module paths.

Inside `__torch_function__` PyTorch disables this mode, so the samebits and
torch calls made there do not come back here.
"""
import collections
import os
import sys
import threading

import torch
from torch.overrides import TorchFunctionMode

from . import random as _random
from ._convert import samebits_code
from .nn import functional as SF
from .nn import recurrent as _recurrent

__all__ = ["NotReproducibleError", "StrictMode", "audit", "AuditReport", "ROUTED", "PASS_THROUGH",
           "PASS_THROUGH_IF"]


class NotReproducibleError(NotImplementedError):
    """A torch op ran in strict model code that samebits cannot compute with
    fixed bits (the message names the op and the module path)."""


class _Missing(Exception):
    """Raised by a router when this particular call (its arguments) has no
    samebits version; the lookup reports the op as missing."""


# ---- routed calls: name -> router(args, kwargs) -> result -------------------
# A router takes the call's arguments in torch's signature and calls the
# differentiable samebits.nn.functional version.

def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _refuse_kwargs(kwargs, allowed, what):
    for k, v in kwargs.items():
        if k not in allowed and v is not None:
            raise _Missing("%s with %s=%r" % (what, k, v))


def _as_operand(v, like):
    """A Python number operand as a 0-d float32 tensor (rounded to float32
    as a float32 tensor op does; broadcasting then applies it everywhere)."""
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, (bool, int, float)):
        return torch.tensor(float(v), dtype=torch.float32)
    raise _Missing("operand of type %s" % type(v).__name__)


def _binary(op, reverse=False):
    def route(args, kwargs):
        _refuse_kwargs({k: v for k, v in kwargs.items() if not (k == "alpha" and v == 1)},
                       ("input", "other"), op)
        a, b = args[0], _arg(args, kwargs, 1, "other")
        if len(args) > 2 and args[2] != 1:
            raise _Missing("%s with alpha=%r" % (op, args[2]))
        a, b = _as_operand(a, b), _as_operand(b, a)
        if reverse:
            a, b = b, a
        return SF._Binary.apply(a, b, op)
    return route


def _unary(op):
    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input",), op)
        return SF._Unary.apply(_arg(args, kwargs, 0, "input"), op)
    return route


def _activation(fn):
    def route(args, kwargs):
        x = _arg(args, kwargs, 0, "input")
        inplace = _arg(args, kwargs, 1, "inplace", False)
        extra = {k: v for k, v in kwargs.items() if k not in ("input", "inplace")}
        if inplace:  # computed on an exact clone: see _in_place
            return _inplace(x, fn(x.clone(), **extra))
        return fn(x, **extra)
    return route


def _inplace(x, y):
    """The in-place form: samebits computes y, then x takes its bits by an
    exact copy (recorded by autograd as a copy, whose backward is a copy)."""
    if y.shape != x.shape:
        raise _Missing("in-place op whose result shape %s is not the tensor's %s"
                       % (tuple(y.shape), tuple(x.shape)))
    return x.copy_(y)


def _in_place(route):
    """x.op_(...): the samebits op reads a clone of x (an exact copy), so
    what its backward saved is not the tensor the copy then overwrites."""
    def routed(args, kwargs):
        x = args[0]
        return _inplace(x, route((x.clone(),) + tuple(args[1:]), kwargs))
    return routed


def _reduce(is_mean):
    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input", "dim", "keepdim"), "mean" if is_mean else "sum")
        x = _arg(args, kwargs, 0, "input")
        dim = _arg(args, kwargs, 1, "dim")
        keepdim = _arg(args, kwargs, 2, "keepdim", False)
        if isinstance(dim, torch.dtype) or not isinstance(keepdim, bool):
            raise _Missing("a dtype argument")
        return SF._Reduce.apply(x, dim, keepdim, is_mean)
    return route


def _cumulative(fn):
    """torch.cumsum(input, dim, *, dtype=None) / Tensor.cumsum(dim, dtype=None)
    (cumprod alike): the float32 chain of contract section 10; a dtype other
    than None or float32 is missing."""
    name = fn.__name__

    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input", "dim", "dtype"), name)
        x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
        dtype = _arg(args, kwargs, 2, "dtype")
        if dtype is not None and dtype != torch.float32:
            raise _Missing("%s with dtype=%s (float32 only)" % (name, dtype))
        return fn(x, dim)
    return route


def _softmax(log):
    def route(args, kwargs):
        x = _arg(args, kwargs, 0, "input")
        dim = _arg(args, kwargs, 1, "dim")
        if kwargs.get("dtype") is not None or isinstance(_arg(args, kwargs, 2, "_"), torch.dtype):
            raise _Missing("a dtype argument")
        return (SF.log_softmax if log else SF.softmax)(x, dim)
    return route


def _matmul(args, kwargs):
    """2-D @ 2-D, batched 3-D @ 3-D of one batch size, and N-D @ 2-D (the
    leading dims folded into rows by a view). Other shapes are missing."""
    a, b = args[0], _arg(args, kwargs, 1, "other", _arg(args, kwargs, 1, "mat2"))
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise _Missing("matmul of a non-tensor")
    if a.dim() >= 2 and b.dim() == 2:
        rows = a.reshape(-1, a.shape[-1]) if a.dim() > 2 else a
        out = SF.mm(rows, b)
        return out.reshape(tuple(a.shape[:-1]) + (b.shape[-1],)) if a.dim() > 2 else out
    if a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0]:
        return SF.mm(a, b)
    if a.dim() > 3 and b.dim() == a.dim() and a.shape[:-2] == b.shape[:-2]:
        # (..., n, k) @ (..., k, m) with the same leading dims (attention's
        # (B, H, L, E) @ (B, H, E, S)): one batched product over the leading
        # dims folded into a batch, by reshapes (exact copies when strided)
        lead = tuple(a.shape[:-2])
        out = SF.mm(a.reshape((-1,) + tuple(a.shape[-2:])), b.reshape((-1,) + tuple(b.shape[-2:])))
        return out.reshape(lead + tuple(out.shape[-2:]))
    raise _Missing("matmul of shapes %s and %s" % (tuple(a.shape), tuple(b.shape)))


def _addmm(args, kwargs):
    """torch.addmm(input, mat1, mat2, *, beta=1, alpha=1) with beta = alpha
    = 1 (Hugging Face's Conv1D): the product's chains (section 7), then
    input added with one IEEE addition, broadcasting - the bits of linear
    with a bias (y = acc + bias); the gradient of input is add's (a
    canonical sum over the broadcast rows). Other beta or alpha are
    missing."""
    _refuse_kwargs({k: v for k, v in kwargs.items() if not (k in ("beta", "alpha") and v == 1)},
                   ("input", "mat1", "mat2"), "addmm")
    if len(args) > 3:
        raise _Missing("addmm with beta/alpha given by position")
    bias, a, b = (_arg(args, kwargs, i, n) for i, n in enumerate(("input", "mat1", "mat2")))
    if not all(isinstance(t, torch.Tensor) for t in (bias, a, b)) or a.dim() != 2 or b.dim() != 2:
        raise _Missing("addmm of non-2-D matrices")
    return SF._Binary.apply(bias, SF.mm(a, b), "add")


def _dropout(args, kwargs):
    """F.dropout(input, p=0.5, training=True, inplace=False): identity when
    not training or p == 0; in training, samebits' dropout (contract
    section 11) with the mask drawn from the calling module's Philox draw
    state (see _draw_state, as bernoulli_ and attention dropout), advanced
    by the number of elements. nn.Dropout modules convert to
    samebits.nn.Dropout, which keeps its own stream."""
    x = _arg(args, kwargs, 0, "input")
    p = _arg(args, kwargs, 1, "p", 0.5)
    training = _arg(args, kwargs, 2, "training", True)
    if not training or p == 0:
        return x
    if _arg(args, kwargs, 3, "inplace", False):
        raise _Missing("dropout with inplace=True called as a function")
    seed, stream, offset = _dropout_key(float(p), x.numel())
    return SF.dropout(x, float(p), True, seed, stream, offset)


class _Expand(torch.autograd.Function):
    """A broadcast view whose backward sums the broadcast dims with samebits'
    canonical sum (PyTorch's expand backward is an aten::sum)."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = tuple(x.shape)
        return x.expand(shape)

    @staticmethod
    def backward(ctx, dy):
        lead = dy.dim() - len(ctx.in_shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(ctx.in_shape)
                                          if s == 1 and dy.shape[lead + i] != 1)
        if not dims:
            return dy, None
        return SF._Reduce.apply(dy.contiguous(), dims, True, False).reshape(ctx.in_shape), None


def _expand(args, kwargs):
    x = args[0]
    rest = args[1:] or (kwargs.get("size"),)
    shape = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list, torch.Size)) else rest
    shape = tuple(x.shape[i - (len(shape) - x.dim())] if s == -1 else s
                  for i, s in enumerate(shape))
    return _Expand.apply(x, shape)


def _expand_as(args, kwargs):
    return _Expand.apply(args[0], tuple(_arg(args, kwargs, 1, "other").shape))


def _hardtanh(args, kwargs):
    """F.hardtanh(input, min_val=-1., max_val=1., inplace=False)."""
    _refuse_kwargs(kwargs, ("input", "min_val", "max_val", "inplace"), "hardtanh")
    x = _arg(args, kwargs, 0, "input")
    lo, hi = _arg(args, kwargs, 1, "min_val", -1.0), _arg(args, kwargs, 2, "max_val", 1.0)
    if _arg(args, kwargs, 3, "inplace", False):
        return _inplace(x, SF.hardtanh(x.clone(), lo, hi))
    return SF.hardtanh(x, lo, hi)


def _leaky_relu(args, kwargs):
    """F.leaky_relu(input, negative_slope=0.01, inplace=False)."""
    _refuse_kwargs(kwargs, ("input", "negative_slope", "inplace"), "leaky_relu")
    x = _arg(args, kwargs, 0, "input")
    slope = _arg(args, kwargs, 1, "negative_slope", 0.01)
    if _arg(args, kwargs, 2, "inplace", False):
        return _inplace(x, SF.leaky_relu(x.clone(), slope))
    return SF.leaky_relu(x, slope)


_SITE = threading.local()  # (caller frame, StrictMode) of the call being routed


def _draw_state():
    """The Bernoulli draw counter of the innermost model module on the
    stack: (seed, stream, offset) kept on the module itself, made at its
    first draw from samebits' seed and the module's path."""
    frame, mode = _SITE.value
    paths = mode.paths
    while frame is not None:
        m = frame.f_locals.get("self")
        if id(m) in paths:
            state = getattr(m, "_samebits_draws", None)
            if state is None:
                state = [_random.initial_seed(), _random.bernoulli_stream(paths[id(m)]), 0]
                m._samebits_draws = state
            return state
        frame = frame.f_back
    raise _Missing("a random draw outside the model's modules has no Philox stream")


def _bernoulli(in_place):
    """t.bernoulli_(p) / t.bernoulli(p) / torch.bernoulli(t, p) with a float
    p: samebits' Philox draw keyed by the calling module (see _draw_state);
    probabilities given as a tensor, or a torch Generator, are missing."""
    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input", "p"), "bernoulli")
        x = _arg(args, kwargs, 0, "input")
        p = _arg(args, kwargs, 1, "p", None if not in_place else 0.5)
        if not isinstance(p, (int, float)) or isinstance(p, bool):
            raise _Missing("bernoulli with per-element probabilities (a tensor p or input)")
        state = _draw_state()
        mask = torch.from_numpy(_random.bernoulli(tuple(x.shape), p, *state))
        state[2] += mask.numel()
        if in_place:
            with torch.no_grad():
                return x.copy_(mask)
        return mask
    return route


def _dropout_key(p, numel):
    """(seed, stream, offset) of a dropout of `numel` elements (attention
    probabilities, a functional dropout): the calling module's Philox draw
    state (see _draw_state), advanced by numel; (0, 0, 0) when nothing is
    drawn."""
    if not p:
        return 0, 0, 0
    state = _draw_state()
    key = (state[0], state[1], state[2])
    state[2] += numel
    return key


def _sdpa(args, kwargs):
    """F.scaled_dot_product_attention(query, key, value, attn_mask=None,
    dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)."""
    if kwargs.get("enable_gqa"):
        raise NotImplementedError("samebits strict mode: scaled_dot_product_attention with "
                                  "enable_gqa=True is not supported (query and key/value must "
                                  "have the same number of heads)")
    kwargs = {k: v for k, v in kwargs.items() if k != "enable_gqa"}
    unknown = sorted(set(kwargs) - {"query", "key", "value", "attn_mask", "dropout_p",
                                    "is_causal", "scale"})
    if unknown:
        raise NotImplementedError("samebits strict mode: scaled_dot_product_attention with "
                                  "unknown argument(s) %s" % ", ".join(unknown))
    q, k, v = (_arg(args, kwargs, i, n) for i, n in enumerate(("query", "key", "value")))
    mask = _arg(args, kwargs, 3, "attn_mask")
    p = float(_arg(args, kwargs, 4, "dropout_p", 0.0))
    causal = bool(_arg(args, kwargs, 5, "is_causal", False))
    scale = _arg(args, kwargs, 6, "scale")
    if causal and mask is not None:
        raise _Missing("attn_mask together with is_causal=True (PyTorch refuses it too)")
    seed, stream, offset = _dropout_key(p, q.numel() // max(q.shape[-1], 1) * k.shape[-2])
    return SF.scaled_dot_product_attention(q, k, v, mask, p, causal, scale, seed, stream, offset)


_MHA_ARGS = ("query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
             "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p", "out_proj_weight",
             "out_proj_bias", "training", "key_padding_mask", "need_weights", "attn_mask",
             "use_separate_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
             "static_k", "static_v", "average_attn_weights", "is_causal")


def _mha_mask(attn_mask, key_padding_mask, n, h, l, s):
    """The two masks of multi_head_attention_forward (bool: True = masked
    out; float: added) as one mask for SDPA, broadcastable to (N, H, L, S):
    both boolean -> boolean (True = take part); else float, a boolean one
    becoming -inf where masked and the two added by samebits' add. Masks are
    constants: combined without autograd."""
    import numpy as np
    from . import ops as _ops
    parts = []
    if attn_mask is not None:
        m = attn_mask.detach()
        parts.append(m.reshape(1, 1, l, s) if m.dim() == 2 else m.reshape(n, h, l, s))
    if key_padding_mask is not None:
        parts.append(key_padding_mask.detach().reshape(n, 1, 1, s))
    if not parts:
        return None
    if all(m.dtype == torch.bool for m in parts):
        keep = np.logical_not(parts[0].numpy())
        for m in parts[1:]:
            keep = np.logical_and(keep, np.logical_not(m.numpy()))
        return torch.from_numpy(np.ascontiguousarray(keep))
    floats = []
    for m in parts:
        if m.dtype == torch.bool:
            f = np.zeros(tuple(m.shape), dtype=np.float32)
            f[m.numpy()] = -np.inf
        elif m.dtype == torch.float32:
            f = np.ascontiguousarray(m.numpy())
        else:
            raise _Missing("an attention mask of dtype %s" % m.dtype)
        floats.append(f)
    out = floats[0]
    for f in floats[1:]:
        out = _ops.add(out, f)
    return torch.from_numpy(np.ascontiguousarray(out))


def _mha_forward(args, kwargs):
    """F.multi_head_attention_forward (nn.MultiheadAttention's forward):
    the in-projections (samebits linear), heads split by views, samebits
    SDPA (its probabilities are the returned weights: after dropout, as
    PyTorch returns them, averaged over heads with samebits' mean), the
    out-projection. Refused: add_bias_kv, add_zero_attn, static_k/v."""
    a = dict(zip(_MHA_ARGS, args))
    a.update(kwargs)
    unknown = sorted(set(a) - set(_MHA_ARGS))
    if unknown:
        raise _Missing("multi_head_attention_forward with %s" % ", ".join(unknown))
    if a.get("bias_k") is not None or a.get("bias_v") is not None:
        raise _Missing("MultiheadAttention with add_bias_kv=True")
    if a.get("add_zero_attn"):
        raise _Missing("MultiheadAttention with add_zero_attn=True")
    if a.get("static_k") is not None or a.get("static_v") is not None:
        raise _Missing("multi_head_attention_forward with static_k/static_v")
    query, key, value = a["query"], a["key"], a["value"]
    batched = query.dim() == 3
    kpm = a.get("key_padding_mask")
    attn_mask = a.get("attn_mask")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if kpm is not None:
            kpm = kpm.unsqueeze(0)
        if attn_mask is not None and attn_mask.dim() == 3:
            pass
    l, n, e = query.shape
    s = key.shape[0]
    h = a["num_heads"]
    hd = e // h
    if a.get("use_separate_proj_weight"):
        wq, wk, wv = a["q_proj_weight"], a["k_proj_weight"], a["v_proj_weight"]
    else:
        wq, wk, wv = a["in_proj_weight"].chunk(3)
    b = a.get("in_proj_bias")
    bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
    q = SF.linear(query, wq, bq)
    k = SF.linear(key, wk, bk)
    v = SF.linear(value, wv, bv)
    # (L, N, E) -> (N, H, L, hd): views and one copy
    q = q.reshape(l, n, h, hd).permute(1, 2, 0, 3).contiguous()
    k = k.reshape(s, n, h, hd).permute(1, 2, 0, 3).contiguous()
    v = v.reshape(s, n, h, hd).permute(1, 2, 0, 3).contiguous()
    causal = bool(a.get("is_causal", False)) and attn_mask is None
    mask = _mha_mask(attn_mask, kpm, n, h, l, s)
    p = float(a.get("dropout_p", 0.0)) if a.get("training", True) else 0.0
    seed, stream, offset = _dropout_key(p, n * h * l * s)
    out, probs = SF.scaled_dot_product_attention(q, k, v, mask, p, causal, None, seed, stream,
                                                 offset, need_probs=True)
    out = out.permute(2, 0, 1, 3).reshape(l * n, e)
    out = SF.linear(out, a["out_proj_weight"], a.get("out_proj_bias")).reshape(l, n, e)
    weights = None
    if a.get("need_weights", True):
        from . import ops as _ops
        w = probs
        if p:
            w = torch.from_numpy(_ops.dropout(probs.numpy(), p, True, seed, stream, offset)[0])
        if a.get("average_attn_weights", True):
            w = torch.from_numpy(_ops.mean(w.numpy(), 1))
        weights = w if batched else w.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights


def _adaptive_max_with_indices(args, kwargs):
    """F.adaptive_max_pool2d_with_indices always returns (y, indices)."""
    _refuse_kwargs(kwargs, ("input", "output_size", "return_indices"),
                   "adaptive_max_pool2d_with_indices")
    return SF.adaptive_max_pool2d(_arg(args, kwargs, 0, "input"),
                                  _arg(args, kwargs, 1, "output_size"), True)


def _int_index(v, what):
    if not isinstance(v, torch.Tensor) or v.dtype not in (torch.int64, torch.int32):
        raise _Missing("%s with a %s index" % (what, type(v).__name__ if not isinstance(
            v, torch.Tensor) else v.dtype))
    return v


def _gather(args, kwargs):
    """torch.gather(input, dim, index, *, sparse_grad=False)."""
    _refuse_kwargs({k: v for k, v in kwargs.items() if not (k == "sparse_grad" and not v)},
                   ("input", "dim", "index"), "gather")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    return SF.gather(x, dim, _int_index(_arg(args, kwargs, 2, "index"), "gather"))


def _index_select(args, kwargs):
    _refuse_kwargs(kwargs, ("input", "dim", "index"), "index_select")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    return SF.index_select(x, dim, _int_index(_arg(args, kwargs, 2, "index"), "index_select"))


def _scatter_add(args, kwargs):
    """torch.scatter_add(input, dim, index, src) / Tensor.scatter_add."""
    _refuse_kwargs(kwargs, ("input", "dim", "index", "src"), "scatter_add")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    index = _int_index(_arg(args, kwargs, 2, "index"), "scatter_add")
    src = _arg(args, kwargs, 3, "src")
    if not isinstance(src, torch.Tensor):
        raise _Missing("scatter_add with a scalar src")
    return SF.scatter_add(x, dim, index, src)


def _scatter_reduce(args, kwargs):
    """torch.scatter_reduce(input, dim, index, src, reduce, *,
    include_self=True) / Tensor.scatter_reduce(_)."""
    _refuse_kwargs(kwargs, ("input", "dim", "index", "src", "reduce", "include_self"),
                   "scatter_reduce")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    index = _int_index(_arg(args, kwargs, 2, "index"), "scatter_reduce")
    src = _arg(args, kwargs, 3, "src")
    reduce = _arg(args, kwargs, 4, "reduce")
    if not isinstance(src, torch.Tensor):
        raise _Missing("scatter_reduce with a scalar src")
    return SF.scatter_reduce(x, dim, index, src, reduce, _arg(args, kwargs, 5, "include_self", True))


def _index_add(args, kwargs):
    """Tensor.index_add(dim, index, source, *, alpha=1)."""
    _refuse_kwargs(kwargs, ("input", "dim", "index", "source", "alpha"), "index_add")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    index = _int_index(_arg(args, kwargs, 2, "index"), "index_add")
    source = _arg(args, kwargs, 3, "source")
    alpha = _arg(args, kwargs, 4, "alpha", 1)
    if not isinstance(source, torch.Tensor):
        raise _Missing("index_add with a scalar source")
    return SF.index_add(x, dim, index, source, alpha)


def _flat_index(idx, size):
    """An integer index tensor, flattened, with PyTorch's advanced-indexing
    wrap of negative values (i + size for -size <= i < 0); out-of-range
    values stay and are refused by the C range check."""
    flat = idx.detach().reshape(-1).numpy().astype("int64")
    flat = flat + (flat < 0) * size
    return torch.from_numpy(flat)


def _index_put(args, kwargs):
    """x.index_put_((idx,), values, accumulate=True) with one integer index
    tensor over dim 0: index_add along dim 0, i ascending (the values
    broadcast to idx.shape + x.shape[1:] first, whose backward sums with the
    canonical sum)."""
    _refuse_kwargs(kwargs, ("input", "indices", "values", "accumulate"), "index_put")
    x, indices = args[0], _arg(args, kwargs, 1, "indices")
    values = _arg(args, kwargs, 2, "values")
    if not _arg(args, kwargs, 3, "accumulate", False):
        raise _Missing("index_put without accumulate=True (duplicate indices would race)")
    if not isinstance(indices, (tuple, list)) or len(indices) != 1:
        raise _Missing("index_put with %s index tensors (only one, over dim 0, is supported)"
                       % (len(indices) if isinstance(indices, (tuple, list)) else "non-tuple"))
    idx = _int_index(indices[0], "index_put")
    if x.dim() == 0 or not isinstance(values, torch.Tensor):
        raise _Missing("index_put on a 0-dim tensor or with scalar values")
    shape = tuple(idx.shape) + tuple(x.shape[1:])
    if tuple(values.shape) != shape:
        values = _Expand.apply(values, shape)
    flat = values.reshape((-1,) + tuple(x.shape[1:]))
    return SF.index_add(x, 0, _flat_index(idx, x.shape[0]), flat, 1)


def _getitem(args, kwargs):
    """x[idx] with one integer index tensor, under autograd: index_select
    over dim 0 (negative indices wrapped as PyTorch wraps them), whose
    backward is the scatter-add in ascending position. Other index forms
    are missing."""
    x, idx = args[0], args[1] if len(args) > 1 else None
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    if not isinstance(idx, torch.Tensor) or idx.dtype not in (torch.int64, torch.int32) \
            or x.dim() == 0:
        raise _Missing("advanced indexing other than x[integer tensor] under autograd (its "
                       "backward is PyTorch's index_put with accumulate)")
    out = SF.index_select(x, 0, _flat_index(idx, x.shape[0]))
    return out.reshape(tuple(idx.shape) + tuple(x.shape[1:]))


def _repeat_interleave(args, kwargs):
    """repeat_interleave(input, repeats, dim=None): an index_select with the
    repeated positions (integer work, in numpy), so the backward is the
    index_add of the copies in ascending position."""
    _refuse_kwargs({k: v for k, v in kwargs.items() if k != "output_size"},
                   ("input", "repeats", "dim"), "repeat_interleave")
    x, repeats = args[0], _arg(args, kwargs, 1, "repeats")
    dim = _arg(args, kwargs, 2, "dim")
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise _Missing("repeat_interleave of a non-float tensor")
    if dim is None:
        x, dim = x.reshape(-1), 0
    n = x.shape[dim] if x.dim() else 1
    if isinstance(repeats, torch.Tensor):
        if repeats.is_floating_point():
            raise _Missing("repeat_interleave with float repeats")
        repeats = repeats.detach().numpy()
    import numpy as np
    reps = np.broadcast_to(np.asarray(repeats, dtype=np.int64), (n,)) \
        if np.ndim(repeats) == 0 else np.asarray(repeats, dtype=np.int64)
    if reps.shape != (n,) or (reps < 0).any():
        raise _Missing("repeat_interleave with repeats of shape %s for size %d (or negative)"
                       % (reps.shape, n))
    index = torch.from_numpy(np.repeat(np.arange(n, dtype=np.int64), reps))
    return SF.index_select(x, dim, index)


def _bincount(args, kwargs):
    """torch.bincount(input, weights=None, minlength=0) with float32
    weights (without weights the call is integer work and passes)."""
    _refuse_kwargs(kwargs, ("input", "weights", "minlength"), "bincount")
    return SF.bincount(_arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weights"),
                       _arg(args, kwargs, 2, "minlength", 0))


def _histc(args, kwargs):
    """torch.histc(input, bins=100, min=0, max=0)."""
    _refuse_kwargs(kwargs, ("input", "bins", "min", "max"), "histc")
    return SF.histc(_arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "bins", 100),
                    _arg(args, kwargs, 2, "min", 0), _arg(args, kwargs, 3, "max", 0))


def _integer_sort(x, dim, descending):
    """(values, indices) of an integer (or bool) tensor in the contract's
    order (section 18): by value, ties in ascending position in both
    directions. Integer work, no rounding: numpy's stable sort of the
    values (descending: of ~v, which reverses the order of int64 without
    overflow), so unlike PyTorch's unstable sort the order of equal values
    - the lengths of pack_padded_sequence(enforce_sorted=False), which fix
    the row order of a packed batch and so the order of its gradient sums -
    does not depend on the machine."""
    import numpy as np
    a = x.detach().numpy()
    if a.ndim == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64)
    keys = a.astype(np.int64)
    if descending:
        keys = np.invert(keys)
    order = np.argsort(keys, axis=dim, kind="stable")
    values = np.take_along_axis(a, order, axis=dim)
    return torch.from_numpy(np.ascontiguousarray(values)), torch.from_numpy(order.astype(np.int64))


def _integer(x):
    return isinstance(x, torch.Tensor) and not x.is_floating_point() and not x.is_complex()


def _sort(args, kwargs):
    """torch.sort(input, dim=-1, descending=False, stable=False) and
    Tensor.sort: the contract's stable order whatever `stable` says
    (integer tensors too, see _integer_sort)."""
    _refuse_kwargs(kwargs, ("input", "dim", "descending", "stable"), "sort")
    x = _arg(args, kwargs, 0, "input")
    dim, descending = _arg(args, kwargs, 1, "dim", -1), _arg(args, kwargs, 2, "descending", False)
    if _integer(x):
        return torch.return_types.sort(_integer_sort(x, dim, descending))
    return torch.return_types.sort(SF.sort(x, dim, descending))


def _argsort(args, kwargs):
    _refuse_kwargs(kwargs, ("input", "dim", "descending", "stable"), "argsort")
    x = _arg(args, kwargs, 0, "input")
    dim, descending = _arg(args, kwargs, 1, "dim", -1), _arg(args, kwargs, 2, "descending", False)
    if _integer(x):
        return _integer_sort(x, dim, descending)[1]
    return SF.argsort(x, dim, descending)


def _msort(args, kwargs):
    _refuse_kwargs(kwargs, ("input",), "msort")
    return SF.msort(_arg(args, kwargs, 0, "input"))


def _topk(args, kwargs):
    """torch.topk(input, k, dim=-1, largest=True, sorted=True)."""
    _refuse_kwargs(kwargs, ("input", "k", "dim", "largest", "sorted"), "topk")
    x, k = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "k")
    out = SF.topk(x, k, _arg(args, kwargs, 2, "dim", -1), _arg(args, kwargs, 3, "largest", True))
    return torch.return_types.topk(out)


def _kthvalue(args, kwargs):
    """torch.kthvalue(input, k, dim=-1, keepdim=False)."""
    _refuse_kwargs(kwargs, ("input", "k", "dim", "keepdim"), "kthvalue")
    x, k = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "k")
    out = SF.kthvalue(x, k, _arg(args, kwargs, 2, "dim", -1),
                      _arg(args, kwargs, 3, "keepdim", False))
    return torch.return_types.kthvalue(out)


def _median(args, kwargs):
    """torch.median(input) (one value) / torch.median(input, dim,
    keepdim=False) (values, indices)."""
    _refuse_kwargs(kwargs, ("input", "dim", "keepdim"), "median")
    x, dim = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "dim")
    if dim is None:
        return SF.median(x)
    return torch.return_types.median(SF.median(x, dim, _arg(args, kwargs, 2, "keepdim", False)))


def _alpha_activation(fn, in_place):
    """F.elu / F.celu (input, alpha=1.0, inplace=False) and their in-place
    forms elu_ / celu_ (input, alpha=1.0)."""
    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input", "alpha", "inplace"), fn.__name__)
        x = _arg(args, kwargs, 0, "input")
        alpha = _arg(args, kwargs, 1, "alpha", 1.0)
        if in_place or _arg(args, kwargs, 2, "inplace", False):
            return _inplace(x, fn(x.clone(), alpha))
        return fn(x, alpha)
    return route


def _threshold(in_place):
    """F.threshold(input, threshold, value, inplace=False) and threshold_."""
    def route(args, kwargs):
        _refuse_kwargs(kwargs, ("input", "threshold", "value", "inplace"), "threshold")
        x = _arg(args, kwargs, 0, "input")
        t, v = _arg(args, kwargs, 1, "threshold"), _arg(args, kwargs, 2, "value")
        if in_place or _arg(args, kwargs, 3, "inplace", False):
            return _inplace(x, SF.threshold(x.clone(), t, v))
        return SF.threshold(x, t, v)
    return route


_POW_EXACT = "1 (copy), 2 (x * x), 3 ((x * x) * x), 0.5 (sqrt), -0.5 (rsqrt), -1 (1 / x), " \
             "-2 (1 / (x * x))"


def _pow(args, kwargs):
    """Tensor.pow / torch.pow / ** (and a number base: torch.pow(2, t),
    2 ** t). A number exponent that PyTorch's CPU kernel evaluates without
    std::pow runs the same sequence of samebits ops (so the bits match
    PyTorch's); every other exponent, a tensor exponent included, is the
    correctly rounded sb_powf, elementwise with broadcasting, the exponent
    rounded to float32 first as PyTorch does."""
    _refuse_kwargs(kwargs, ("input", "exponent", "self"), "pow")
    x = _arg(args, kwargs, 0, "input") if "self" not in kwargs else kwargs["self"]
    e = _arg(args, kwargs, 1, "exponent")
    if not isinstance(x, torch.Tensor):          # a number base
        return SF._Binary.apply(_as_operand(x, e), e, "pow")
    if isinstance(e, (int, float)) and not isinstance(e, bool):
        exact = _pow_exact(x, float(e))
        if exact is not None:
            return exact
    return SF._Binary.apply(x, _as_operand(e, x), "pow")


def _pow_exact(x, e):
    if e == 1.0:
        return x.clone()
    if e == 2.0:
        return SF._Unary.apply(x, "square")
    if e == 3.0:
        return SF._Binary.apply(SF._Unary.apply(x, "square"), x, "mul")
    if e == 0.5:
        return SF._Unary.apply(x, "sqrt")
    if e == -0.5:
        return SF._Unary.apply(x, "rsqrt")
    if e == -1.0:
        return SF._Unary.apply(x, "reciprocal")
    if e == -2.0:
        return SF._Unary.apply(SF._Unary.apply(x, "square"), "reciprocal")
    return None


def _rpow(args, kwargs):
    """number ** tensor (Tensor.__rpow__(self, other) = other ** self)."""
    _refuse_kwargs(kwargs, ("input", "other"), "rpow")
    t, base = args[0], _arg(args, kwargs, 1, "other")
    return SF._Binary.apply(_as_operand(base, t), t, "pow")


def _call(fn):
    def route(args, kwargs):
        return fn(*args, **kwargs)
    return route


# name -> (router, reason). Names are torch's, for torch.X, Tensor.X and
# torch.nn.functional.X alike (dunders mapped by _name).
ROUTED = {
    # arithmetic with broadcasting: sb_binary, backward sb_binary_backward
    "add": (_binary("add"), "elementwise add, broadcasting"),
    "sub": (_binary("sub"), "elementwise subtract, broadcasting"),
    "rsub": (_binary("sub", reverse=True), "scalar - tensor"),
    "mul": (_binary("mul"), "elementwise multiply, broadcasting"),
    "div": (_binary("div"), "elementwise IEEE division, broadcasting"),
    "true_divide": (_binary("div"), "elementwise IEEE division, broadcasting"),
    "rdiv": (_binary("div", reverse=True), "scalar / tensor"),
    "add_": (_in_place(_binary("add")), "in-place add: samebits result copied in"),
    "sub_": (_in_place(_binary("sub")), "in-place subtract"),
    "mul_": (_in_place(_binary("mul")), "in-place multiply"),
    "div_": (_in_place(_binary("div")), "in-place division"),
    # elementwise maps: sb_unary / the activation kernels
    "neg": (_unary("neg"), "negation"),
    "abs": (_unary("abs"), "absolute value"),
    "sqrt": (_unary("sqrt"), "correctly rounded square root"),
    "exp": (_unary("exp"), "sb_expf"),
    "log": (_unary("log"), "sb_logf"),
    "square": (_unary("square"), "x * x"),
    "reciprocal": (_unary("reciprocal"), "1 / x"),
    "sin": (_unary("sin"), "correctly rounded sine"),
    "cos": (_unary("cos"), "correctly rounded cosine"),
    "exp2": (_unary("exp2"), "correctly rounded 2^x"),
    "log2": (_unary("log2"), "correctly rounded base-2 log"),
    "rsqrt": (_unary("rsqrt"), "1 / sqrt(x), two roundings as PyTorch's CPU kernel"),
    "sin_": (_in_place(_unary("sin")), "in-place sin"),
    "cos_": (_in_place(_unary("cos")), "in-place cos"),
    "exp2_": (_in_place(_unary("exp2")), "in-place exp2"),
    "log2_": (_in_place(_unary("log2")), "in-place log2"),
    "rsqrt_": (_in_place(_unary("rsqrt")), "in-place rsqrt"),
    "pow": (_pow, "sb_powf elementwise (correctly rounded), or for the exponents PyTorch "
                  "evaluates without std::pow the same samebits ops: " + _POW_EXACT),
    "pow_": (_in_place(_pow), "in-place pow, exponents as pow"),
    "rpow": (_rpow, "number ** tensor: sb_powf"),
    "relu": (_activation(SF.relu), "max(x, +0)"),
    "relu_": (_in_place(_activation(SF.relu)), "in-place relu"),
    "tanh": (_activation(SF.tanh), "sb_tanhf"),
    "tanh_": (_in_place(_activation(SF.tanh)), "in-place tanh"),
    "sigmoid": (_activation(SF.sigmoid), "logistic"),
    "sigmoid_": (_in_place(_activation(SF.sigmoid)), "in-place sigmoid"),
    "gelu": (_activation(SF.gelu), "GELU, erf or tanh form"),
    "relu6": (_activation(SF.relu6), "hardtanh(x, 0, 6)"),
    "hardtanh": (_hardtanh, "clamp to [min_val, max_val]"),
    "hardtanh_": (_in_place(_hardtanh), "in-place hardtanh"),
    "hardsigmoid": (_activation(SF.hardsigmoid), "piecewise-linear sigmoid"),
    "hardswish": (_activation(SF.hardswish), "x * hardsigmoid(x)"),
    "silu": (_activation(SF.silu), "x / (1 + exp(-x))"),
    "silu_": (_in_place(_activation(SF.silu)), "in-place silu"),
    "leaky_relu": (_leaky_relu, "x > 0 ? x : x * negative_slope"),
    "leaky_relu_": (_in_place(_leaky_relu), "in-place leaky relu"),
    "softplus": (_call(SF.softplus), "log1p(exp(beta x)) / beta, identity above threshold"),
    "elu": (_alpha_activation(SF.elu, False), "expm1 below 0, alpha-scaled"),
    "elu_": (_alpha_activation(SF.elu, True), "in-place elu"),
    "selu": (_activation(SF.selu), "elu with SELU's alpha and scale"),
    "selu_": (_in_place(_activation(SF.selu)), "in-place selu"),
    "celu": (_alpha_activation(SF.celu, False), "elu with (alpha, 1, 1 / alpha)"),
    "celu_": (_alpha_activation(SF.celu, True), "in-place celu"),
    "mish": (_activation(SF.mish), "x * tanh(log1p(exp(x)))"),
    "logsigmoid": (_call(SF.logsigmoid), "min(x, 0) - log1p(exp(-|x|))"),
    "log_sigmoid": (_call(SF.logsigmoid), "min(x, 0) - log1p(exp(-|x|))"),
    "hardshrink": (_call(SF.hardshrink), "+0 inside [-lambd, lambd]"),
    "softshrink": (_call(SF.softshrink), "shrink towards 0 by lambd"),
    "threshold": (_threshold(False), "value where x <= threshold"),
    "prelu": (_call(SF.prelu), "x > 0 ? x : weight_c * x, weight gradient by canonical sums"),
    "_threshold": (_threshold(False), "value where x <= threshold (F.threshold's name)"),
    "threshold_": (_threshold(True), "in-place threshold"),
    "softsign": (_call(SF.softsign), "x / (|x| + 1): abs, add, div"),
    "tanhshrink": (_call(SF.tanhshrink), "x - tanh(x)"),
    "softmax": (_softmax(False), "softmax over one dim"),
    "log_softmax": (_softmax(True), "log-softmax over one dim"),
    # reductions: the canonical sum
    "sum": (_reduce(False), "canonical sum over dims"),
    "mean": (_reduce(True), "canonical sum over dims, one division"),
    # running sums and products: one float32 chain per column, index ascending
    "cumsum": (_cumulative(SF.cumsum), "float32 running sum along dim"),
    "cumsum_": (_in_place(_cumulative(SF.cumsum)), "in-place cumsum"),
    "cumprod": (_cumulative(SF.cumprod), "float32 running product along dim"),
    "cumprod_": (_in_place(_cumulative(SF.cumprod)), "in-place cumprod"),
    # products: sb_matmul / sb_linear / sb_conv2d
    "matmul": (_matmul, "2-D, same-batch 3-D, N-D @ 2-D"),
    "mm": (_matmul, "2-D matrix product"),
    "bmm": (_matmul, "batched 3-D matrix product"),
    "linear": (_call(SF.linear), "x @ W^T + b"),
    "conv2d": (_call(SF.conv2d), "2-D convolution, int, 'valid' or 'same' zero padding"),
    "conv1d": (_call(SF.conv1d), "conv2d at height 1, int, 'valid' or 'same' zero padding"),
    "conv_transpose2d": (_call(SF.conv_transpose2d), "conv2d's chains, input and output "
                         "exchanged"),
    "conv_transpose1d": (_call(SF.conv_transpose1d), "conv_transpose2d at height 1"),
    "interpolate": (_call(SF.interpolate), "resampling: nearest, nearest-exact, (bi/tri)linear, "
                                           "bicubic, area; align_corners, scale factors"),
    "grid_sample": (_call(SF.grid_sample), "sampling at a grid: bilinear, nearest; zeros, "
                                           "border, reflection padding"),
    "affine_grid": (_call(SF.affine_grid), "the sampling grid of an affine map (4-D sizes)"),
    "pad": (_call(SF.pad), "padding of the last 1 or 2 dims: constant, reflect, replicate, "
                           "circular"),
    "max_pool2d": (_call(SF.max_pool2d), "max pooling, with dilation"),
    "avg_pool2d": (_call(SF.avg_pool2d), "average pooling, with divisor_override"),
    "adaptive_max_pool2d": (_call(SF.adaptive_max_pool2d), "adaptive max pooling"),
    "adaptive_max_pool2d_with_indices": (_adaptive_max_with_indices,
                                         "adaptive max pooling, with indices"),
    "adaptive_avg_pool2d": (_call(SF.adaptive_avg_pool2d), "adaptive average pooling"),
    # normalisation and losses
    "batch_norm": (_call(SF.batch_norm), "batch norm (F.batch_norm's signature)"),
    "layer_norm": (_call(SF.layer_norm), "layer norm over trailing dims"),
    "rms_norm": (_call(SF.rms_norm), "RMS norm over trailing dims (torch >= 2.4)"),
    "group_norm": (_call(SF.group_norm), "group norm, per-channel affine"),
    "instance_norm": (_call(SF.instance_norm), "group norm with one group per channel; no "
                      "running statistics"),
    "cross_entropy": (_call(SF.cross_entropy), "class-index cross-entropy: class weights, "
                                               "label smoothing, K-dimensional inputs; "
                                               "probability targets by samebits ops"),
    "nll_loss": (_call(SF.nll_loss), "class-index NLL: class weights, K-dimensional inputs"),
    "ctc_loss": (_call(SF.ctc_loss), "CTC: alpha/beta recursions with sb_expf/sb_logf, one item "
                                     "per thread"),
    "mse_loss": (_call(SF.mse_loss), "mean squared error"),
    "l1_loss": (_call(SF.l1_loss), "mean absolute error"),
    "smooth_l1_loss": (_call(SF.smooth_l1_loss), "smooth L1 (beta)"),
    "huber_loss": (_call(SF.huber_loss), "Huber (delta)"),
    "binary_cross_entropy": (_call(SF.binary_cross_entropy), "BCE of probabilities"),
    "binary_cross_entropy_with_logits": (_call(SF.binary_cross_entropy_with_logits),
                                         "BCE of logits (log-sigmoid form)"),
    "kl_div": (_call(SF.kl_div), "KL divergence"),
    "dropout": (_dropout, "identity in eval mode; in training Philox keyed by the calling "
                          "module"),
    "addmm": (_addmm, "mm's chains, then input added once (linear's bias rule)"),
    # attention (contract section 19)
    "scaled_dot_product_attention": (_sdpa, "sb_sdpa: masks, causal, Philox dropout keyed by "
                                            "the calling module"),
    "multi_head_attention_forward": (_mha_forward, "in-projections, samebits SDPA, "
                                                   "out-projection"),
    # the index family: accumulation in ascending source position
    "gather": (_gather, "bits copied; backward scatter-adds in ascending position"),
    "index_select": (_index_select, "bits copied; backward index_add in ascending position"),
    "scatter_add": (_scatter_add, "adds in ascending source position"),
    "scatter_add_": (_in_place(_scatter_add), "in-place scatter_add"),
    "scatter_reduce": (_scatter_reduce, "sum/prod/mean/amax/amin in ascending source position"),
    "scatter_reduce_": (_in_place(_scatter_reduce), "in-place scatter_reduce"),
    "index_add": (_index_add, "adds slices in ascending index position"),
    "index_add_": (_in_place(_index_add), "in-place index_add"),
    "index_put": (_index_put, "accumulate=True with one index tensor: index_add over dim 0"),
    "index_put_": (_in_place(_index_put), "in-place index_put, accumulate=True"),
    "repeat_interleave": (_repeat_interleave, "index_select of the repeated positions"),
    "bincount": (_bincount, "weights added per bin in ascending position"),
    "histc": (_histc, "PyTorch 2.x's float32 bin rule, exact counts"),
    "sort": (_sort, "stable order, -0 == +0, NaN largest; values bit copies"),
    "argsort": (_argsort, "the indices of sort"),
    "msort": (_msort, "sort along dim 0, values"),
    "topk": (_topk, "the first k of sort's order"),
    "kthvalue": (_kthvalue, "rank k - 1 of the ascending order"),
    "median": (_median, "lower middle, or the first NaN; global form's gradient split evenly"),
    "embedding": (_call(SF.embedding), "weight rows; gradient added in ascending position"),
    "embedding_bag": (_call(SF.embedding_bag), "bags reduced in ascending position"),
    # PackedSequence's own moves (pack_padded_sequence, pad_packed_sequence)
    "_pack_padded_sequence": (_call(_recurrent.pack_padded), "rows moved, backward moves them back"),
    "_pad_packed_sequence": (_call(_recurrent.pad_packed), "rows moved, backward gathers them"),
    "__getitem__": (_getitem, "x[integer tensor] under autograd: index_select over dim 0"),
    # random draws: Philox, keyed by the calling module (stochastic depth)
    "bernoulli_": (_bernoulli(True), "Philox draw, float p, keyed by module path"),
    "bernoulli": (_bernoulli(False), "Philox draw, float p, keyed by module path"),
    # broadcast views whose backward is a reduction
    "expand": (_expand, "view; backward sums with the canonical sum"),
    "expand_as": (_expand_as, "view; backward sums with the canonical sum"),
}

# name -> reason class. PyTorch runs these: no float arithmetic happens, and
# the backward autograd records for them is again data movement.
_VIEWS = "view or reshape: same bits, backward is the inverse view"
_INDEX = "basic indexing/slicing: same bits, backward copies into zeros"
_JOIN = "joins or splits: same bits, backward splits or joins (copies)"
_COPY = "exact copy or dtype-preserving conversion"
_QUERY = "reads metadata or values, computes nothing"
_ALLOC = "allocation of constants or filling with one (zeros, ones, empty, fill_)"
_GRAD = "autograd bookkeeping (detach, requires_grad)"
_COMPARE = "comparison or boolean logic: booleans fixed by IEEE 754 for every input (no " \
           "rounding); a boolean result carries no gradient"
PASS_THROUGH = {}
for _names, _reason in (
        (("view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze",
          "unsqueeze", "permute", "transpose", "t", "movedim", "swapaxes", "swapdims",
          "contiguous", "unfold_view"), _VIEWS),
        (("__getitem__", "select", "narrow", "slice"), _INDEX),
        (("cat", "concat", "stack", "split", "chunk", "unbind", "split_with_sizes"), _JOIN),
        (("clone", "copy_", "cpu", "to", "float", "type_as", "type"), _COPY),
        (("size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
          "is_floating_point", "data_ptr", "element_size", "get_device", "__len__",
          "__get__", "__format__", "__repr__", "__bool__", "__iter__", "__hash__",
          "item", "tolist", "numpy", "storage_offset", "has_names", "__int__", "__index__",
          "__float__",
          "__reversed__", "__contains__"), _QUERY),
        (("zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "new_zeros",
          "new_ones", "new_empty", "tensor", "as_tensor", "from_numpy", "fill_", "zero_",
          "masked_fill", "masked_fill_"), _ALLOC),
        (("detach", "detach_", "requires_grad_", "retain_grad", "__set__"), _GRAD),
        (("eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
          "__ge__", "greater", "greater_equal", "less", "less_equal", "not_equal", "isnan",
          "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor",
          "__and__", "__or__", "__xor__", "__invert__", "bitwise_not", "bitwise_and",
          "bitwise_or", "any", "all"), _COMPARE)):
    for _n in _names:
        PASS_THROUGH[_n] = _reason

# pass-through calls that may change the dtype: only dtype-preserving ones pass
_CONVERSIONS = ("to", "float", "type_as", "clone", "copy_", "type")


def _requires_grad(args, kwargs):
    return torch.is_grad_enabled() and any(t.requires_grad for t in _tensors(args, kwargs))


def _no_grad_only(what):
    """Calls whose values are exact but whose backward PyTorch would compute
    with its own kernels: they pass while no operand needs a gradient."""
    def check(args, kwargs):
        if _requires_grad(args, kwargs):
            return "%s of a tensor that needs a gradient (its backward runs PyTorch's kernel)" \
                % what
        return None
    return check


_EXACT_INT = 2 ** 24  # every integer of at most this magnitude is a float32


def _arange_check(args, kwargs):
    """torch.arange(start=0, end, step=1): each value start + i * step is
    exact when the result is an integer dtype, or a float dtype with integer
    start, end and step of magnitude at most 2^24 (all values integers that
    float32 holds). Fractional float ranges round: missing."""
    dtype = kwargs.get("dtype")
    ends = [v for v in args if not isinstance(v, torch.dtype)] + \
        [kwargs[k] for k in ("start", "end", "step") if k in kwargs]
    ints = all(isinstance(v, int) or (isinstance(v, torch.Tensor) and v.numel() == 1 and
                                      not v.is_floating_point()) for v in ends)
    if dtype is not None and not dtype.is_floating_point:
        return None
    if dtype is None and ints:
        return None  # PyTorch makes an int64 range
    if ints and all(abs(int(v)) <= _EXACT_INT for v in ends):
        return None
    return "arange with non-integer bounds or step (its values would be rounded)"


def _scatter_check(args, kwargs):
    """Tensor.scatter_(dim, index, src) / torch.scatter without reduce: each
    written element is a copy, unless two index entries name the same
    element (PyTorch then keeps an unspecified one): passes when the index
    has no duplicates along dim and nothing needs a gradient."""
    import numpy as np
    if kwargs.get("reduce") is not None or len(args) > 4:
        return "scatter with reduce= (use scatter_reduce or scatter_add)"
    if _requires_grad(args, kwargs):
        return "scatter of a tensor that needs a gradient (its backward runs PyTorch's kernel)"
    dim, index = _arg(args, kwargs, 1, "dim"), _arg(args, kwargs, 2, "index")
    if not isinstance(index, torch.Tensor) or not isinstance(dim, int):
        return "scatter without an index tensor"
    if index.dim() == 0 or index.numel() == 0:
        return None
    a = np.moveaxis(index.detach().numpy(), dim, -1)
    rows = np.sort(a.reshape(-1, a.shape[-1]), axis=1)
    if (rows[:, 1:] == rows[:, :-1]).any():
        return "scatter with duplicate indices (which write wins is unspecified)"
    return None


# name -> (check(args, kwargs) -> None to pass, else why it is missing;
# reason). Exact calls that pass only in some forms.
PASS_THROUGH_IF = {}
PASS_THROUGH_IF["where"] = (_no_grad_only("where"), "selection: each element is one operand's "
                            "bits (masks); under autograd its backward is PyTorch's")
PASS_THROUGH_IF["arange"] = (_arange_check, "an integer range, or float integers up to 2^24: "
                                            "exact values")
PASS_THROUGH_IF["scatter"] = (_scatter_check, "copies to distinct positions (an inverse "
                                              "permutation); not under autograd")
PASS_THROUGH_IF["scatter_"] = PASS_THROUGH_IF["scatter"]


def _changes_float_dtype(args, out):
    src = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if src is None or not isinstance(out, torch.Tensor):
        return False
    return out.dtype != src.dtype and (out.dtype.is_floating_point or src.dtype.is_floating_point)


_DUNDERS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_",
    "__sub__": "sub", "__rsub__": "rsub", "__isub__": "sub_",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__rtruediv__": "rdiv", "__itruediv__": "div_", "__div__": "div",
    "__rdiv__": "rdiv", "__idiv__": "div_",
    "__matmul__": "matmul", "__neg__": "neg", "__abs__": "abs",
    "__pow__": "pow", "__ipow__": "pow_", "__rpow__": "rpow",
}


# torch.X functions whose argument order differs from torch.nn.functional.X
# (the ROUTED entry follows F's): looked up under their full name, so missing
_TORCH_ONLY = ("batch_norm", "layer_norm", "group_norm", "instance_norm", "embedding", "embedding_bag")


def _name(func):
    """(table key, the name an error message shows) for a torch callable."""
    n = getattr(func, "__name__", None) or repr(func)
    if n in ("__get__", "__set__"):
        attr = getattr(getattr(func, "__self__", None), "__name__", "?")
        return n, "Tensor.%s (attribute)" % attr
    q = getattr(func, "__qualname__", n)
    owner = q.split(".")[0]
    if owner in ("_TensorBase", "TensorBase", "Tensor"):
        shown = "Tensor." + n
    elif owner in ("_VariableFunctionsClass", "_VariableFunctions"):
        shown = "torch." + n
    else:
        mod = getattr(func, "__module__", None) or "torch"
        shown = "%s.%s" % ("torch.nn.functional" if mod == "torch._C._nn" else mod, n)
    if n == "__rmatmul__":
        return "rmatmul", shown
    if shown == "torch." + n and n in _TORCH_ONLY:
        return shown, shown
    return _DUNDERS.get(n, n), shown


_SAMEBITS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


# The frames through which samebits runs a model (the strict class's
# __call__, audit): skipped like torch's, so that a model whose root is a
# torch.nn module (MultiheadAttention) is model code, not samebits' own.
_ENTRY_CODES = set()


def _caller_is_samebits(frame):
    """True when the first frame outside torch's own files (and samebits'
    entry frames) is samebits code."""
    while frame is not None and (frame.f_code.co_filename.startswith(_TORCH_DIR) or
                                 frame.f_code in _ENTRY_CODES):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_SAMEBITS_DIR)


def _module_path(frame, paths):
    """The path of the innermost module of the model whose forward (or
    __call__) is on the stack: the `self` of a frame."""
    while frame is not None:
        path = paths.get(id(frame.f_locals.get("self")))
        if path is not None:
            return path or "<root>"
        frame = frame.f_back
    return "<outside the model>"


def _tensors(args, kwargs):
    def walk(v):
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for e in v:
                yield from walk(e)
    return [t for v in list(args) + list(kwargs.values()) for t in walk(v)]


def _advanced_index(args):
    """x[idx] with tensor or list indices: the backward scatters with
    index_put(accumulate=True), an aten sum of duplicates."""
    idx = args[1] if len(args) > 1 else None
    items = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(i, (torch.Tensor, list)) for i in items)


@samebits_code
def _routed_call(handler, args, kwargs):
    """A ROUTED handler: samebits' version of a torch call."""
    return handler(args, kwargs)


class StrictMode(TorchFunctionMode):
    """While active, torch calls made by model code run samebits (ROUTED),
    pass through (PASS_THROUGH) or raise NotReproducibleError. `model` (a
    torch.nn.Module, optional) names the module paths in messages; with
    record=True nothing raises and every call is tallied in self.report."""

    def __init__(self, model=None, record=False):
        super().__init__()
        self._model = model
        self._paths = None
        self.record = record
        self.report = AuditReport()

    @property
    def paths(self):
        """id(module) -> its path in the model, built when a message or the
        report first needs one (not on every call of the model)."""
        if self._paths is None:
            m = self._model
            self._paths = {id(s): p for p, s in m.named_modules()} if m is not None else {}
        return self._paths

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        caller = sys._getframe(1)
        if _caller_is_samebits(caller):
            return func(*args, **kwargs)
        key, shown = _name(func)
        if key in PASS_THROUGH and not (key == "__getitem__" and _advanced_index(args) and
                                        torch.is_grad_enabled() and
                                        getattr(args[0], "requires_grad", False)):
            out = func(*args, **kwargs)
            if key == "copy_" and out.requires_grad and tuple(args[1].shape) != tuple(out.shape):
                # its backward would sum the gradient over the broadcast dims (aten::sum)
                return self._missing(func, args, kwargs, shown, caller,
                                     "a broadcasting copy_ under autograd")
            if key in _CONVERSIONS and _changes_float_dtype(args, out):
                return self._missing(func, args, kwargs, shown, caller,
                                     "a conversion between floating-point dtypes rounds")
            self._note("passed", shown, caller)
            return out
        tensors = _tensors(args, kwargs)
        numbers = [v for v in list(args) + list(kwargs.values())
                   if isinstance(v, float) or (isinstance(v, torch.dtype) and v.is_floating_point)]
        if key in ROUTED and tensors and not numbers and \
                not any(t.is_floating_point() for t in tensors) \
                and key not in ("div", "true_divide", "rdiv", "div_", "mean", "softmax",
                                "log_softmax", "sqrt", "exp", "log", "reciprocal", "tanh",
                                "sigmoid", "gelu", "sin", "cos", "exp2", "log2", "rsqrt",
                                "sort", "argsort"):
            self._note("passed", shown + " (integer, exact)", caller)
            return func(*args, **kwargs)
        if key in PASS_THROUGH_IF:
            refused = PASS_THROUGH_IF[key][0](args, kwargs)
            if refused is None:
                out = func(*args, **kwargs)
                self._note("passed", shown, caller)
                return out
            return self._missing(func, args, kwargs, shown, caller,
                                 "samebits has no version of this call: %s" % refused)
        why = "samebits has no version of it"
        if key in ROUTED:
            _SITE.value = (caller, self)
            try:
                out = _routed_call(ROUTED[key][0], args, kwargs)
                self._note("covered", shown, caller)
                return out
            except (_Missing, NotImplementedError, TypeError) as e:
                why = "samebits has no version of this call: %s" % e
        return self._missing(func, args, kwargs, shown, caller, why)

    def _missing(self, func, args, kwargs, shown, caller, why):
        path = _module_path(caller, self.paths)
        if self.record:
            self.report._add("missing", shown, path, why)
            return func(*args, **kwargs)
        raise NotReproducibleError(
            "samebits strict mode: %s called in module '%s': %s, and PyTorch's kernel would "
            "make the result depend on the machine; see ROUTED and PASS_THROUGH in "
            "samebits/strict.py (or convert with strict=False to accept PyTorch arithmetic)"
            % (shown, path, why))

    def _note(self, kind, shown, caller):
        if self.record:
            self.report._add(kind, shown, _module_path(caller, self.paths))


class AuditReport:
    """What audit() saw: covered, passed and missing map (op, module path)
    to a call count; reasons maps a missing (op, path) to why."""

    def __init__(self):
        self.covered = collections.Counter()
        self.passed = collections.Counter()
        self.missing = collections.Counter()
        self.reasons = {}

    def _add(self, kind, op, path, why=None):
        getattr(self, kind)[(op, path)] += 1
        if why is not None:
            self.reasons.setdefault((op, path), why)

    def missing_ops(self):
        return sorted({op for op, _ in self.missing})

    def __str__(self):
        lines = []
        for title, table in (("covered (samebits)", self.covered),
                             ("passed through (data movement)", self.passed),
                             ("MISSING (PyTorch arithmetic)", self.missing)):
            lines.append("%s: %d" % (title, len(table)))
            for (op, path), n in sorted(table.items()):
                why = self.reasons.get((op, path))
                lines.append("  %-40s at %-30s x%d%s" % (op, path, n, "  (%s)" % why if why else ""))
        return "\n".join(lines)


def strict_class(cls):
    """A subclass of cls whose calls run under StrictMode (cached)."""
    if getattr(cls, "_samebits_strict", False):
        return cls
    cache = _STRICT_CLASSES
    if cls not in cache:
        def __call__(self, *args, **kwargs):
            if not self.samebits_strict:
                return cls.__call__(self, *args, **kwargs)
            with StrictMode(self):
                return cls.__call__(self, *args, **kwargs)
        _ENTRY_CODES.add(__call__.__code__)
        cache[cls] = type(cls.__name__, (cls,), {
            "__call__": __call__, "_samebits_strict": True, "samebits_strict": True,
            "__module__": __name__, "__doc__": cls.__doc__})
    return cache[cls]


_STRICT_CLASSES = {}


def audit(model, *example_inputs, print_report=True, **example_kwargs):
    """Runs `model` once on the example inputs with every torch call its code
    makes recorded (nothing raises; missing ops run PyTorch's kernels), and
    returns (and prints) an AuditReport: the ops covered by samebits, passed
    through as data movement, and missing, each with its module path.

    A torch model is first converted (a copy, samebits.from_torch_module);
    modules that cannot convert are listed as missing and run as they are."""
    from .convert import from_torch_module, UnsupportedModuleError
    report_prefix = []
    try:
        run = from_torch_module(model, strict=False)
    except UnsupportedModuleError as e:
        report_prefix.append(str(e))
        run = model
    mode = StrictMode(run, record=True)
    for msg in report_prefix:
        mode.report._add("missing", "module conversion", "<model>", msg)
    # samebits.nn layers are covered as a whole: their calls are counted by
    # forward hooks on the (copied) model, removed again below
    from . import nn as snn
    kinds = tuple(c for c in vars(snn).values()
                  if isinstance(c, type) and issubclass(c, torch.nn.Module) and
                  c.__module__.startswith(snn.__name__))
    hooks = []
    for path, m in run.named_modules():
        if isinstance(m, kinds) and not getattr(type(m), "_samebits_strict", False):
            name = "samebits.nn.%s (module)" % type(m).__name__
            hooks.append(m.register_forward_hook(
                lambda _m, _i, _o, name=name, path=path: mode.report._add(
                    "covered", name, path or "<root>")))
    was = getattr(run, "samebits_strict", None)
    if was is not None:
        run.samebits_strict = False
    try:
        with mode:
            run(*example_inputs, **example_kwargs)
    finally:
        for h in hooks:
            h.remove()
        if was is not None:
            run.samebits_strict = was
    if print_report:
        print(mode.report)
    return mode.report


_ENTRY_CODES.add(audit.__code__)
