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
from . import _device_array as _dev
from ._lib import call, wrap, ref
from ._convert import (to_np, to_np_index, back, kind_of, empty, zeros, device_of, is_torch, op_scope,
                       dense, expand_dims, may_share_memory, to_torch, data_ptr)

__all__ = [
    "mm", "mm_backward", "linear", "linear_backward",
    "add", "sub", "mul", "div", "binary_backward",
    "neg", "abs", "sqrt", "exp", "log", "square", "reciprocal", "sin", "cos", "exp2", "log2",
    "rsqrt", "unary_backward",
    "relu", "relu_backward", "tanh", "tanh_backward", "sigmoid", "sigmoid_backward",
    "gelu", "gelu_backward", "hardtanh", "hardtanh_backward", "relu6", "hardsigmoid",
    "hardsigmoid_backward", "hardswish", "hardswish_backward", "silu", "silu_backward",
    "leaky_relu", "leaky_relu_backward", "softplus", "softplus_backward",
    "elu", "elu_backward", "selu", "celu", "mish", "mish_backward", "logsigmoid",
    "logsigmoid_backward", "hardshrink", "hardshrink_backward", "softshrink",
    "softshrink_backward", "threshold", "threshold_backward", "prelu", "prelu_backward",
    "softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
    "cross_entropy", "cross_entropy_backward", "nll_loss", "nll_loss_backward",
    "ctc_loss", "ctc_loss_backward",
    "mse_loss", "mse_loss_backward",
    "conv2d", "conv2d_backward", "conv2d_input", "conv2d_weight",
    "max_pool2d", "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward",
    "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward", "pad2d", "pad2d_backward", "interpolate",
    "interpolate_backward", "grid_sample", "grid_sample_backward",
    "sum", "mean", "sum_backward", "mean_backward",
    "cumsum", "cumsum_backward", "cumprod", "cumprod_backward",
    "batch_norm", "batch_norm_backward", "layer_norm", "layer_norm_backward",
    "rms_norm", "rms_norm_backward",
    "group_norm", "group_norm_backward",
    "dropout", "dropout_backward",
    "gather", "gather_backward", "scatter_add", "index_select", "index_select_backward",
    "index_add", "scatter_reduce", "bincount", "histc", "sort", "topk", "kthvalue", "median", "sort_backward",
    "scaled_dot_product_attention", "default_scale",
]

_BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "maximum": 4, "minimum": 5, "pow": 6}
_UNARY = {"neg": 0, "abs": 1, "sqrt": 2, "exp": 3, "log": 4, "square": 5, "reciprocal": 6,
          "sin": 7, "cos": 8, "exp2": 9, "log2": 10, "rsqrt": 11}
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


def _pair(v, fn, name, struct, field):
    """(h, w) of an int-or-pair parameter, each checked against the C type of
    the `struct` field it becomes."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError("samebits.%s: %s must be an int or a pair, got %r" % (fn, name, v))
        h, w = v
    else:
        h = w = v
    return (_lib.field_int(h, struct, field, fn, name), _lib.field_int(w, struct, field, fn, name))


def _flag(v, fn, name):
    """A bool parameter: True/False (numpy's too) or the ints 0/1. Anything
    else (a string, None, 2) is refused: bool('no') would be True."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return bool(_lib.checked_int(v, ctypes.c_bool, "samebits.%s: %s" % (fn, name)))


def _op_name(op, table, fn):
    if op not in table:
        raise ValueError("samebits.%s: op must be one of %s, got %r" % (fn, ", ".join(table), op))
    return table[op]


def _shape(v, fn, name, ndim=None):
    """A shape parameter: a sequence of non-negative int64 sizes whose element
    count a float32 array can hold."""
    if isinstance(v, (int, np.integer)) or not hasattr(v, "__len__"):
        raise TypeError("samebits.%s: %s must be a sequence of sizes, got %r" % (fn, name, v))
    dims = tuple(_lib.checked_int(d, ctypes.c_int64, "samebits.%s: %s[%d]" % (fn, name, i))
                 for i, d in enumerate(v))
    if ndim is not None and len(dims) != ndim:
        raise ValueError("samebits.%s: %s must have %d sizes, got %r" % (fn, name, ndim, dims))
    total = 1
    for d in dims:
        if d < 0:
            raise ValueError("samebits.%s: %s %r has a negative size" % (fn, name, dims))
        total *= d
    if total * 4 > _lib.int_range(ctypes.c_int64)[1]:
        raise ValueError("samebits.%s: %s %r has more elements than an array can hold"
                         % (fn, name, dims))
    return dims


def _normalized_ndim(x_shape, normalized_shape, fn):
    """The number of trailing dims layer_norm normalises, after checking that
    normalized_shape IS x's trailing shape (only its length reaches C)."""
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    shape = _shape(normalized_shape, fn, "normalized_shape")
    nd = len(shape)
    if not 1 <= nd <= len(x_shape) or tuple(x_shape[len(x_shape) - nd:]) != shape:
        raise ValueError("samebits.%s: normalized_shape %s is not the trailing shape of the input "
                         "%s" % (fn, shape, tuple(x_shape)))
    return nd


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
    trans_a, trans_b = _flag(trans_a, "mm", "trans_a"), _flag(trans_b, "mm", "trans_b")
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
    fn = "mm_backward"
    trans_a, trans_b = _flag(trans_a, fn, "trans_a"), _flag(trans_b, fn, "trans_b")
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


_RNN_MODES = {"RNN_TANH": _lib.SB_RNN_TANH, "RNN_RELU": _lib.SB_RNN_RELU,
              "LSTM": _lib.SB_RNN_LSTM, "GRU": _lib.SB_RNN_GRU}
# gates and saved planes per mode (include/samebits/recurrent.h)
RNN_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_RNN_PLANES = {"RNN_TANH": 2, "RNN_RELU": 2, "LSTM": 7, "GRU": 5}


def _rnn_sequence(mode, reverse, batch_sizes):
    """(sb_rnn_sequence, the int64 array its batch_sizes points into: the
    caller keeps both alive). Steps of batch size 0 (an empty batch) come
    last, as sizes never increase, and update nothing: they are left out."""
    sizes = np.ascontiguousarray([b for b in batch_sizes if b > 0], dtype=np.int64)
    seq = _lib.RnnSequence(mode=_RNN_MODES[mode], reverse=bool(reverse), steps=len(sizes))
    seq.batch_sizes = sizes.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    return seq, sizes


def _rnn_forward(mode, reverse, batch_sizes, gx, h0, c0, w_hh, b_hh, w_hr, keep):
    """One direction's time loop (sb_rnn_forward): gx (R, G*H) is x W_ih^T +
    b_ih. Returns y (R, P), h_n, c_n (or None), and when `keep` what the
    backward reads, h_prev (R, P) and saved (K, R, H) (else None, None)."""
    seq, sizes = _rnn_sequence(mode, reverse, batch_sizes)
    R, H = gx.shape[0], w_hh.shape[0] // RNN_GATES[mode]
    P = w_hh.shape[1]
    y, h_n = empty((R, P)), empty(h0.shape)
    c_n = None if c0 is None else empty(c0.shape)
    h_prev = empty((R, P)) if keep else None
    saved = empty((_RNN_PLANES[mode], R, H)) if keep else None
    call("sb_rnn_forward", ctypes.byref(seq), ref(wrap(gx)), ref(wrap(h0)), ref(_w(c0)),
         ref(wrap(w_hh)), ref(_w(b_hh)), ref(_w(w_hr)), ref(wrap(y)), ref(wrap(h_n)),
         ref(_w(c_n)), ref(_w(h_prev)), ref(_w(saved)))
    del sizes
    return y, h_n, c_n, h_prev, saved


def _rnn_backward(mode, reverse, batch_sizes, w_hh, w_hr, saved, dy, dh_n, dc_n, want_dh_all):
    """Backward through time of one direction (sb_rnn_backward). Returns
    dgx (R, G*H), dgh (the GRU's; dgx itself for the other modes), dh_all
    (R, P) or None, dh0, dc0 (or None)."""
    seq, sizes = _rnn_sequence(mode, reverse, batch_sizes)
    R, GH = dy.shape[0], w_hh.shape[0]
    dgx = empty((R, GH))
    dgh = empty((R, GH)) if mode == "GRU" else None
    dh_all = empty(dy.shape) if want_dh_all else None
    dh0 = empty(dh_n.shape)
    dc0 = None if dc_n is None else empty(dc_n.shape)
    call("sb_rnn_backward", ctypes.byref(seq), ref(wrap(w_hh)), ref(_w(w_hr)), ref(wrap(saved)),
         ref(wrap(dy)), ref(wrap(dh_n)), ref(_w(dc_n)), ref(wrap(dgx)), ref(_w(dgh)),
         ref(_w(dh_all)), ref(wrap(dh0)), ref(_w(dc0)))
    del sizes
    return dgx, dgx if dgh is None else dgh, dh_all, dh0, dc0


def _conv_params(stride, padding, dilation, groups, fn="conv2d"):
    P = _lib.Conv2dParams
    sh, sw = _pair(stride, fn, "stride", P, "stride_h")
    ph, pw = _pair(padding, fn, "padding", P, "pad_h")
    dh, dw = _pair(dilation, fn, "dilation", P, "dilation_h")
    return P(sh, sw, ph, pw, dh, dw, _lib.field_int(groups, P, "groups", fn, "groups"))


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


def _conv_transpose_params(stride, padding, output_padding, dilation, groups,
                           fn="conv_transpose2d"):
    P = _lib.ConvTranspose2dParams
    sh, sw = _pair(stride, fn, "stride", P, "stride_h")
    ph, pw = _pair(padding, fn, "padding", P, "pad_h")
    oph, opw = _pair(output_padding, fn, "output_padding", P, "output_pad_h")
    dh, dw = _pair(dilation, fn, "dilation", P, "dilation_h")
    return P(sh, sw, ph, pw, oph, opw, dh, dw, _lib.field_int(groups, P, "groups", fn, "groups"))


def _conv_transpose2d(x, w, b, p):
    """x (N, C, H, W), w (C, O/groups, KH, KW): y (N, O, OH, OW)."""
    if x.ndim != 4 or w.ndim != 4:
        raise _lib.SamebitsError("samebits.conv_transpose2d: x (N,C,H,W) and weight "
                                 "(C,O/groups,KH,KW) need 4 dims, got %s and %s"
                                 % (x.shape, w.shape))
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_conv_transpose2d_output_size", x.shape[2], x.shape[3], w.shape[2], w.shape[3],
         ctypes.byref(p), ctypes.byref(oh), ctypes.byref(ow))
    y = empty((x.shape[0], w.shape[1] * p.groups, oh.value, ow.value))
    call("sb_conv_transpose2d_forward", ref(wrap(x)), ref(wrap(w)), ref(_w(b)), ctypes.byref(p),
         ref(wrap(y)))
    return y


def _conv_transpose2d_backward(dy, x, w, p, need_x, need_w, need_b):
    dx = empty(x.shape) if need_x else None
    dw = empty(w.shape) if need_w else None
    db = empty((dy.shape[1],)) if need_b else None
    call("sb_conv_transpose2d_backward", ref(wrap(dy)), ref(wrap(x)), ref(wrap(w)),
         ctypes.byref(p), ref(_w(dx)), ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


def _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad, fn="pool2d",
                 dilation=1, divisor_override=None):
    """dilation is max pooling's, divisor_override (None or a nonzero int)
    average pooling's; the C library refuses each for the other pooling."""
    P = _lib.Pool2dParams
    kh, kw = _pair(kernel_size, fn, "kernel_size", P, "kernel_h")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        sh, sw = kh, kw
    else:
        sh, sw = _pair(stride, fn, "stride", P, "stride_h")
    ph, pw = _pair(padding, fn, "padding", P, "pad_h")
    dh, dw = _pair(dilation, fn, "dilation", P, "dilation_h")
    if dh < 1 or dw < 1:
        raise ValueError("samebits.%s: dilation must be >= 1, got %r" % (fn, dilation))
    div = 0
    if divisor_override is not None:
        div = _lib.field_int(divisor_override, P, "divisor_override", fn, "divisor_override")
        if div == 0:  # 0 means "none" in the C struct
            raise ValueError("samebits.%s: divisor_override must not be zero" % fn)
    return P(kh, kw, sh, sw, ph, pw, _flag(ceil_mode, fn, "ceil_mode"),
             _flag(count_include_pad, fn, "count_include_pad"), dh, dw, div)


def _pool_out(x, p, fn):
    if x.ndim != 4:
        raise _lib.SamebitsError("samebits.%s: x must be (N,C,H,W), got %s" % (fn, x.shape))
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_pool2d_output_size", x.shape[2], x.shape[3], ctypes.byref(p), ctypes.byref(oh),
         ctypes.byref(ow))
    return (x.shape[0], x.shape[1], oh.value, ow.value)


def _max_pool2d(x, p):
    shape = _pool_out(x, p, "max_pool2d")
    y = empty(shape)
    idx = empty(shape, np.int64)
    call("sb_max_pool2d_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)), ref(wrap(idx)))
    return y, idx


def _pool_input_shape(x_shape, dy, p, fn):
    """x_shape checked against dy: pooling an x of that shape gives dy's shape
    (so a wrong or huge input_shape is refused before anything is allocated)."""
    x_shape = _shape(x_shape, fn, "input_shape", 4)
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_pool2d_output_size", x_shape[2], x_shape[3], ctypes.byref(p), ctypes.byref(oh),
         ctypes.byref(ow))
    expect = (x_shape[0], x_shape[1], oh.value, ow.value)
    if tuple(dy.shape) != expect:
        raise ValueError("samebits.%s: input_shape %s pools to %s, but dy has shape %s"
                         % (fn, x_shape, expect, tuple(dy.shape)))
    return x_shape


def _max_pool2d_backward(dy, idx, x_shape, p):
    x_shape = _pool_input_shape(x_shape, dy, p, "max_pool2d_backward")
    dx = empty(x_shape)
    call("sb_max_pool2d_backward", ref(wrap(dy)), ref(wrap(idx)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def _avg_pool2d(x, p):
    y = empty(_pool_out(x, p, "avg_pool2d"))
    call("sb_avg_pool2d_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)))
    return y


def _avg_pool2d_backward(dy, x_shape, p):
    x_shape = _pool_input_shape(x_shape, dy, p, "avg_pool2d_backward")
    dx = empty(x_shape)
    call("sb_avg_pool2d_backward", ref(wrap(dy)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def _adaptive_out(x_shape, output_size, fn):
    """(N, C, OH, OW) for PyTorch's output_size: an int, or a pair whose None
    entries keep the input's size."""
    if len(x_shape) != 4:
        raise _lib.SamebitsError("samebits.%s: x must be (N,C,H,W), got %s" % (fn, x_shape))
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 2:
            raise ValueError("samebits.%s: output_size must be an int or a pair, got %r"
                             % (fn, output_size))
        sizes = [x_shape[2 + i] if v is None else v for i, v in enumerate(output_size)]
    else:
        sizes = [output_size, output_size]
    oh, ow = (_lib.checked_int(v, ctypes.c_int64, "samebits.%s: output_size" % fn) for v in sizes)
    if oh < 0 or ow < 0:
        raise ValueError("samebits.%s: output_size %r must not be negative" % (fn, output_size))
    if max(oh, ow) > 2 ** 31 - 1:
        raise ValueError("samebits.%s: output_size %r must be at most 2^31 - 1 per axis"
                         % (fn, output_size))
    return _shape((x_shape[0], x_shape[1], oh, ow), fn, "output")


def _adaptive_input_shape(x_shape, dy, fn):
    x_shape = _shape(x_shape, fn, "input_shape", 4)
    if tuple(dy.shape[:2]) != tuple(x_shape[:2]) or dy.ndim != 4:
        raise ValueError("samebits.%s: input_shape %s and dy's shape %s differ in N or C"
                         % (fn, x_shape, tuple(dy.shape)))
    return x_shape


def _adaptive_max_pool2d(x, output_size):
    shape = _adaptive_out(x.shape, output_size, "adaptive_max_pool2d")
    y = empty(shape)
    idx = empty(shape, np.int64)
    call("sb_adaptive_max_pool2d_forward", ref(wrap(x)), ref(wrap(y)), ref(wrap(idx)))
    return y, idx


def _adaptive_max_pool2d_backward(dy, idx, x_shape):
    dx = empty(_adaptive_input_shape(x_shape, dy, "adaptive_max_pool2d_backward"))
    call("sb_adaptive_max_pool2d_backward", ref(wrap(dy)), ref(wrap(idx)), ref(wrap(dx)))
    return dx


def _adaptive_avg_pool2d(x, output_size):
    y = empty(_adaptive_out(x.shape, output_size, "adaptive_avg_pool2d"))
    call("sb_adaptive_avg_pool2d_forward", ref(wrap(x)), ref(wrap(y)))
    return y


def _adaptive_avg_pool2d_backward(dy, x_shape):
    dx = empty(_adaptive_input_shape(x_shape, dy, "adaptive_avg_pool2d_backward"))
    call("sb_adaptive_avg_pool2d_backward", ref(wrap(dy)), ref(wrap(dx)))
    return dx


def _binary(op, a, b):
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise _lib.SamebitsError("samebits.%s: shapes %s and %s do not broadcast"
                                 % (op, a.shape, b.shape)) from None
    code = _op_name(op, _BINARY, op)
    out = empty(shape)
    call("sb_binary", code, ref(wrap(a)), ref(wrap(b)), ref(wrap(out)))
    return out


def _binary_scalar(op, a, s):
    code = _op_name(op, _BINARY, op)
    # rounded to float32 here, as C would; a value that rounds to 0 or inf is refused
    s = float(np.float32(_lib.arg_float(s, "sb_binary_scalar", 2, op, "b")))
    out = empty(a.shape)
    call("sb_binary_scalar", code, ref(wrap(a)), s, ref(wrap(out)))
    return out


def _binary_backward(op, dy, a, b, need_a, need_b):
    code = _op_name(op, _BINARY, "binary_backward")
    da = empty(a.shape) if need_a else None
    db = empty(b.shape) if need_b else None
    call("sb_binary_backward", code, ref(wrap(dy)), ref(wrap(a)), ref(wrap(b)),
         ref(_w(da)), ref(_w(db)))
    return da, db


def _unary(op, x):
    code = _op_name(op, _UNARY, op)
    out = empty(x.shape)
    call("sb_unary", code, ref(wrap(x)), ref(wrap(out)))
    return out


def _unary_backward(op, x, y, dy):
    code = _op_name(op, _UNARY, "unary_backward")
    dx = empty(x.shape)
    call("sb_unary_backward", code, ref(wrap(x)), ref(wrap(y)), ref(wrap(dy)), ref(wrap(dx)))
    return dx


def _map(name, x, *extra, out=None):
    """y = name(x, *extra) into a new array, or into out (which may be x
    itself: the pointwise kernels take an identical layout in place)."""
    y = empty(x.shape) if out is None else out
    call(name, ref(wrap(x)), *extra, ref(wrap(y)))
    return y


def _map_backward(name, saved, dy, *extra):
    dx = empty(saved.shape)
    if dy.shape != saved.shape:
        raise _lib.SamebitsError("%s: dy has shape %s, expected %s" % (name, dy.shape, saved.shape))
    call(name, ref(wrap(saved)), ref(wrap(dy)), *extra, ref(wrap(dx)))
    return dx


def _dim_tuple(name, dim, fn):
    """dim (None, an int or a sequence of ints) as a tuple of C ints (the
    element type of the C function's dims array), or None."""
    if dim is None:
        return None
    seq = dim if isinstance(dim, (tuple, list)) else (dim,)
    elem = _lib.argtype(name, 1)._type_
    return tuple(_lib.checked_int(d, elem, "samebits.%s: dim" % fn) for d in seq)


def _dims(dims):
    if dims is None:
        return None, 0
    return (ctypes.c_int * max(len(dims), 1))(*dims), len(dims)


def _reduced_shape(shape, dims, keepdim):
    nd = len(shape)
    if dims is None:
        axes = set(range(nd))
    else:
        # range errors are left to the C library, which names them
        axes = set(d + nd if d < 0 and nd else d for d in dims)
        if nd == 0:
            axes = set()
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reduce(name, x, dim, keepdim, fn=None):
    fn = fn or name
    dims = _dim_tuple(name, dim, fn)
    keepdim = _flag(keepdim, fn, "keepdim")
    arr, n = _dims(dims)
    out = empty(_reduced_shape(x.shape, dims, keepdim))
    call(name, ref(wrap(x)), arr, n, keepdim, ref(wrap(out)))
    return out


def _reduce_backward(name, dy, x_shape, dim, keepdim, fn=None):
    fn = fn or name
    dims = _dim_tuple(name, dim, fn)
    keepdim = _flag(keepdim, fn, "keepdim")
    x_shape = _shape(x_shape, fn, "input_shape")
    expect = _reduced_shape(x_shape, dims, keepdim)
    if tuple(dy.shape) != expect:
        raise ValueError("samebits.%s: reducing input_shape %s over dim=%r gives %s, but dy has "
                         "shape %s" % (fn, x_shape, dim, expect, tuple(dy.shape)))
    arr, n = _dims(dims)
    dx = empty(x_shape)
    call(name, ref(wrap(dy)), arr, n, keepdim, ref(wrap(dx)))
    return dx


def _cumulative(name, x, dim, fn):
    """sb_cumsum / sb_cumprod / sb_cumsum_backward: one sequential float32
    chain per column along dim (contract section 10)."""
    dim = _lib.arg_int(dim, name, 1, fn, "dim")
    out = empty(x.shape)
    call(name, ref(wrap(x)), dim, ref(wrap(out)))
    return out


def _cumprod_backward(x, y, dy, dim, fn="cumprod_backward"):
    dim = _lib.arg_int(dim, "sb_cumprod_backward", 3, fn, "dim")
    dx = empty(x.shape)
    call("sb_cumprod_backward", ref(wrap(x)), ref(wrap(y)), ref(wrap(dy)), dim, ref(wrap(dx)))
    return dx


def _softmax(name, x, dim, fn="softmax"):
    dim = _lib.arg_int(dim, name, 1, fn, "dim")
    y = empty(x.shape)
    call(name, ref(wrap(x)), dim, ref(wrap(y)))
    return y


def _softmax_backward(name, y, dy, dim, fn="softmax_backward"):
    dim = _lib.arg_int(dim, name, 2, fn, "dim")
    dx = empty(y.shape)
    call(name, ref(wrap(y)), ref(wrap(dy)), dim, ref(wrap(dx)))
    return dx


def _loss_shape(n, red):
    return (n,) if red == 0 else ()


def _cross_entropy(logits, targets, red, smoothing, ignore_index, fn="cross_entropy"):
    c = "sb_cross_entropy_forward"
    smoothing = _lib.arg_float(smoothing, c, 3, fn, "label_smoothing")
    ignore_index = _lib.arg_int(ignore_index, c, 4, fn, "ignore_index")
    n = logits.shape[0] if logits.ndim else 1
    loss = empty(_loss_shape(n, red))
    call(c, ref(wrap(logits)), ref(wrap(targets)), red, smoothing, ignore_index, ref(wrap(loss)))
    return loss


def _cross_entropy_backward(logits, targets, red, smoothing, ignore_index, dloss,
                            fn="cross_entropy_backward"):
    c = "sb_cross_entropy_backward"
    smoothing = _lib.arg_float(smoothing, c, 3, fn, "label_smoothing")
    ignore_index = _lib.arg_int(ignore_index, c, 4, fn, "ignore_index")
    d = empty(logits.shape)
    call(c, ref(wrap(logits)), ref(wrap(targets)), red, smoothing, ignore_index,
         ref(wrap(dloss)), ref(wrap(d)))
    return d


def _class_params(kind, smoothing, ignore_index, fn):
    """sb_class_loss: cross-entropy (kind SB_LOSS_CROSS_ENTROPY) or NLL."""
    smoothing = _lib.checked_float(smoothing, _lib.ClassLoss.field_type("label_smoothing"),
                                   "samebits.%s: label_smoothing" % fn)
    ignore_index = _lib.field_int(ignore_index, _lib.ClassLoss, "ignore_index", fn,
                                  "ignore_index")
    return _lib.ClassLoss(kind, smoothing, ignore_index)


def _class_loss(params, x, targets, weight, red):
    """The class loss `params` of x (N, C) or (N, C, d1, ..., dk) against class
    indices targets (N) or (N, d1, ..., dk); weight is None or (C)."""
    loss = empty(targets.shape if red == 0 else ())
    call("sb_class_loss_forward", ctypes.byref(params), ref(wrap(x)), ref(wrap(targets)),
         ref(_w(weight)), red, ref(wrap(loss)))
    return loss


def _class_loss_backward(params, x, targets, weight, red, dloss):
    d = empty(x.shape)
    call("sb_class_loss_backward", ctypes.byref(params), ref(wrap(x)), ref(wrap(targets)),
         ref(_w(weight)), red, ref(wrap(dloss)), ref(wrap(d)))
    return d


def _ctc_params(blank, zero_infinity, fn):
    """sb_ctc_loss: the blank label and zero_infinity."""
    return _lib.CtcLoss(_lib.field_int(blank, _lib.CtcLoss, "blank", fn, "blank"),
                        _flag(zero_infinity, fn, "zero_infinity"))


def _ctc_loss(params, lp, targets, in_len, tg_len, red):
    """CTC loss of log_probs (T, N, C) against padded (N, S) or concatenated
    targets; the lengths are int arrays (N)."""
    loss = empty((lp.shape[1],) if red == 0 and lp.ndim == 3 else ())
    call("sb_ctc_loss_forward", ctypes.byref(params), ref(wrap(lp)), ref(wrap(targets)),
         ref(wrap(in_len)), ref(wrap(tg_len)), red, ref(wrap(loss)))
    return loss


def _ctc_loss_backward(params, lp, targets, in_len, tg_len, red, dloss):
    d = empty(lp.shape)
    call("sb_ctc_loss_backward", ctypes.byref(params), ref(wrap(lp)), ref(wrap(targets)),
         ref(wrap(in_len)), ref(wrap(tg_len)), red, ref(wrap(dloss)), ref(wrap(d)))
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


def _loss_params(kind, beta=0.0, log_target=False, fn="loss", beta_name="beta"):
    beta = _lib.checked_float(beta, _lib.ElementwiseLoss.field_type("beta"),
                              "samebits.%s: %s" % (fn, beta_name))
    return _lib.ElementwiseLoss(kind, beta, bool(log_target))


def _elementwise_loss(params, x, y, w, pw, red):
    """The elementwise loss `params` of x against y; w and pw (weight and
    pos_weight) are None or arrays of x's shape."""
    loss = empty(x.shape if red == 0 else ())
    call("sb_elementwise_loss_forward", ctypes.byref(params), ref(wrap(x)), ref(wrap(y)),
         ref(_w(w)), ref(_w(pw)), red, ref(wrap(loss)))
    return loss


def _elementwise_loss_backward(params, x, y, w, pw, red, dloss, need_y):
    dx = empty(x.shape)
    dy = empty(y.shape) if need_y else None
    call("sb_elementwise_loss_backward", ctypes.byref(params), ref(wrap(x)), ref(wrap(y)),
         ref(_w(w)), ref(_w(pw)), red, ref(wrap(dloss)), ref(wrap(dx)), ref(_w(dy)))
    return dx, dy


def _batch_norm(x, gamma, beta, rmean, rvar, training, momentum, eps, fn="batch_norm"):
    c = "sb_batch_norm_forward"
    training = _flag(training, fn, "training")
    momentum = _lib.arg_float(momentum, c, 6, fn, "momentum")
    eps = _lib.arg_float(eps, c, 7, fn, "eps")
    _no_overlap(fn, [("running_mean", rmean), ("running_var", rvar)],
                [("input", x), ("weight", gamma), ("bias", beta)])
    if x.ndim < 2:
        raise _lib.SamebitsError("samebits.batch_norm: x needs at least 2 dims (N, C, ...), got %s"
                                 % (x.shape,))
    c = x.shape[1]
    y = empty(x.shape)
    save_mean, save_rstd = empty((c,)), empty((c,))
    call("sb_batch_norm_forward", ref(wrap(x)), ref(_w(gamma)), ref(_w(beta)), ref(_w(rmean)),
         ref(_w(rvar)), training, momentum, eps, ref(wrap(y)),
         ref(wrap(save_mean)), ref(wrap(save_rstd)))
    return y, save_mean, save_rstd


def _batch_norm_backward(dy, x, gamma, save_mean, save_rstd, training, need_x, need_g, need_b):
    training = _flag(training, "batch_norm_backward", "training")
    if x.ndim < 2:
        raise _lib.SamebitsError("samebits.batch_norm_backward: x needs at least 2 dims (N, C, "
                                 "...), got %s" % (x.shape,))
    c = x.shape[1]
    dx = empty(x.shape) if need_x else None
    dg = empty((c,)) if need_g else None
    db = empty((c,)) if need_b else None
    call("sb_batch_norm_backward", ref(wrap(dy)), ref(wrap(x)), ref(_w(gamma)),
         ref(wrap(save_mean)), ref(wrap(save_rstd)), training, ref(_w(dx)), ref(_w(dg)),
         ref(_w(db)))
    return dx, dg, db


def _layer_norm(x, nd, w, b, eps, fn="layer_norm", stats=True):
    """y, and the statistics a backward needs (None, None without `stats`)."""
    eps = _lib.arg_float(eps, "sb_layer_norm_forward", 4, fn, "eps")
    if not 1 <= nd <= x.ndim:
        raise _lib.SamebitsError("samebits.layer_norm: normalized_shape has %d dims, x has shape %s"
                                 % (nd, x.shape))
    lead = x.shape[:x.ndim - nd]
    y = empty(x.shape)
    mean, rstd = (empty(lead), empty(lead)) if stats else (None, None)
    call("sb_layer_norm_forward", ref(wrap(x)), nd, ref(_w(w)), ref(_w(b)), eps,
         ref(wrap(y)), ref(_w(mean)), ref(_w(rstd)))
    return y, mean, rstd


def _layer_norm_backward(dy, x, nd, w, mean, rstd, need_x, need_w, need_b,
                         fn="layer_norm_backward"):
    nd = _lib.arg_int(nd, "sb_layer_norm_backward", 2, fn, "normalized_ndim")
    if not 1 <= nd <= x.ndim:
        raise ValueError("samebits.%s: normalized_ndim=%d is not in [1, %d] (x has shape %s)"
                         % (fn, nd, x.ndim, x.shape))
    tail = x.shape[x.ndim - nd:]
    dx = empty(x.shape) if need_x else None
    dw = empty(tail) if need_w else None
    db = empty(tail) if need_b else None
    call("sb_layer_norm_backward", ref(wrap(dy)), ref(wrap(x)), nd, ref(_w(w)),
         ref(wrap(mean)), ref(wrap(rstd)), ref(_w(dx)), ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


# PyTorch's eps=None for rms_norm: torch.finfo(torch.float32).eps
_FLT_EPSILON = 2.0 ** -23


def _rms_norm(x, nd, w, eps, fn="rms_norm"):
    eps = _lib.arg_float(_FLT_EPSILON if eps is None else eps, "sb_rms_norm_forward", 3, fn,
                         "eps")
    if not 1 <= nd <= x.ndim:
        raise ValueError("samebits.%s: normalized_shape has %d dims, x has shape %s"
                         % (fn, nd, x.shape))
    y, rrms = empty(x.shape), empty(x.shape[:x.ndim - nd])
    call("sb_rms_norm_forward", ref(wrap(x)), nd, ref(_w(w)), eps, ref(wrap(y)), ref(wrap(rrms)))
    return y, rrms


def _rms_norm_backward(dy, x, nd, w, rrms, need_x, need_w, fn="rms_norm_backward"):
    nd = _lib.arg_int(nd, "sb_rms_norm_backward", 2, fn, "normalized_ndim")
    if not 1 <= nd <= x.ndim:
        raise ValueError("samebits.%s: normalized_ndim=%d is not in [1, %d] (x has shape %s)"
                         % (fn, nd, x.ndim, x.shape))
    dx = empty(x.shape) if need_x else None
    dw = empty(x.shape[x.ndim - nd:]) if need_w else None
    call("sb_rms_norm_backward", ref(wrap(dy)), ref(wrap(x)), nd, ref(_w(w)), ref(wrap(rrms)),
         ref(_w(dx)), ref(_w(dw)))
    return dx, dw


def _group_norm(x, groups, w, b, eps, fn="group_norm", stats=True):
    """y, and the statistics a backward needs (None, None without `stats`)."""
    eps = _lib.arg_float(eps, "sb_group_norm_forward", 4, fn, "eps")
    groups = _lib.arg_int(groups, "sb_group_norm_forward", 1, fn, "num_groups")
    if x.ndim < 2:
        raise ValueError("samebits.%s: input must have at least 2 dims (N, C, ...), got shape %s"
                         % (fn, x.shape))
    if groups < 1 or x.shape[1] % groups:
        raise ValueError("samebits.%s: num_groups=%d must be >= 1 and divide the %d channels"
                         % (fn, groups, x.shape[1]))
    y = empty(x.shape)
    mean, rstd = ((empty((x.shape[0], groups)), empty((x.shape[0], groups))) if stats
                  else (None, None))
    call("sb_group_norm_forward", ref(wrap(x)), groups, ref(_w(w)), ref(_w(b)), eps,
         ref(wrap(y)), ref(_w(mean)), ref(_w(rstd)))
    return y, mean, rstd


def _group_norm_backward(dy, x, groups, w, mean, rstd, need_x, need_w, need_b,
                         fn="group_norm_backward"):
    groups = _lib.arg_int(groups, "sb_group_norm_backward", 2, fn, "num_groups")
    if x.ndim < 2:
        raise ValueError("samebits.%s: x must have at least 2 dims (N, C, ...), got shape %s"
                         % (fn, x.shape))
    c = x.shape[1]
    dx = empty(x.shape) if need_x else None
    dw = empty((c,)) if need_w else None
    db = empty((c,)) if need_b else None
    call("sb_group_norm_backward", ref(wrap(dy)), ref(wrap(x)), groups, ref(_w(w)),
         ref(wrap(mean)), ref(wrap(rstd)), ref(_w(dx)), ref(_w(dw)), ref(_w(db)))
    return dx, dw, db


def _dropout(x, p, training, seed, stream, offset, fn="dropout"):
    c = "sb_dropout_forward"
    p = _lib.arg_float(p, c, 1, fn, "p")
    training = _flag(training, fn, "training")
    seed = _lib.arg_int(seed, c, 3, fn, "seed")
    stream = _lib.arg_int(stream, c, 4, fn, "stream")
    offset = _lib.arg_int(offset, c, 5, fn, "offset")
    y, mask = empty(x.shape), empty(x.shape)
    call(c, ref(wrap(x)), p, training, seed, stream, offset, ref(wrap(y)), ref(wrap(mask)))
    return y, mask


def _dropout_backward(dy, mask, p, training, fn="dropout_backward"):
    p = _lib.arg_float(p, "sb_dropout_backward", 2, fn, "p")
    training = _flag(training, fn, "training")
    dx = empty(dy.shape)
    call("sb_dropout_backward", ref(wrap(dy)), ref(wrap(mask)), p, training, ref(wrap(dx)))
    return dx


# ---- attention (contract section 19) ----

_CAUSAL = {None: 0, False: 0, "top_left": 1, True: 1, "bottom_right": 2}


def _sdpa_mask(mask, fn):
    """None, a float32 mask (added) or a boolean one (True = take part) as
    the C function takes them: float32, or int32 0/1 (exact)."""
    if mask is None:
        return None
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
        return np.ascontiguousarray(mask, dtype=np.int32)
    if is_torch(mask) and str(mask.dtype) == "torch.bool":
        code = device_of(mask, fn, "attn_mask")
        if code == _lib.SB_DEVICE_CPU:
            return to_np_index(mask.int(), fn, "attn_mask")   # 0/1: exact
        return to_np_index(_dev.DeviceArray(mask.detach(), code).astype(np.int32), fn, "attn_mask")
    return to_np(mask, fn, "attn_mask")


def _sdpa_causal(causal, fn):
    if causal not in _CAUSAL:
        raise ValueError("samebits.%s: causal=%r (expected False, True or 'top_left', "
                         "'bottom_right')" % (fn, causal))
    return _CAUSAL[causal]


def default_scale(e):
    """The default scale of head size e: float32 of binary64 1/sqrt(e)."""
    out = ctypes.c_float()
    call("sb_sdpa_default_scale", _lib.arg_int(e, "sb_sdpa_default_scale", 0, "default_scale", "e"),
         ctypes.byref(out))
    return out.value


def _sdpa_args(q, scale, p, seed, stream, offset, fn):
    c = "sb_sdpa_forward"
    scale = default_scale(q.shape[-1] if q.shape[-1] > 0 else 1) if scale is None else \
        _lib.arg_float(scale, c, 5, fn, "scale")
    return (scale, _lib.arg_float(p, c, 6, fn, "dropout_p"), _lib.arg_int(seed, c, 7, fn, "seed"),
            _lib.arg_int(stream, c, 8, fn, "stream"), _lib.arg_int(offset, c, 9, fn, "offset"))


def _sdpa(q, k, v, mask, causal, scale, p, seed, stream, offset, fn="scaled_dot_product_attention"):
    """(out, probs) of numpy q, k, v; mask as _sdpa_mask returns it."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.ndim < 2:
            raise _lib.SamebitsError("samebits.%s: %s must have at least 2 dimensions, got shape %s"
                                     % (fn, name, t.shape))
    scale, p, seed, stream, offset = _sdpa_args(q, scale, p, seed, stream, offset, fn)
    out = empty(q.shape[:-1] + (v.shape[-1],))
    probs = empty(q.shape[:-1] + (k.shape[-2],))
    call("sb_sdpa_forward", ref(wrap(q)), ref(wrap(k)), ref(wrap(v)), ref(_w(mask)),
         _sdpa_causal(causal, fn), scale, p, seed, stream, offset, ref(wrap(out)),
         ref(wrap(probs)))
    return out, probs, scale


def _sdpa_backward(dout, q, k, v, mask, causal, scale, p, seed, stream, offset, probs,
                   need=(True, True, True)):
    dq, dk, dv = (empty(t.shape) if n else None for t, n in zip((q, k, v), need))
    call("sb_sdpa_backward", ref(wrap(dout)), ref(wrap(q)), ref(wrap(k)), ref(wrap(v)),
         ref(_w(mask)), _sdpa_causal(causal, "scaled_dot_product_attention_backward"), scale, p,
         seed, stream, offset, ref(wrap(probs)), ref(_w(dq)), ref(_w(dk)), ref(_w(dv)))
    return dq, dk, dv


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, causal=False,
                                 scale=None, seed=0, stream=0, offset=0):
    """softmax(q k^T * scale + mask) v (contract section 19), with the
    probabilities: returns (out, probs). attn_mask: float (added) or bool
    (True = take part), broadcast to (..., Lq, Lk); causal: False, True /
    'top_left' (PyTorch's is_causal) or 'bottom_right' (KV-cache decode);
    dropout from Philox (seed, stream, offset + position in probs)."""
    fn = "scaled_dot_product_attention"
    kind = kind_of(query, key, value)
    out, probs, _ = _sdpa(to_np(query, fn, "query"), to_np(key, fn, "key"),
                          to_np(value, fn, "value"), _sdpa_mask(attn_mask, fn), causal, scale,
                          dropout_p, seed, stream, offset, fn)
    return back(out, kind), back(probs, kind)


# ---- the index family (contract section 18) ----
# The C functions take exact shapes (index and the dense side equal, the
# indexed side equal except along dim); PyTorch's looser rules (an index
# smaller than the tensors in the other dims) are met here by exact copies
# of the leading sub-blocks.

def _index_np(index, fn, name="index"):
    """index as a C-contiguous int64 numpy array (int32 widened: exact)."""
    a = to_np_index(index, fn, name)
    return a if a.dtype == np.int64 else a.astype(np.int64)


def _dim_of(dim, ndim, function, fn, position=1):
    """dim (C argument `position` of `function`) wrapped into [0, ndim)."""
    dim = _lib.arg_int(dim, function, position, fn, "dim")
    nd = max(ndim, 1)
    if not -nd <= dim < nd:
        raise _lib.SamebitsError("samebits.%s: dim=%d is out of range for a tensor with %d "
                                 "dimensions" % (fn, dim, ndim))
    return dim % nd


def _lead(shape, index_shape, dim):
    """The slices that take index_shape's leading block of `shape` in every
    dim except dim (where the whole axis stays)."""
    return tuple(slice(None) if k == dim else slice(0, int(n)) for k, n in enumerate(index_shape))


def _check_index_fits(fn, index, shape, name, dim, strict_dims=False):
    if index.ndim != len(shape):
        raise _lib.SamebitsError("samebits.%s: index has %d dimensions but %s has %d (they must "
                                 "match)" % (fn, index.ndim, name, len(shape)))
    for k, n in enumerate(index.shape):
        if (k != dim or strict_dims) and n > shape[k]:
            raise _lib.SamebitsError("samebits.%s: index has size %d along dimension %d, more "
                                     "than %s's %d" % (fn, n, k, name, shape[k]))


def _gather(x, dim, index, fn="gather"):
    dim = _dim_of(dim, x.ndim, "sb_gather", fn)
    _check_index_fits(fn, index, x.shape, "input", dim)
    xs = dense(x[_lead(x.shape, index.shape, dim)]) if x.ndim else x
    out = empty(index.shape)
    call("sb_gather", ref(wrap(xs)), dim, ref(wrap(index)), ref(wrap(out)))
    return out


def _gather_backward(dy, dim, index, x_shape, fn="gather_backward"):
    """dx of x_shape: the scatter-add of dy into zeros (ascending position)."""
    x_shape = _shape(x_shape, fn, "input_shape")
    dim = _dim_of(dim, len(x_shape), "sb_gather_backward", fn)
    _check_index_fits(fn, index, x_shape, "input", dim)
    lead = _lead(x_shape, index.shape, dim)
    sub = empty(tuple(n if k == dim else index.shape[k] for k, n in enumerate(x_shape)))
    call("sb_gather_backward", ref(wrap(dy)), dim, ref(wrap(index)), ref(wrap(sub)))
    if sub.shape == tuple(x_shape):
        return sub
    dx = zeros(x_shape)
    dx[lead] = sub
    return dx


def _scatter_add(x, dim, index, src, fn="scatter_add"):
    """x with src[p] added at (p with p[dim] = index[p]) in ascending p."""
    dim = _dim_of(dim, x.ndim, "sb_scatter_add", fn, 0)
    _check_index_fits(fn, index, x.shape, "input", dim)
    _check_index_fits(fn, index, src.shape, "src", dim, strict_dims=True)
    srcs = dense(src[tuple(slice(0, int(n)) for n in index.shape)]) \
        if src.ndim else src
    out = x.copy()
    lead = _lead(x.shape, index.shape, dim)
    part = dense(out[lead]) if x.ndim else out
    call("sb_scatter_add", dim, ref(wrap(index)), ref(wrap(srcs)), ref(wrap(part)))
    if part is not out:
        out[lead] = part
    return out


_SCATTER_REDUCE = {"sum": _lib.SB_SCATTER_SUM, "prod": _lib.SB_SCATTER_PROD,
                   "mean": _lib.SB_SCATTER_MEAN, "amax": _lib.SB_SCATTER_AMAX,
                   "amin": _lib.SB_SCATTER_AMIN}


def _scatter_reduce(x, dim, index, src, reduce, include_self=True, fn="scatter_reduce"):
    """x with src's terms reduced into it at (p with p[dim] = index[p]), each
    destination's terms in ascending source position (contract section 18,
    "scatter_reduce"); PyTorch's shape rules as _scatter_add's."""
    if reduce not in _SCATTER_REDUCE:
        raise ValueError("samebits.%s: reduce=%r is not one of %s"
                         % (fn, reduce, ", ".join(_SCATTER_REDUCE)))
    include_self = _flag(include_self, fn, "include_self")
    dim = _dim_of(dim, x.ndim, "sb_scatter_reduce", fn, 0)
    _check_index_fits(fn, index, x.shape, "input", dim)
    _check_index_fits(fn, index, src.shape, "src", dim, strict_dims=True)
    srcs = dense(src[tuple(slice(0, int(n)) for n in index.shape)]) \
        if src.ndim else src
    out = x.copy()
    lead = _lead(x.shape, index.shape, dim)
    part = dense(out[lead]) if x.ndim else out
    call("sb_scatter_reduce", dim, ref(wrap(index)), ref(wrap(srcs)), _SCATTER_REDUCE[reduce],
         include_self, ref(wrap(part)))
    if part is not out:
        out[lead] = part
    return out


def _index_select(x, dim, index, fn="index_select"):
    dim = _dim_of(dim, x.ndim, "sb_index_select", fn)
    shape = list(x.shape)
    if shape:
        shape[dim] = index.size
    out = empty(shape)
    call("sb_index_select", ref(wrap(x)), dim, ref(wrap(index)), ref(wrap(out)))
    return out


def _index_select_backward(dy, dim, index, x_shape, fn="index_select_backward"):
    x_shape = _shape(x_shape, fn, "input_shape")
    dim = _dim_of(dim, len(x_shape), "sb_index_select_backward", fn)
    dx = empty(x_shape)
    call("sb_index_select_backward", ref(wrap(dy)), dim, ref(wrap(index)), ref(wrap(dx)))
    return dx


def _index_add(x, dim, index, source, alpha=1.0, fn="index_add"):
    """x with the slices of source added at index along dim, i ascending;
    each term alpha * source (one rounding) unless alpha is 1."""
    dim = _dim_of(dim, x.ndim, "sb_index_add", fn, 0)
    alpha = float(np.float32(_lib.arg_float(alpha, "sb_index_add", 3, fn, "alpha")))
    out = x.copy()
    call("sb_index_add", dim, ref(wrap(index)), ref(wrap(source)), alpha, ref(wrap(out)))
    return out


# ---- counting: bincount and histc (contract section 18) ----

def _bincount(x, weights=None, minlength=0, fn="bincount"):
    """x: int64 1-D, non-negative; the bins run to max(max(x) + 1,
    minlength). int64 counts, or float32 sums of weights in ascending
    position."""
    minlength = _lib.checked_int(minlength, ctypes.c_int64, "samebits.%s: minlength" % fn)
    if minlength < 0:
        raise ValueError("samebits.%s: minlength=%d is negative" % (fn, minlength))
    if x.ndim != 1:
        raise _lib.SamebitsError("samebits.%s: x has %d dimensions (expected 1)" % (fn, x.ndim))
    nbins = max(int(x.max()) + 1 if x.size else 0, minlength)
    if x.size and int(x.min()) < 0:
        nbins = max(nbins, 1)   # the C check names the negative element
    out = empty((nbins,), np.float32 if weights is not None else np.int64)
    call("sb_bincount", ref(wrap(x)), ref(wrap(weights)) if weights is not None else None,
         ref(wrap(out)))
    return out


def _histc(x, bins=100, min=0.0, max=0.0, fn="histc"):  # noqa: A002 (torch's names)
    bins = _lib.arg_int(bins, "sb_histc", 1, fn, "bins")
    lo = _lib.arg_float(min, "sb_histc", 2, fn, "min")
    hi = _lib.arg_float(max, "sb_histc", 3, fn, "max")
    if bins < 1:
        raise ValueError("samebits.%s: bins=%d must be at least 1" % (fn, bins))
    out = empty((bins,))
    call("sb_histc", ref(wrap(x)), bins, lo, hi, ref(wrap(out)))
    return out


# ---- selection: sort, topk, kthvalue, median (contract section 18) ----
# Each column along dim ordered by value (-0 == +0, NaN above +inf), equal
# values in ascending position: values are bit copies, indices int64.

def _selected_shape(shape, dim, count, keepdim):
    """shape with `count` along dim, or (count None) dim removed unless keepdim."""
    if not shape:
        return ()
    if count is None:
        return tuple(1 if k == dim else n for k, n in enumerate(shape) if keepdim or k != dim)
    return tuple(count if k == dim else n for k, n in enumerate(shape))


def _select(name, x, out_shape, *args):
    values = empty(out_shape)
    indices = empty(out_shape, np.int64)
    call(name, ref(wrap(x)), *args, ref(wrap(values)), ref(wrap(indices)))
    return values, indices


def _sort(x, dim=-1, descending=False, fn="sort"):
    dim = _dim_of(dim, x.ndim, "sb_sort", fn)
    descending = _flag(descending, fn, "descending")
    return _select("sb_sort", x, x.shape, dim, descending)


def _topk(x, k, dim=-1, largest=True, fn="topk"):
    k = _lib.arg_int(k, "sb_topk", 1, fn, "k")
    dim = _dim_of(dim, x.ndim, "sb_topk", fn, 2)
    largest = _flag(largest, fn, "largest")
    n = x.shape[dim] if x.ndim else 1
    if not 0 <= k <= n:
        raise _lib.SamebitsError("samebits.%s: k=%d is outside [0, %d] (the size of dim %d)"
                                 % (fn, k, n, dim))
    return _select("sb_topk", x, _selected_shape(x.shape, dim, k, False), k, dim, largest)


def _kthvalue(x, k, dim=-1, keepdim=False, fn="kthvalue"):
    k = _lib.arg_int(k, "sb_kthvalue", 1, fn, "k")
    dim = _dim_of(dim, x.ndim, "sb_kthvalue", fn, 2)
    keepdim = _flag(keepdim, fn, "keepdim")
    return _select("sb_kthvalue", x, _selected_shape(x.shape, dim, None, keepdim), k, dim,
                   keepdim)


def _median(x, dim, keepdim=False, fn="median"):
    dim = _dim_of(dim, x.ndim, "sb_median", fn)
    keepdim = _flag(keepdim, fn, "keepdim")
    return _select("sb_median", x, _selected_shape(x.shape, dim, None, keepdim), dim, keepdim)


def _sort_backward(dy, dim, indices, x_shape, fn="sort_backward"):
    """dx of x_shape: +0, with dy's bits at indices along dim. dy and
    indices may lack dim (kthvalue/median without keepdim): restored here."""
    x_shape = _shape(x_shape, fn, "input_shape")
    dim = _dim_of(dim, len(x_shape), "sb_sort_backward", fn)
    if dy.ndim == len(x_shape) - 1:
        dy, indices = expand_dims(dy, dim), expand_dims(indices, dim)
    dy, indices = dense(dy), dense(indices)
    dx = empty(x_shape)
    call("sb_sort_backward", ref(wrap(dy)), dim, ref(wrap(indices)), ref(wrap(dx)))
    return dx


def _no_overlap(fn, outputs, inputs):
    """Refuses an in-place output that shares memory with another output or
    an input (C would read elements it has already overwritten)."""
    outputs = [(n, a) for n, a in outputs if a is not None]
    inputs = [(n, a) for n, a in inputs if a is not None]
    for i, (na, a) in enumerate(outputs):
        for nb, b in outputs[i + 1:] + inputs:
            if may_share_memory(a, b):
                raise ValueError("samebits.%s: %s and %s share memory; each needs its own buffer"
                                 % (fn, na, nb))


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
    _op_name(op, _BINARY, "binary_backward")
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
sin = _unary_public("sin")
cos = _unary_public("cos")
exp2 = _unary_public("exp2")
log2 = _unary_public("log2")
rsqrt = _unary_public("rsqrt")


def unary_backward(op, x, y, dy):
    """dx for y = <op>(x)."""
    _op_name(op, _UNARY, "unary_backward")
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


def _hardtanh_range(min_val, max_val, fn):
    lo = _lib.arg_float(min_val, "sb_hardtanh_forward", 1, fn, "min_val")
    hi = _lib.arg_float(max_val, "sb_hardtanh_forward", 2, fn, "max_val")
    if lo > hi:  # NaN goes on to the C check, which names it
        raise ValueError("samebits.%s: min_val %r must not exceed max_val %r" % (fn, min_val, max_val))
    return lo, hi


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """x clamped to [min_val, max_val]; NaN and -0 inside the range are kept."""
    return back(_map("sb_hardtanh_forward", to_np(x, "hardtanh", "x"),
                     *_hardtanh_range(min_val, max_val, "hardtanh")), kind_of(x))


def hardtanh_backward(x, dy, min_val=-1.0, max_val=1.0):
    """dy strictly inside (min_val, max_val), +0 at the kinks and beyond."""
    fn = "hardtanh_backward"
    return back(_map_backward("sb_hardtanh_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              *_hardtanh_range(min_val, max_val, fn)), kind_of(x, dy))


def relu6(x):
    """hardtanh(x, 0, 6): relu6(-0) = -0 as in PyTorch."""
    return back(_map("sb_hardtanh_forward", to_np(x, "relu6", "x"), 0.0, 6.0), kind_of(x))


def hardsigmoid(x):
    return back(_map("sb_hardsigmoid_forward", to_np(x, "hardsigmoid", "x")), kind_of(x))


def hardsigmoid_backward(x, dy):
    fn = "hardsigmoid_backward"
    return back(_map_backward("sb_hardsigmoid_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy")),
                kind_of(x, dy))


def hardswish(x):
    return back(_map("sb_hardswish_forward", to_np(x, "hardswish", "x")), kind_of(x))


def hardswish_backward(x, dy):
    fn = "hardswish_backward"
    return back(_map_backward("sb_hardswish_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy")),
                kind_of(x, dy))


def silu(x):
    """x / (1 + exp(-x)) (contract section 9)."""
    return back(_map("sb_silu_forward", to_np(x, "silu", "x")), kind_of(x))


def silu_backward(x, dy):
    fn = "silu_backward"
    return back(_map_backward("sb_silu_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy")),
                kind_of(x, dy))


def _slope(negative_slope, function, index, fn):
    return _lib.arg_float(negative_slope, function, index, fn, "negative_slope")


def leaky_relu(x, negative_slope=0.01):
    """x > 0 ? x : x * negative_slope (NaN kept)."""
    return back(_map("sb_leaky_relu_forward", to_np(x, "leaky_relu", "x"),
                     _slope(negative_slope, "sb_leaky_relu_forward", 1, "leaky_relu")), kind_of(x))


def leaky_relu_backward(x, dy, negative_slope=0.01):
    fn = "leaky_relu_backward"
    return back(_map_backward("sb_leaky_relu_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              _slope(negative_slope, "sb_leaky_relu_backward", 2, fn)),
                kind_of(x, dy))


def _softplus_args(beta, threshold, function, index, fn):
    return (_lib.arg_float(beta, function, index, fn, "beta"),
            _lib.arg_float(threshold, function, index + 1, fn, "threshold"))


def softplus(x, beta=1.0, threshold=20.0):
    """x * beta > threshold ? x : log1p(exp(x * beta)) / beta."""
    return back(_map("sb_softplus_forward", to_np(x, "softplus", "x"),
                     *_softplus_args(beta, threshold, "sb_softplus_forward", 1, "softplus")),
                kind_of(x))


def softplus_backward(x, dy, beta=1.0, threshold=20.0):
    fn = "softplus_backward"
    return back(_map_backward("sb_softplus_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              *_softplus_args(beta, threshold, "sb_softplus_backward", 2, fn)),
                kind_of(x, dy))


# SELU's constants as PyTorch writes them (doubles); sb_elu_forward takes
# their float32 roundings (contract section 9).
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _elu_args(alpha, scale, input_scale, function, index, fn):
    return (_lib.arg_float(alpha, function, index, fn, "alpha"),
            _lib.arg_float(scale, function, index + 1, fn, "scale"),
            _lib.arg_float(input_scale, function, index + 2, fn, "input_scale"))


def _celu_args(alpha, function, index, fn):
    """celu(alpha) = elu with (alpha, 1, 1 / alpha), the reciprocal taken in
    double and rounded once, as PyTorch's celu does."""
    _lib.arg_float(alpha, function, index, fn, "alpha")  # a number that fits float32
    a = float(alpha)
    if a == 0.0:
        raise ValueError("samebits.%s: alpha = 0 is not allowed for celu" % fn)
    return _elu_args(a, 1.0, 1.0 / a, function, index, fn)


def elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    """x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale)."""
    return back(_map("sb_elu_forward", to_np(x, "elu", "x"),
                     *_elu_args(alpha, scale, input_scale, "sb_elu_forward", 1, "elu")),
                kind_of(x))


def elu_backward(x, dy, alpha=1.0, scale=1.0, input_scale=1.0):
    fn = "elu_backward"
    return back(_map_backward("sb_elu_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              *_elu_args(alpha, scale, input_scale, "sb_elu_backward", 2, fn)),
                kind_of(x, dy))


def selu(x):
    return elu(x, SELU_ALPHA, SELU_SCALE)


def celu(x, alpha=1.0):
    return back(_map("sb_elu_forward", to_np(x, "celu", "x"),
                     *_celu_args(alpha, "sb_elu_forward", 1, "celu")), kind_of(x))


def mish(x):
    """x * tanh(log1p(exp(x)))."""
    return back(_map("sb_mish_forward", to_np(x, "mish", "x")), kind_of(x))


def mish_backward(x, dy):
    fn = "mish_backward"
    return back(_map_backward("sb_mish_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy")),
                kind_of(x, dy))


def logsigmoid(x):
    """min(x, 0) - log1p(exp(-|x|))."""
    return back(_map("sb_logsigmoid_forward", to_np(x, "logsigmoid", "x")), kind_of(x))


def logsigmoid_backward(x, dy):
    fn = "logsigmoid_backward"
    return back(_map_backward("sb_logsigmoid_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy")),
                kind_of(x, dy))


def _lambd(lambd, function, index, fn):
    return _lib.arg_float(lambd, function, index, fn, "lambd")


def hardshrink(x, lambd=0.5):
    """+0 where -lambd <= x <= lambd, x elsewhere."""
    return back(_map("sb_hardshrink_forward", to_np(x, "hardshrink", "x"),
                     _lambd(lambd, "sb_hardshrink_forward", 1, "hardshrink")), kind_of(x))


def hardshrink_backward(x, dy, lambd=0.5):
    fn = "hardshrink_backward"
    return back(_map_backward("sb_hardshrink_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              _lambd(lambd, "sb_hardshrink_backward", 2, fn)), kind_of(x, dy))


def softshrink(x, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, +0 between (NaN kept)."""
    return back(_map("sb_softshrink_forward", to_np(x, "softshrink", "x"),
                     _lambd(lambd, "sb_softshrink_forward", 1, "softshrink")), kind_of(x))


def softshrink_backward(x, dy, lambd=0.5):
    fn = "softshrink_backward"
    return back(_map_backward("sb_softshrink_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              _lambd(lambd, "sb_softshrink_backward", 2, fn)), kind_of(x, dy))


def _threshold_args(threshold, value, function, fn):
    t = _lib.arg_float(threshold, function, 1, fn, "threshold")
    return (t,) if value is None else (t, _lib.arg_float(value, function, 2, fn, "value"))


def threshold(x, threshold, value):
    """value where x <= threshold, x elsewhere."""
    return back(_map("sb_threshold_forward", to_np(x, "threshold", "x"),
                     *_threshold_args(threshold, value, "sb_threshold_forward", "threshold")),
                kind_of(x))


def threshold_backward(x, dy, threshold):
    fn = "threshold_backward"
    return back(_map_backward("sb_threshold_backward", to_np(x, fn, "x"), to_np(dy, fn, "dy"),
                              _lib.arg_float(threshold, "sb_threshold_backward", 2, fn,
                                             "threshold")), kind_of(x, dy))


def _prelu_weight(x, w, fn):
    """PReLU's weight as the 1-D array the C op takes (a 0-D weight is one
    shared slope, as in PyTorch)."""
    if w.ndim > 1:
        raise ValueError("samebits.%s: weight must be a scalar or 1-D, got shape %s"
                         % (fn, w.shape))
    if x.ndim == 0:
        raise ValueError("samebits.%s: input must have at least 1 dimension" % fn)
    return w.reshape(1) if w.ndim == 0 else w


def _prelu(x, w, fn="prelu"):
    y = empty(x.shape)
    call("sb_prelu_forward", ref(wrap(x)), ref(wrap(_prelu_weight(x, w, fn))), ref(wrap(y)))
    return y


def _prelu_backward(x, w, dy, need_x, need_w, fn="prelu_backward"):
    """(dx, dweight), each None when not asked for; dweight has w's shape."""
    w1 = _prelu_weight(x, w, fn)
    dx = empty(x.shape) if need_x else None
    dw = empty(w1.shape) if need_w else None
    call("sb_prelu_backward", ref(wrap(x)), ref(wrap(w1)), ref(wrap(dy)), ref(_w(dx)),
         ref(_w(dw)))
    return dx, None if dw is None else dw.reshape(w.shape)


def prelu(x, weight):
    """x > 0 ? x : weight_c * x, with weight_c the slope of x's channel
    (dim 1; one shared slope when weight has 1 element)."""
    fn = "prelu"
    return back(_prelu(to_np(x, fn, "x"), to_np(weight, fn, "weight"), fn), kind_of(x))


def prelu_backward(x, weight, dy):
    """(dx, dweight): dx = x > 0 ? dy : weight_c * dy; dweight_c the canonical
    sum over channel c of (x > 0 ? 0 : x * dy)."""
    fn = "prelu_backward"
    dx, dw = _prelu_backward(to_np(x, fn, "x"), to_np(weight, fn, "weight"), to_np(dy, fn, "dy"),
                             True, True, fn)
    k = kind_of(x, weight, dy)
    return back(dx, k), back(dw, k)


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
    return back(_softmax("sb_log_softmax_forward", to_np(x, "log_softmax", "x"), dim,
                         "log_softmax"), kind_of(x))


def log_softmax_backward(y, dy, dim=-1):
    return back(_softmax_backward("sb_log_softmax_backward", to_np(y, "log_softmax_backward", "y"),
                                  to_np(dy, "log_softmax_backward", "dy"), dim,
                                  "log_softmax_backward"), kind_of(y, dy))


def _weight_np(weight, fn):
    return None if weight is None else to_np(weight, fn, "weight")


def cross_entropy(logits, targets, reduction="mean", label_smoothing=0.0, ignore_index=-100,
                  weight=None):
    """Cross-entropy of logits (N, C) or (N, C, d1, ..., dk) against int64/int32
    class indices (N) or (N, d1, ..., dk), with optional class weights (C)."""
    fn = "cross_entropy"
    red = _reduction(reduction, fn)
    x, t = to_np(logits, fn, "logits"), to_np_index(targets, fn, "targets")
    if weight is None and x.ndim == 2:
        return back(_cross_entropy(x, t, red, label_smoothing, ignore_index), kind_of(logits))
    params = _class_params(_lib.SB_LOSS_CROSS_ENTROPY, label_smoothing, ignore_index, fn)
    return back(_class_loss(params, x, t, _weight_np(weight, fn), red), kind_of(logits))


def cross_entropy_backward(logits, targets, dloss, reduction="mean", label_smoothing=0.0,
                           ignore_index=-100, weight=None):
    fn = "cross_entropy_backward"
    red = _reduction(reduction, fn)
    x, t = to_np(logits, fn, "logits"), to_np_index(targets, fn, "targets")
    dl = to_np(dloss, fn, "dloss")
    if weight is None and x.ndim == 2:
        return back(_cross_entropy_backward(x, t, red, label_smoothing, ignore_index, dl),
                    kind_of(logits))
    params = _class_params(_lib.SB_LOSS_CROSS_ENTROPY, label_smoothing, ignore_index, fn)
    return back(_class_loss_backward(params, x, t, _weight_np(weight, fn), red, dl),
                kind_of(logits))


def nll_loss(logp, targets, weight=None, reduction="mean", ignore_index=-100):
    """Negative log-likelihood of log-probabilities (N, C) or (N, C, d1, ..., dk)
    against class indices (N) or (N, d1, ..., dk), with optional class weights (C)."""
    fn = "nll_loss"
    red = _reduction(reduction, fn)
    params = _class_params(_lib.SB_LOSS_NLL, 0.0, ignore_index, fn)
    return back(_class_loss(params, to_np(logp, fn, "logp"), to_np_index(targets, fn, "targets"),
                            _weight_np(weight, fn), red), kind_of(logp))


def nll_loss_backward(logp, targets, dloss, weight=None, reduction="mean", ignore_index=-100):
    fn = "nll_loss_backward"
    red = _reduction(reduction, fn)
    params = _class_params(_lib.SB_LOSS_NLL, 0.0, ignore_index, fn)
    return back(_class_loss_backward(params, to_np(logp, fn, "logp"),
                                     to_np_index(targets, fn, "targets"), _weight_np(weight, fn),
                                     red, to_np(dloss, fn, "dloss")), kind_of(logp))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of log-probabilities (T, N, C) against padded (N, S) or
    concatenated (1-D) int64/int32 targets, with int lengths (N)."""
    fn = "ctc_loss"
    red = _reduction(reduction, fn)
    params = _ctc_params(blank, zero_infinity, fn)
    return back(_ctc_loss(params, to_np(log_probs, fn, "log_probs"),
                          to_np_index(targets, fn, "targets"),
                          to_np_index(input_lengths, fn, "input_lengths"),
                          to_np_index(target_lengths, fn, "target_lengths"), red),
                kind_of(log_probs))


def ctc_loss_backward(log_probs, targets, input_lengths, target_lengths, dloss, blank=0,
                      reduction="mean", zero_infinity=False):
    fn = "ctc_loss_backward"
    red = _reduction(reduction, fn)
    params = _ctc_params(blank, zero_infinity, fn)
    return back(_ctc_loss_backward(params, to_np(log_probs, fn, "log_probs"),
                                   to_np_index(targets, fn, "targets"),
                                   to_np_index(input_lengths, fn, "input_lengths"),
                                   to_np_index(target_lengths, fn, "target_lengths"), red,
                                   to_np(dloss, fn, "dloss")), kind_of(log_probs))


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


def _conv_size(size, fn, name, dy, other, p, which):
    """input_size (which=None; other is the weight) or weight_size
    (which='weight'; other is the input), checked against grad_output before
    the zero array standing for it is allocated: the convolution of that
    input and weight must give grad_output's shape."""
    size = _shape(size, fn, name, 4)
    x_shape, w_shape = (other.shape, size) if which == "weight" else (size, other.shape)
    if dy.ndim != 4 or len(x_shape) != 4 or len(w_shape) != 4:
        raise _lib.SamebitsError("samebits.%s: grad_output, input and weight need 4 dims, got %s, "
                                 "%s and %s" % (fn, dy.shape, tuple(x_shape), tuple(w_shape)))
    oh, ow = ctypes.c_int64(), ctypes.c_int64()
    call("sb_conv2d_output_size", x_shape[2], x_shape[3], w_shape[2], w_shape[3], ctypes.byref(p),
         ctypes.byref(oh), ctypes.byref(ow))
    expect = (x_shape[0], w_shape[0], oh.value, ow.value)
    if tuple(dy.shape) != expect or x_shape[1] != w_shape[1] * p.groups:
        raise ValueError("samebits.%s: %s %s does not match grad_output %s (input %s and weight %s "
                         "give %s with groups=%d)" % (fn, name, size, tuple(dy.shape),
                                                       tuple(x_shape), tuple(w_shape), expect,
                                                       p.groups))
    return size


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d's arguments (padding as ints: zeros on both sides)."""
    p = _conv_params(stride, padding, dilation, groups)
    return back(_conv2d(to_np(x, "conv2d", "x"), to_np(weight, "conv2d", "weight"),
                        _opt(bias, "conv2d", "bias"), p), kind_of(x, weight))


def conv2d_backward(dy, x, weight, stride=1, padding=0, dilation=1, groups=1):
    """(dx, dweight, dbias) for y = conv2d(x, weight, bias, ...)."""
    fn = "conv2d_backward"
    p = _conv_params(stride, padding, dilation, groups, fn)
    r = _conv2d_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), to_np(weight, fn, "weight"), p,
                         True, True, True)
    k = kind_of(dy, x, weight)
    return tuple(back(v, k) for v in r)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The input gradient of conv2d (torch.nn.grad.conv2d_input's signature).
    It does not depend on the input's values, only its size."""
    fn = "conv2d_input"
    p = _conv_params(stride, padding, dilation, groups, fn)
    dy, w = to_np(grad_output, fn, "grad_output"), to_np(weight, fn, "weight")
    size = _conv_size(input_size, fn, "input_size", dy, w, p, None)
    x = zeros(size)
    dx, _, _ = _conv2d_backward(dy, x, w, p, True, False, False)
    return back(dx, kind_of(weight, grad_output))


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The weight gradient of conv2d (torch.nn.grad.conv2d_weight's signature)."""
    fn = "conv2d_weight"
    p = _conv_params(stride, padding, dilation, groups, fn)
    dy, x = to_np(grad_output, fn, "grad_output"), to_np(input, fn, "input")
    size = _conv_size(weight_size, fn, "weight_size", dy, x, p, "weight")
    w = zeros(size)
    _, dw, _ = _conv2d_backward(dy, x, w, p, False, True, False)
    return back(dw, kind_of(input, grad_output))


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, return_indices=False,
               dilation=1):
    """First NaN, else first maximum in window order (PyTorch picks the last
    NaN); indices like PyTorch's (h*W + w in the plane)."""
    p = _pool_params(kernel_size, stride, padding, ceil_mode, True, "max_pool2d", dilation)
    y, idx = _max_pool2d(to_np(x, "max_pool2d", "x"), p)
    k = kind_of(x)
    if _flag(return_indices, "max_pool2d", "return_indices"):
        return back(y, k), back(idx, k)
    return back(y, k)


def max_pool2d_backward(dy, indices, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False, dilation=1):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, True, "max_pool2d_backward",
                     dilation)
    return back(_max_pool2d_backward(to_np(dy, "max_pool2d_backward", "dy"),
                                     to_np_index(indices, "max_pool2d_backward", "indices"),
                                     input_shape, p), kind_of(dy))


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad, "avg_pool2d",
                     divisor_override=divisor_override)
    return back(_avg_pool2d(to_np(x, "avg_pool2d", "x"), p), kind_of(x))


def avg_pool2d_backward(dy, input_shape, kernel_size, stride=None, padding=0, ceil_mode=False,
                        count_include_pad=True, divisor_override=None):
    p = _pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad,
                     "avg_pool2d_backward", divisor_override=divisor_override)
    return back(_avg_pool2d_backward(to_np(dy, "avg_pool2d_backward", "dy"), input_shape, p),
                kind_of(dy))


def adaptive_max_pool2d(x, output_size, return_indices=False):
    """Windows rows floor(r*H/OH) .. ceil((r+1)*H/OH)-1 (PyTorch's rule);
    first NaN, else first maximum of each window; indices h*W + w."""
    y, idx = _adaptive_max_pool2d(to_np(x, "adaptive_max_pool2d", "x"), output_size)
    k = kind_of(x)
    if _flag(return_indices, "adaptive_max_pool2d", "return_indices"):
        return back(y, k), back(idx, k)
    return back(y, k)


def adaptive_max_pool2d_backward(dy, indices, input_shape):
    fn = "adaptive_max_pool2d_backward"
    return back(_adaptive_max_pool2d_backward(to_np(dy, fn, "dy"),
                                              to_np_index(indices, fn, "indices"), input_shape),
                kind_of(dy))


def adaptive_avg_pool2d(x, output_size):
    """Canonical sum of each window / its element count."""
    return back(_adaptive_avg_pool2d(to_np(x, "adaptive_avg_pool2d", "x"), output_size),
                kind_of(x))


def adaptive_avg_pool2d_backward(dy, input_shape):
    fn = "adaptive_avg_pool2d_backward"
    return back(_adaptive_avg_pool2d_backward(to_np(dy, fn, "dy"), input_shape), kind_of(dy))


_PAD_MODES = {"constant": _lib.SB_PAD_CONSTANT, "reflect": _lib.SB_PAD_REFLECT,
              "replicate": _lib.SB_PAD_REPLICATE, "circular": _lib.SB_PAD_CIRCULAR}


def _pad_params(pad, mode, value, fn):
    """pad = (left, right, top, bottom), each >= 0; value is used by
    constant mode only."""
    if mode not in _PAD_MODES:
        raise ValueError("samebits.%s: mode must be one of %s, got %r"
                         % (fn, ", ".join(_PAD_MODES), mode))
    if not isinstance(pad, (tuple, list)) or len(pad) != 4:
        raise ValueError("samebits.%s: pad must be (left, right, top, bottom), got %r" % (fn, pad))
    P = _lib.Pad2dParams
    sides = [_lib.field_int(v, P, f, fn, "pad") for v, f in zip(pad, ("left", "right", "top",
                                                                       "bottom"))]
    if min(sides) < 0:
        raise NotImplementedError("samebits.%s: negative padding (cropping) %r is not supported"
                                  % (fn, tuple(pad)))
    if max(sides) > 2 ** 31 - 1:
        raise ValueError("samebits.%s: pad %r: each side must be at most 2147483647"
                         % (fn, tuple(pad)))
    v = 0.0 if value is None or mode != "constant" else \
        _lib.checked_float(value, ctypes.c_float, "samebits.%s: value" % fn)
    return P(*sides, _PAD_MODES[mode], v)


def _pad2d(x, p):
    if x.ndim != 4:
        raise _lib.SamebitsError("samebits.pad2d: x must be (N,C,H,W), got %s" % (x.shape,))
    y = empty(_shape((x.shape[0], x.shape[1], x.shape[2] + p.top + p.bottom,
                      x.shape[3] + p.left + p.right), "pad2d", "the padded shape", 4))
    call("sb_pad2d_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)))
    return y


def _pad2d_backward(dy, x_shape, p):
    x_shape = _shape(x_shape, "pad2d_backward", "input_shape", 4)
    dx = empty(x_shape)
    call("sb_pad2d_backward", ref(wrap(dy)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def pad2d(x, pad, mode="constant", value=0.0):
    """x (N, C, H, W) padded by pad = (left, right, top, bottom): every output
    a bit copy of an input element (reflect, replicate, circular) or value
    (constant)."""
    return back(_pad2d(to_np(x, "pad2d", "x"), _pad_params(pad, mode, value, "pad2d")), kind_of(x))


def pad2d_backward(dy, input_shape, pad, mode="constant"):
    """dx: each input the canonical sum of the gradients of its copies, in
    (row, column) order of the padded output."""
    p = _pad_params(pad, mode, None, "pad2d_backward")
    return back(_pad2d_backward(to_np(dy, "pad2d_backward", "dy"), input_shape, p), kind_of(dy))


_INTERP_MODES = {"nearest": _lib.SB_INTERP_NEAREST, "nearest-exact": _lib.SB_INTERP_NEAREST_EXACT,
                 "linear": _lib.SB_INTERP_LINEAR, "cubic": _lib.SB_INTERP_CUBIC}


def _interp_params(mode, align_corners, scales, nd, fn):
    """sb_interpolate_params: mode one of _INTERP_MODES, scales None or one
    value per spatial axis (each > 0, or None / 0 for none)."""
    if mode not in _INTERP_MODES:
        raise ValueError("samebits.%s: mode must be one of %s, got %r"
                         % (fn, ", ".join(_INTERP_MODES), mode))
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError("samebits.%s: align_corners must be a bool, got %r" % (fn, align_corners))
    if scales is None:
        scales = (None,) * nd
    if not isinstance(scales, (tuple, list)) or len(scales) != nd:
        raise ValueError("samebits.%s: scales must be None or %d values, got %r" % (fn, nd, scales))
    p = _lib.InterpolateParams(_INTERP_MODES[mode], bool(align_corners))
    for k, v in enumerate(scales):
        p.scales[k] = 0.0 if v is None else _lib.checked_float(
            v, ctypes.c_double, "samebits.%s: scales[%d]" % (fn, k))
    return p


def _interpolate(x, size, p):
    if x.ndim not in (3, 4, 5):
        raise _lib.SamebitsError("samebits.interpolate: x must be (N, C, spatial...) with 1 to 3 "
                                 "spatial dims, got shape %s" % (x.shape,))
    y = empty(_shape(tuple(x.shape[:2]) + tuple(size), "interpolate", "the output shape", x.ndim))
    call("sb_interpolate_forward", ref(wrap(x)), ctypes.byref(p), ref(wrap(y)))
    return y


def _interpolate_backward(dy, x_shape, p):
    dx = empty(_shape(x_shape, "interpolate_backward", "input_shape", dy.ndim))
    call("sb_interpolate_backward", ref(wrap(dy)), ctypes.byref(p), ref(wrap(dx)))
    return dx


def interpolate(x, size, mode="nearest", align_corners=False, scales=None):
    """x (N, C, S...) with 1 to 3 spatial dims resampled to the spatial
    `size` (contract, Interpolation). mode: 'nearest', 'nearest-exact',
    'linear' (linear, bilinear, trilinear by rank) or 'cubic'; scales: None or
    PyTorch's scale_factor per axis as its kernel receives it."""
    xn = to_np(x, "interpolate", "x")
    p = _interp_params(mode, align_corners, scales, max(xn.ndim - 2, 0), "interpolate")
    return back(_interpolate(xn, tuple(size), p), kind_of(x))


def interpolate_backward(dy, input_shape, mode="nearest", align_corners=False, scales=None):
    """dx: each input the canonical sum of dy * weight over the (output, tap)
    pairs that read it, in row-major order."""
    dyn = to_np(dy, "interpolate_backward", "dy")
    p = _interp_params(mode, align_corners, scales, max(dyn.ndim - 2, 0), "interpolate_backward")
    return back(_interpolate_backward(dyn, input_shape, p), kind_of(dy))


_GRID_MODES = {"bilinear": _lib.SB_GRID_BILINEAR, "nearest": _lib.SB_GRID_NEAREST}
_GRID_PADDINGS = {"zeros": _lib.SB_GRID_ZEROS, "border": _lib.SB_GRID_BORDER,
                  "reflection": _lib.SB_GRID_REFLECTION}


def _grid_params(mode, padding_mode, align_corners, fn):
    if mode not in _GRID_MODES:
        raise ValueError("samebits.%s: mode must be one of %s, got %r"
                         % (fn, ", ".join(_GRID_MODES), mode))
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError("samebits.%s: padding_mode must be one of %s, got %r"
                         % (fn, ", ".join(_GRID_PADDINGS), padding_mode))
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError("samebits.%s: align_corners must be a bool, got %r" % (fn, align_corners))
    return _lib.GridSampleParams(_GRID_MODES[mode], _GRID_PADDINGS[padding_mode],
                                 bool(align_corners))


def _grid_sample(x, grid, p):
    if x.ndim != 4 or grid.ndim != 4:
        raise _lib.SamebitsError("samebits.grid_sample: x must be (N, C, H, W) and grid "
                                 "(N, OH, OW, 2), got %s and %s" % (x.shape, grid.shape))
    y = empty(_shape((x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]), "grid_sample",
                     "the output shape", 4))
    call("sb_grid_sample_forward", ref(wrap(x)), ref(wrap(grid)), ctypes.byref(p), ref(wrap(y)))
    return y


def _grid_sample_backward(dy, x, grid, p, need_dx=True, need_dgrid=True):
    dx = empty(x.shape) if need_dx else None
    dgrid = empty(grid.shape) if need_dgrid else None
    call("sb_grid_sample_backward", ref(wrap(dy)), ref(wrap(x)), ref(wrap(grid)),
         ctypes.byref(p), ref(wrap(dx)) if dx is not None else None,
         ref(wrap(dgrid)) if dgrid is not None else None)
    return dx, dgrid


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """x (N, C, H, W) sampled at grid (N, OH, OW, 2) (contract, Grid sampling)."""
    p = _grid_params(mode, padding_mode, align_corners, "grid_sample")
    return back(_grid_sample(to_np(x, "grid_sample", "x"), to_np(grid, "grid_sample", "grid"), p),
                kind_of(x))


def grid_sample_backward(dy, x, grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False):
    """(dx, dgrid): dx gathers weight * dy in grid order; dgrid is the
    canonical sum over channels (0 for nearest)."""
    fn = "grid_sample_backward"
    p = _grid_params(mode, padding_mode, align_corners, fn)
    dx, dgrid = _grid_sample_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"),
                                      to_np(grid, fn, "grid"), p)
    return back(dx, kind_of(dy)), back(dgrid, kind_of(dy))


def sum(x, dim=None, keepdim=False):  # noqa: A001 (mirrors torch.sum)
    """Canonical sum over `dim` (int, tuple, or None for all axes)."""
    return back(_reduce("sb_sum", to_np(x, "sum", "x"), dim, keepdim, "sum"), kind_of(x))


def mean(x, dim=None, keepdim=False):
    """Canonical sum / (float)count over `dim`."""
    return back(_reduce("sb_mean", to_np(x, "mean", "x"), dim, keepdim, "mean"), kind_of(x))


def sum_backward(dy, input_shape, dim=None, keepdim=False):
    return back(_reduce_backward("sb_sum_backward", to_np(dy, "sum_backward", "dy"),
                                 input_shape, dim, keepdim, "sum_backward"), kind_of(dy))


def mean_backward(dy, input_shape, dim=None, keepdim=False):
    return back(_reduce_backward("sb_mean_backward", to_np(dy, "mean_backward", "dy"),
                                 input_shape, dim, keepdim, "mean_backward"), kind_of(dy))


def cumsum(x, dim):
    """Running sum along dim: s = +0, then s = s + x[i] for i ascending, one
    float32 rounding each (PyTorch's CPU kernel keeps its running sum in
    float64, so results are close to torch.cumsum, not always equal)."""
    return back(_cumulative("sb_cumsum", to_np(x, "cumsum", "x"), dim, "cumsum"), kind_of(x))


def cumsum_backward(dy, dim):
    """dx for cumsum: the same chain over dy from the last index down."""
    return back(_cumulative("sb_cumsum_backward", to_np(dy, "cumsum_backward", "dy"), dim,
                            "cumsum_backward"), kind_of(dy))


def cumprod(x, dim):
    """Running product along dim: p = 1, then p = p * x[i], i ascending."""
    return back(_cumulative("sb_cumprod", to_np(x, "cumprod", "x"), dim, "cumprod"), kind_of(x))


def cumprod_backward(x, y, dy, dim):
    """dx for y = cumprod(x, dim): PyTorch's cumprod_backward (zeros
    included) with every reduction a sequential chain."""
    return back(_cumprod_backward(to_np(x, "cumprod_backward", "x"),
                                  to_np(y, "cumprod_backward", "y"),
                                  to_np(dy, "cumprod_backward", "dy"), dim), kind_of(x, y, dy))


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
    fn = "layer_norm"
    xn = to_np(x, fn, "x")
    nd = _normalized_ndim(xn.shape, normalized_shape, fn)
    y, _, _ = _layer_norm(xn, nd, _opt(weight, fn, "weight"), _opt(bias, fn, "bias"),
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


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """PyTorch's F.rms_norm: x * 1/sqrt(mean(x^2) + eps) [* weight] over the
    trailing normalized_shape; eps=None is float32's machine epsilon."""
    fn = "rms_norm"
    xn = to_np(x, fn, "x")
    nd = _normalized_ndim(xn.shape, normalized_shape, fn)
    y, _ = _rms_norm(xn, nd, _opt(weight, fn, "weight"), eps)
    return back(y, kind_of(x))


def rms_norm_backward(dy, x, normalized_ndim, weight, save_rrms):
    fn = "rms_norm_backward"
    r = _rms_norm_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), normalized_ndim,
                           _opt(weight, fn, "weight"), to_np(save_rrms, fn, "save_rrms"), True,
                           weight is not None)
    k = kind_of(dy, x)
    return tuple(None if v is None else back(v, k) for v in r)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    fn = "group_norm"
    y, _, _ = _group_norm(to_np(x, fn, "x"), num_groups, _opt(weight, fn, "weight"),
                          _opt(bias, fn, "bias"), eps)
    return back(y, kind_of(x))


def group_norm_backward(dy, x, num_groups, weight, save_mean, save_rstd):
    fn = "group_norm_backward"
    r = _group_norm_backward(to_np(dy, fn, "dy"), to_np(x, fn, "x"), num_groups,
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
            orig.copy_(to_torch(arr))
    else:
        orig[...] = arr


def _is_same_memory(orig, arr):
    if hasattr(orig, "data_ptr"):
        return orig.data_ptr() == data_ptr(arr)
    return isinstance(orig, np.ndarray) and orig.ctypes.data == arr.ctypes.data


# ---- index family: public forms ----

def gather(x, dim, index):
    """torch.gather: out[p] = x[p with p[dim] = index[p]] (bits copied)."""
    return back(_gather(to_np(x, "gather", "x"), dim, _index_np(index, "gather")), kind_of(x))


def gather_backward(dy, dim, index, input_shape):
    """dx for gather: dy scatter-added into zeros in ascending position."""
    return back(_gather_backward(to_np(dy, "gather_backward", "dy"), dim,
                                 _index_np(index, "gather_backward"), input_shape), kind_of(dy))


def scatter_add(x, dim, index, src):
    """torch.scatter_add (a new array): the terms of one destination are
    added in ascending source position, one rounding each."""
    return back(_scatter_add(to_np(x, "scatter_add", "x"), dim, _index_np(index, "scatter_add"),
                             to_np(src, "scatter_add", "src")), kind_of(x, src))


def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """torch.scatter_reduce (a new array): reduce is "sum", "prod", "mean",
    "amax" or "amin"; every destination's terms in ascending source
    position, one rounding each."""
    return back(_scatter_reduce(to_np(x, "scatter_reduce", "x"), dim,
                                _index_np(index, "scatter_reduce"),
                                to_np(src, "scatter_reduce", "src"), reduce, include_self),
                kind_of(x, src))


def index_select(x, dim, index):
    """torch.index_select (bits copied)."""
    return back(_index_select(to_np(x, "index_select", "x"), dim,
                              _index_np(index, "index_select")), kind_of(x))


def index_select_backward(dy, dim, index, input_shape):
    """dx for index_select: index_add of dy into zeros, i ascending."""
    return back(_index_select_backward(to_np(dy, "index_select_backward", "dy"), dim,
                                       _index_np(index, "index_select_backward"), input_shape),
                kind_of(dy))


def index_add(x, dim, index, source, alpha=1.0):
    """torch.index_add (a new array): slice i of source added to slice
    index[i] along dim, i ascending."""
    return back(_index_add(to_np(x, "index_add", "x"), dim, _index_np(index, "index_add"),
                           to_np(source, "index_add", "source"), alpha), kind_of(x, source))


# ---- selection: public forms ----

def _pair_back(pair, kind):
    return back(pair[0], kind), back(pair[1], kind)


def sort(x, dim=-1, descending=False):
    """(values, indices): each column along dim ordered, ties in ascending
    position (stable), -0 equal to +0, NaN the largest; values bit copies."""
    return _pair_back(_sort(to_np(x, "sort", "x"), dim, descending), kind_of(x))


def topk(x, k, dim=-1, largest=True):
    """(values, indices): the first k of each column in sort's order
    (descending when largest)."""
    return _pair_back(_topk(to_np(x, "topk", "x"), k, dim, largest), kind_of(x))


def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices): the k-th smallest (1-based) of each column."""
    return _pair_back(_kthvalue(to_np(x, "kthvalue", "x"), k, dim, keepdim), kind_of(x))


def median(x, dim, keepdim=False):
    """(values, indices): the lower middle of each column in ascending order,
    or its first NaN when it has one (PyTorch's rule)."""
    return _pair_back(_median(to_np(x, "median", "x"), dim, keepdim), kind_of(x))


def sort_backward(dy, dim, indices, input_shape):
    """dx for sort, topk, kthvalue and median: +0, dy's bits at indices."""
    return back(_sort_backward(to_np(dy, "sort_backward", "dy"), dim,
                               _index_np(indices, "sort_backward", "indices"), input_shape),
                kind_of(dy))


# ---- counting: public forms ----

def bincount(x, weights=None, minlength=0):
    """torch.bincount: counts (int64) of each value of the non-negative
    integer 1-D x, or float32 sums of the weights, each bin's weights added
    in ascending position."""
    w = to_np(weights, "bincount", "weights") if weights is not None else None
    return back(_bincount(_index_np(x, "bincount", "x"), w, minlength), kind_of(x))


def histc(x, bins=100, min=0.0, max=0.0):  # noqa: A002 (torch's names)
    """torch.histc (PyTorch 2.x's bin rule): float32 counts of x's elements
    in bins equal bins of [min, max]; min == max takes x's own range."""
    return back(_histc(to_np(x, "histc", "x"), bins, min, max), kind_of(x))


# Every public op is one op scope: its operands' device is its results'.
for _name in __all__:
    globals()[_name] = op_scope(globals()[_name])
del _name
