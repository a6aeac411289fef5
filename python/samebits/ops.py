"""samebits.ops: reproducible ops on torch.Tensor or numpy.ndarray.

Every function takes float32 CPU arrays (torch.Tensor or numpy.ndarray),
passes them to libsamebits by pointer and returns a new array of the
caller's type (torch in -> torch out, numpy in -> numpy out). Results are the
bits docs/CONTRACT.md defines, on every machine and thread count. These
functions are not differentiable by PyTorch's autograd; samebits.nn.functional
has the differentiable versions (whose backward calls the *_backward ops
here).

Errors: a non-float32 dtype raises TypeError, a CUDA tensor
UnsupportedDeviceError, a shape mismatch (or any error the C library
reports) samebits.SamebitsError carrying sb_last_error()'s message.
Non-contiguous inputs are copied first (exactly).
"""
import ctypes

import numpy as np

from . import _lib
from ._lib import call, wrap, ref
from ._convert import to_np, to_np_index, back, kind_of, empty

__all__ = [
    "mm", "mm_backward", "linear", "linear_backward",
    "add", "sub", "mul", "div", "binary_backward",
    "neg", "abs", "sqrt", "exp", "log", "square", "reciprocal", "unary_backward",
    "relu", "relu_backward", "tanh", "tanh_backward", "sigmoid", "sigmoid_backward",
    "gelu", "gelu_backward",
    "softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
    "cross_entropy", "cross_entropy_backward", "mse_loss", "mse_loss_backward",
    "conv2d", "conv2d_backward", "conv2d_input", "conv2d_weight",
    "max_pool2d", "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward",
    "sum", "mean", "sum_backward", "mean_backward",
    "batch_norm", "batch_norm_backward", "layer_norm", "layer_norm_backward",
    "dropout", "dropout_backward",
]

_BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "maximum": 4, "minimum": 5}
_UNARY = {"neg": 0, "abs": 1, "sqrt": 2, "exp": 3, "log": 4, "square": 5, "reciprocal": 6}
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _pair(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError("samebits: %s must be an int or a pair, got %r" % (name, v))
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _reduction(r, fn):
    if r not in _REDUCTION:
        raise ValueError("samebits.%s: reduction must be 'none', 'mean' or 'sum', got %r" % (fn, r))
    return _REDUCTION[r]


def _opt(x, fn, name):
    return None if x is None else to_np(x, fn, name)


def _w(a):
    return None if a is None else wrap(a)


# ---- raw numpy-level kernels (used by samebits.nn.functional) --------------

def _mm(a, b, trans_a, trans_b):
    if a.ndim not in (2, 3) or b.ndim not in (2, 3):
        raise _lib.SamebitsError("samebits.mm: a and b must be 2-D or 3-D, got %s and %s"
                                 % (a.shape, b.shape))
    m = a.shape[-1] if trans_a else a.shape[-2]
    n = b.shape[-2] if trans_b else b.shape[-1]
    batch = a.shape[:-2] or b.shape[:-2]
    out = empty(tuple(batch) + (m, n))
    ta, tb, to = wrap(a), wrap(b), wrap(out)
    call("sb_matmul", ref(ta), ref(tb), bool(trans_a), bool(trans_b), ref(to))
    return out


def _mm_backward(dout, a, b, trans_a, trans_b, need_a=True, need_b=True):
    da = empty(a.shape) if need_a else None
    db = empty(b.shape) if need_b else None
    call("sb_matmul_backward", ref(wrap(dout)), ref(wrap(a)), ref(wrap(b)), bool(trans_a),
         bool(trans_b), ref(_w(da)), ref(_w(db)))
    return da, db


def _linear(x, w, b):
    if x.ndim < 1 or w.ndim != 2:
        raise _lib.SamebitsError("samebits.linear: x needs >= 1 dims and weight exactly 2, got %s "
                                 "and %s" % (x.shape, w.shape))
    y = empty(x.shape[:-1] + (w.shape[0],))
    call("sb_linear_forward", ref(wrap(x)), ref(wrap(w)), ref(_w(b)), ref(wrap(y)))
    return y


def _linear_backward(dy, x, w, need_x, need_w, need_b):
    dx = empty(x.shape) if need_x else None
    dw = empty(w.shape) if need_w else None
    db = empty((w.shape[0],)) if need_b else None
    call("sb_linear_backward", ref(wrap(dy)), ref(wrap(x)), ref(wrap(w)), ref(_w(dx)),
         ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


def _conv_params(stride, padding, dilation, groups):
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    return _lib.Conv2dParams(sh, sw, ph, pw, dh, dw, int(groups))


def _conv2d(x, w, b, p):
    if x.ndim != 4 or w.ndim != 4:
        raise _lib.SamebitsError("samebits.conv2d: x (N,C,H,W) and weight (O,C/groups,KH,KW) need "
                                 "4 dims, got %s and %s" % (x.shape, w.shape))
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_conv2d_output_size", x.shape[2], x.shape[3], w.shape[2], w.shape[3], ctypes.byref(p),
         ctypes.byref(oh), ctypes.byref(ow))
    y = empty((x.shape[0], w.shape[0], oh.value, ow.value))
    call("sb_conv2d_forward", ref(wrap(x)), ref(wrap(w)), ref(_w(b)), ctypes.byref(p), ref(wrap(y)))
    return y


def _conv2d_backward(dy, x, w, p, need_x, need_w, need_b):
    dx = empty(x.shape) if need_x else None
    dw = empty(w.shape) if need_w else None
    db = empty((w.shape[0],)) if need_b else None
    call("sb_conv2d_backward", ref(wrap(dy)), ref(wrap(x)), ref(wrap(w)), ctypes.byref(p),
         ref(_w(dx)), ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


def _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad):
    kh, kw = _pair(kernel_size, "kernel_size")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        sh, sw = kh, kw
    else:
        sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    return _lib.Pool2dParams(kh, kw, sh, sw, ph, pw, bool(ceil_mode), bool(count_include_pad))


def _pool_out(x, p):
    if x.ndim != 4:
        raise _lib.SamebitsError("samebits pooling: x must be (N,C,H,W), got %s" % (x.shape,))
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_pool2d_output_size", x.shape[2], x.shape[3], ctypes.byref(p), ctypes.byref(oh),
         ctypes.byref(ow))
    return (x.shape[0], x.shape[1], oh.value, ow.value)


def _max_pool2d(x, p):
    shape = _pool_out(x, p)
    y = empty(shape)
    idx = np.empty(shape, dtype=np.int64)
    call("sb_max_pool2d_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)), ref(wrap(idx)))
    return y, idx


def _max_pool2d_backward(dy, idx, x_shape, p):
    dx = empty(x_shape)
    call("sb_max_pool2d_backward", ref(wrap(dy)), ref(wrap(idx)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def _avg_pool2d(x, p):
    y = empty(_pool_out(x, p))
    call("sb_avg_pool2d_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)))
    return y


def _avg_pool2d_backward(dy, x_shape, p):
    dx = empty(x_shape)
    call("sb_avg_pool2d_backward", ref(wrap(dy)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def _binary(op, a, b):
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise _lib.SamebitsError("samebits.%s: shapes %s and %s do not broadcast"
                                 % (op, a.shape, b.shape)) from None
    out = empty(shape)
    call("sb_binary", _BINARY[op], ref(wrap(a)), ref(wrap(b)), ref(wrap(out)))
    return out


def _binary_scalar(op, a, s):
    out = empty(a.shape)
    call("sb_binary_scalar", _BINARY[op], ref(wrap(a)), float(np.float32(s)), ref(wrap(out)))
    return out


def _binary_backward(op, dy, a, b, need_a, need_b):
    da = empty(a.shape) if need_a else None
    db = empty(b.shape) if need_b else None
    call("sb_binary_backward", _BINARY[op], ref(wrap(dy)), ref(wrap(a)), ref(wrap(b)),
         ref(_w(da)), ref(_w(db)))
    return da, db


def _unary(op, x):
    out = empty(x.shape)
    call("sb_unary", _UNARY[op], ref(wrap(x)), ref(wrap(out)))
    return out


def _unary_backward(op, x, y, dy):
    dx = empty(x.shape)
    call("sb_unary_backward", _UNARY[op], ref(wrap(x)), ref(wrap(y)), ref(wrap(dy)), ref(wrap(dx)))
    return dx


def _map(name, x, *extra):
    y = empty(x.shape)
    call(name, ref(wrap(x)), *extra, ref(wrap(y)))
    return y


def _map_backward(name, saved, dy, *extra):
    dx = empty(saved.shape)
    if dy.shape != saved.shape:
        raise _lib.SamebitsError("%s: dy has shape %s, expected %s" % (name, dy.shape, saved.shape))
    call(name, ref(wrap(saved)), ref(wrap(dy)), *extra, ref(wrap(dx)))
    return dx


def _dims(x, dim):
    if dim is None:
        return None, 0
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(int(d) for d in dim)
    return (ctypes.c_int * max(len(dims), 1))(*dims), len(dims)


def _reduced_shape(shape, dim, keepdim):
    nd = len(shape)
    if dim is None:
        axes = set(range(nd))
    else:
        axes = set()
        for d in ((dim,) if isinstance(dim, int) else dim):
            d = int(d)
            # range errors are left to the C library, which names them
            axes.add(d + nd if d < 0 and nd else d)
        if nd == 0:
            axes = set()
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reduce(name, x, dim, keepdim):
    arr, n = _dims(x, dim)
    out = empty(_reduced_shape(x.shape, dim, keepdim))
    call(name, ref(wrap(x)), arr, n, bool(keepdim), ref(wrap(out)))
    return out


def _reduce_backward(name, dy, x_shape, dim, keepdim):
    arr, n = _dims(None, dim)
    dx = empty(x_shape)
    call(name, ref(wrap(dy)), arr, n, bool(keepdim), ref(wrap(dx)))
    return dx


def _softmax(name, x, dim):
    y = empty(x.shape)
    call(name, ref(wrap(x)), int(dim), ref(wrap(y)))
    return y


def _softmax_backward(name, y, dy, dim):
    dx = empty(y.shape)
    call(name, ref(wrap(y)), ref(wrap(dy)), int(dim), ref(wrap(dx)))
    return dx


def _loss_shape(n, red):
    return (n,) if red == 0 else ()


def _cross_entropy(logits, targets, red, smoothing, ignore_index):
    n = logits.shape[0] if logits.ndim else 1
    loss = empty(_loss_shape(n, red))
    call("sb_cross_entropy_forward", ref(wrap(logits)), ref(wrap(targets)), red,
         float(smoothing), int(ignore_index), ref(wrap(loss)))
    return loss


def _cross_entropy_backward(logits, targets, red, smoothing, ignore_index, dloss):
    d = empty(logits.shape)
    call("sb_cross_entropy_backward", ref(wrap(logits)), ref(wrap(targets)), red,
         float(smoothing), int(ignore_index), ref(wrap(dloss)), ref(wrap(d)))
    return d


def _mse(x, y, red):
    loss = empty(x.shape if red == 0 else ())
    call("sb_mse_forward", ref(wrap(x)), ref(wrap(y)), red, ref(wrap(loss)))
    return loss


def _mse_backward(x, y, red, dloss, need_x, need_y):
    dx = empty(x.shape)
    dy = empty(y.shape) if need_y else None
    call("sb_mse_backward", ref(wrap(x)), ref(wrap(y)), red, ref(wrap(dloss)), ref(wrap(dx)),
         ref(_w(dy)))
    return (dx if need_x else None), dy


def _batch_norm(x, gamma, beta, rmean, rvar, training, momentum, eps):
    if x.ndim < 2:
        raise _lib.SamebitsError("samebits.batch_norm: x needs at least 2 dims (N, C, ...), got %s"
                                 % (x.shape,))
    c = x.shape[1]
    y = empty(x.shape)
    save_mean, save_rstd = empty((c,)), empty((c,))
    call("sb_batch_norm_forward", ref(wrap(x)), ref(_w(gamma)), ref(_w(beta)), ref(_w(rmean)),
         ref(_w(rvar)), bool(training), float(momentum), float(eps), ref(wrap(y)),
         ref(wrap(save_mean)), ref(wrap(save_rstd)))
    return y, save_mean, save_rstd


def _batch_norm_backward(dy, x, gamma, save_mean, save_rstd, training, need_x, need_g, need_b):
    c = x.shape[1]
    dx = empty(x.shape) if need_x else None
    dg = empty((c,)) if need_g else None
    db = empty((c,)) if need_b else None
    call("sb_batch_norm_backward", ref(wrap(dy)), ref(wrap(x)), ref(_w(gamma)),
         ref(wrap(save_mean)), ref(wrap(save_rstd)), bool(training), ref(_w(dx)), ref(_w(dg)),
         ref(_w(db)))
    return dx, dg, db


def _layer_norm(x, nd, w, b, eps):
    if not 1 <= nd <= x.ndim:
        raise _lib.SamebitsError("samebits.layer_norm: normalized_shape has %d dims, x has shape %s"
                                 % (nd, x.shape))
    lead = x.shape[:x.ndim - nd]
    y, mean, rstd = empty(x.shape), empty(lead), empty(lead)
    call("sb_layer_norm_forward", ref(wrap(x)), int(nd), ref(_w(w)), ref(_w(b)), float(eps),
         ref(wrap(y)), ref(wrap(mean)), ref(wrap(rstd)))
    return y, mean, rstd


def _layer_norm_backward(dy, x, nd, w, mean, rstd, need_x, need_w, need_b):
    tail = x.shape[x.ndim - nd:]
    dx = empty(x.shape) if need_x else None
    dw = empty(tail) if need_w else None
    db = empty(tail) if need_b else None
    call("sb_layer_norm_backward", ref(wrap(dy)), ref(wrap(x)), int(nd), ref(_w(w)),
         ref(wrap(mean)), ref(wrap(rstd)), ref(_w(dx)), ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


def _dropout(x, p, training, seed, stream, offset):
    y, mask = empty(x.shape), empty(x.shape)
    call("sb_dropout_forward", ref(wrap(x)), float(p), bool(training), int(seed), int(stream),
         int(offset), ref(wrap(y)), ref(wrap(mask)))
    return y, mask


def _dropout_backward(dy, mask, p, training):
    dx = empty(dy.shape)
    call("sb_dropout_backward", ref(wrap(dy)), ref(wrap(mask)), float(p), bool(training),
         ref(wrap(dx)))
    return dx


# ---- public API: torch or numpy in, the same type out ----------------------

def mm(a, b, trans_a=False, trans_b=False):
    """op(a) @ op(b) (2-D, or batched 3-D); op transposes the last two dims
    when its flag is set. Each element is one fmaf chain over k ascending."""
    return back(_mm(to_np(a, "mm", "a"), to_np(b, "mm", "b"), trans_a, trans_b), kind_of(a, b))


def mm_backward(dout, a, b, trans_a=False, trans_b=False):
    """(da, db) for out = mm(a, b, trans_a, trans_b)."""
    k = kind_of(dout, a, b)
    da, db = _mm_backward(to_np(dout, "mm_backward", "dout"), to_np(a, "mm_backward", "a"),
                          to_np(b, "mm_backward", "b"), trans_a, trans_b)
    return back(da, k), back(db, k)


def linear(x, weight, bias=None):
    """x @ weight^T + bias (torch.nn.functional.linear's layout)."""
    return back(_linear(to_np(x, "linear", "x"), to_np(weight, "linear", "weight"),
                        _opt(bias, "linear", "bias")), kind_of(x, weight))


def linear_backward(dy, x, weight):
    """(dx, dweight, dbias) for y = linear(x, weight, bias)."""
    k = kind_of(dy, x, weight)
    r = _linear_backward(to_np(dy, "linear_backward", "dy"), to_np(x, "linear_backward", "x"),
                         to_np(weight, "linear_backward", "weight"), True, True, True)
    return tuple(back(v, k) for v in r)


def _binary_public(op, a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return back(_binary_scalar(op, to_np(a, op, "a"), b), kind_of(a))
    return back(_binary(op, to_np(a, op, "a"), to_np(b, op, "b")), kind_of(a, b))


def add(a, b):
    """a + b with broadcasting (b may be a Python number)."""
    return _binary_public("add", a, b)


def sub(a, b):
    return _binary_public("sub", a, b)


def mul(a, b):
    return _binary_public("mul", a, b)


def div(a, b):
    """a / b, one IEEE division per element, with broadcasting (b may be a
    Python number, rounded to float32 first)."""
    return _binary_public("div", a, b)


def binary_backward(op, dy, a, b):
    """(da, db) for out = <op>(a, b); op is 'add', 'sub', 'mul', 'div',
    'maximum' or 'minimum'. Broadcast gradients are reduced back with the
    canonical sum."""
    k = kind_of(dy, a, b)
    da, db = _binary_backward(op, to_np(dy, op, "dy"), to_np(a, op, "a"), to_np(b, op, "b"),
                              True, True)
    return back(da, k), back(db, k)


def _unary_public(op):
    def f(x):
        return back(_unary(op, to_np(x, op, "x")), kind_of(x))
    f.__name__ = op
    f.__doc__ = "Elementwise %s (contract section 'Elementwise')." % op
    return f


neg = _unary_public("neg")
abs = _unary_public("abs")  # noqa: A001 (mirrors torch.abs)
sqrt = _unary_public("sqrt")
exp = _unary_public("exp")
log = _unary_public("log")
square = _unary_public("square")
reciprocal = _unary_public("reciprocal")


def unary_backward(op, x, y, dy):
    """dx for y = <op>(x)."""
    return back(_unary_backward(op, to_np(x, op, "x"), to_np(y, op, "y"), to_np(dy, op, "dy")),
                kind_of(x, y, dy))


def relu(x):
    return back(_map("sb_relu_forward", to_np(x, "relu", "x")), kind_of(x))


def relu_backward(x, dy):
    return back(_map_backward("sb_relu_backward", to_np(x, "relu_backward", "x"),
                              to_np(dy, "relu_backward", "dy")), kind_of(x, dy))


def tanh(x):
    """sb_tanhf per element (correctly rounded)."""
    return back(_map("sb_tanh_forward", to_np(x, "tanh", "x")), kind_of(x))


def tanh_backward(y, dy):
    return back(_map_backward("sb_tanh_backward", to_np(y, "tanh_backward", "y"),
                              to_np(dy, "tanh_backward", "dy")), kind_of(y, dy))


def sigmoid(x):
    return back(_map("sb_sigmoid_forward", to_np(x, "sigmoid", "x")), kind_of(x))


def sigmoid_backward(y, dy):
    return back(_map_backward("sb_sigmoid_backward", to_np(y, "sigmoid_backward", "y"),
                              to_np(dy, "sigmoid_backward", "dy")), kind_of(y, dy))


def gelu(x, approximate="none"):
    return back(_map("sb_gelu_forward", to_np(x, "gelu", "x"), _gelu_flag(approximate)),
                kind_of(x))


def gelu_backward(x, dy, approximate="none"):
    return back(_map_backward("sb_gelu_backward", to_np(x, "gelu_backward", "x"),
                              to_np(dy, "gelu_backward", "dy"), _gelu_flag(approximate)),
                kind_of(x, dy))


def _gelu_flag(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError("samebits.gelu: approximate must be 'none' or 'tanh', got %r" % approximate)
    return approximate == "tanh"


def softmax(x, dim=-1):
    return back(_softmax("sb_softmax_forward", to_np(x, "softmax", "x"), dim), kind_of(x))


def softmax_backward(y, dy, dim=-1):
    return back(_softmax_backward("sb_softmax_backward", to_np(y, "softmax_backward", "y"),
                                  to_np(dy, "softmax_backward", "dy"), dim), kind_of(y, dy))


def log_softmax(x, dim=-1):
    return back(_softmax("sb_log_softmax_forward", to_np(x, "log_softmax", "x"), dim), kind_of(x))


def log_softmax_backward(y, dy, dim=-1):
    return back(_softmax_backward("sb_log_softmax_backward", to_np(y, "log_softmax_backward", "y"),
                                  to_np(dy, "log_softmax_backward", "dy"), dim), kind_of(y, dy))


def cross_entropy(logits, targets, reduction="mean", label_smoothing=0.0, ignore_index=-100):
    """Cross-entropy of logits (N, C) against int64/int32 class indices (N)."""
    red = _reduction(reduction, "cross_entropy")
    return back(_cross_entropy(to_np(logits, "cross_entropy", "logits"),
                               to_np_index(targets, "cross_entropy", "targets"), red,
                               label_smoothing, ignore_index), kind_of(logits))


def cross_entropy_backward(logits, targets, dloss, reduction="mean", label_smoothing=0.0,
                           ignore_index=-100):
    red = _reduction(reduction, "cross_entropy_backward")
    fn = "cross_entropy_backward"
    return back(_cross_entropy_backward(to_np(logits, fn, "logits"),
                                        to_np_index(targets, fn, "targets"), red, label_smoothing,
                                        ignore_index, to_np(dloss, fn, "dloss")), kind_of(logits))


def mse_loss(x, y, reduction="mean"):
    red = _reduction(reduction, "mse_loss")
    return back(_mse(to_np(x, "mse_loss", "x"), to_np(y, "mse_loss", "y"), red), kind_of(x, y))


def mse_loss_backward(x, y, dloss, reduction="mean"):
    red = _reduction(reduction, "mse_loss_backward")
    fn = "mse_loss_backward"
    dx, dy = _mse_backward(to_np(x, fn, "x"), to_np(y, fn, "y"), red, to_np(dloss, fn, "dloss"),
                           True, True)
    k = kind_of(x, y)
    return back(dx, k), back(dy, k)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d's arguments (padding as ints: zeros on both sides)."""
    p = _conv_params(stride, padding, dilation, groups)
    return back(_conv2d(to_np(x, "conv2d", "x"), to_np(weight, "conv2d", "weight"),
                        _opt(bias, "conv2d", "bias"), p), kind_of(x, weight))


def conv2d_backward(dy, x, weight, stride=1, padding=0, dilation=1, groups=1):
    """(dx, dweight, dbias) for y = conv2d(x, weight, bias, ...)."""
    p = _conv_params(stride, padding, dilation, groups)
    fn = "conv2d_backward"
    r = _conv2d_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), to_np(weight, fn, "weight"), p,
                         True, True, True)
    k = kind_of(dy, x, weight)
    return tuple(back(v, k) for v in r)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The input gradient of conv2d (torch.nn.grad.conv2d_input's signature).
    It does not depend on the input's values, only its size."""
    p = _conv_params(stride, padding, dilation, groups)
    fn = "conv2d_input"
    x = np.zeros(tuple(int(s) for s in input_size), dtype=np.float32)
    dx, _, _ = _conv2d_backward(to_np(grad_output, fn, "grad_output"), x,
                                to_np(weight, fn, "weight"), p, True, False, False)
    return back(dx, kind_of(weight, grad_output))


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The weight gradient of conv2d (torch.nn.grad.conv2d_weight's signature)."""
    p = _conv_params(stride, padding, dilation, groups)
    fn = "conv2d_weight"
    w = np.zeros(tuple(int(s) for s in weight_size), dtype=np.float32)
    _, dw, _ = _conv2d_backward(to_np(grad_output, fn, "grad_output"), to_np(input, fn, "input"),
                                w, p, False, True, False)
    return back(dw, kind_of(input, grad_output))


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_indices=False):
    """First NaN, else first maximum in window order (PyTorch picks the last
    NaN); indices like PyTorch's (h*W + w in the plane)."""
    p = _pool_params(kernel_size, stride, padding, ceil_mode, True)
    y, idx = _max_pool2d(to_np(x, "max_pool2d", "x"), p)
    k = kind_of(x)
    return (back(y, k), back(idx, k)) if return_indices else back(y, k)


def max_pool2d_backward(dy, indices, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, True)
    return back(_max_pool2d_backward(to_np(dy, "max_pool2d_backward", "dy"),
                                     to_np_index(indices, "max_pool2d_backward", "indices"),
                                     tuple(input_shape), p), kind_of(dy))


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad)
    return back(_avg_pool2d(to_np(x, "avg_pool2d", "x"), p), kind_of(x))


def avg_pool2d_backward(dy, input_shape, kernel_size, stride=None, padding=0, ceil_mode=False,
                        count_include_pad=True):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad)
    return back(_avg_pool2d_backward(to_np(dy, "avg_pool2d_backward", "dy"), tuple(input_shape),
                                     p), kind_of(dy))


def sum(x, dim=None, keepdim=False):  # noqa: A001 (mirrors torch.sum)
    """Canonical sum over `dim` (int, tuple, or None for all axes)."""
    return back(_reduce("sb_sum", to_np(x, "sum", "x"), dim, keepdim), kind_of(x))


def mean(x, dim=None, keepdim=False):
    """Canonical sum / (float)count over `dim`."""
    return back(_reduce("sb_mean", to_np(x, "mean", "x"), dim, keepdim), kind_of(x))


def sum_backward(dy, input_shape, dim=None, keepdim=False):
    return back(_reduce_backward("sb_sum_backward", to_np(dy, "sum_backward", "dy"),
                                 tuple(input_shape), dim, keepdim), kind_of(dy))


def mean_backward(dy, input_shape, dim=None, keepdim=False):
    return back(_reduce_backward("sb_mean_backward", to_np(dy, "mean_backward", "dy"),
                                 tuple(input_shape), dim, keepdim), kind_of(dy))


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm's arguments; running statistics are
    updated in place in training mode. Returns y."""
    fn = "batch_norm"
    rm, rv = _opt(running_mean, fn, "running_mean"), _opt(running_var, fn, "running_var")
    y, _, _ = _batch_norm(to_np(x, fn, "x"), _opt(weight, fn, "weight"), _opt(bias, fn, "bias"),
                          rm, rv, training, momentum, eps)
    _copy_back(running_mean, rm)
    _copy_back(running_var, rv)
    return back(y, kind_of(x))


def batch_norm_backward(dy, x, weight, save_mean, save_rstd, training=True):
    fn = "batch_norm_backward"
    r = _batch_norm_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), _opt(weight, fn, "weight"),
                             to_np(save_mean, fn, "save_mean"), to_np(save_rstd, fn, "save_rstd"),
                             training, True, weight is not None, weight is not None)
    k = kind_of(dy, x)
    return tuple(None if v is None else back(v, k) for v in r)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    nd = 1 if isinstance(normalized_shape, int) else len(tuple(normalized_shape))
    fn = "layer_norm"
    y, _, _ = _layer_norm(to_np(x, fn, "x"), nd, _opt(weight, fn, "weight"), _opt(bias, fn, "bias"),
                          eps)
    return back(y, kind_of(x))


def layer_norm_backward(dy, x, normalized_ndim, weight, save_mean, save_rstd):
    fn = "layer_norm_backward"
    r = _layer_norm_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), normalized_ndim,
                             _opt(weight, fn, "weight"), to_np(save_mean, fn, "save_mean"),
                             to_np(save_rstd, fn, "save_rstd"), True, weight is not None,
                             weight is not None)
    k = kind_of(dy, x)
    return tuple(None if v is None else back(v, k) for v in r)


def dropout(x, p, training, seed, stream, offset=0):
    """(y, mask): inverted dropout with the Philox mask of (seed, stream, offset)."""
    y, mask = _dropout(to_np(x, "dropout", "x"), p, training, seed, stream, offset)
    k = kind_of(x)
    return back(y, k), back(mask, k)


def dropout_backward(dy, mask, p, training=True):
    return back(_dropout_backward(to_np(dy, "dropout_backward", "dy"),
                                  to_np(mask, "dropout_backward", "mask"), p, training), kind_of(dy))


def _copy_back(orig, arr):
    """In-place results for buffers that had to be copied to contiguous form."""
    if orig is None or arr is None:
        return
    if _is_same_memory(orig, arr):
        return
    if hasattr(orig, "copy_"):
        import torch
        with torch.no_grad():
            orig.copy_(torch.from_numpy(arr))
    else:
        orig[...] = arr


def _is_same_memory(orig, arr):
    if hasattr(orig, "data_ptr"):
        return orig.data_ptr() == arr.ctypes.data
    return isinstance(orig, np.ndarray) and orig.ctypes.data == arr.ctypes.data
