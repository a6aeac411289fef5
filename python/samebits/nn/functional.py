"""samebits.nn.functional: differentiable samebits ops for PyTorch.

Each function here is a torch.autograd.Function whose forward AND backward
call libsamebits (the same C functions the C autograd uses), so a model built
from them computes the contract's bits in both directions, on any machine
and thread count. Arguments follow torch.nn.functional's.

Gradient accumulation stays PyTorch's: a tensor used by several ops gets the
sum of their gradients in the order PyTorch's engine adds them, which the
samebits contract does not fix (the C autograd adds them in reverse tape
order). Sequential models, where every activation has one consumer, are
exact; parameters get .grad written by the first backward (use
zero_grad(set_to_none=True), the samebits optimizers' default).
"""
import ctypes
import operator

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from .. import _lib
from .. import ops as _ops
from .._convert import (to_np, to_np_index, to_torch, dense, broadcast_dense, tile, like_operands,
                        op_scope, on_device_of, host_only)

__all__ = ["linear", "conv2d", "conv1d", "conv_transpose2d", "conv_transpose1d", "pad",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample",
           "affine_grid",
           "max_pool2d", "avg_pool2d", "adaptive_max_pool2d",
           "adaptive_avg_pool2d", "relu", "relu6", "hardtanh", "hardsigmoid", "hardswish", "silu", "leaky_relu", "softplus", "tanh", "sigmoid", "gelu",
           "elu", "selu", "celu", "mish", "logsigmoid", "hardshrink", "softshrink", "threshold",
           "prelu", "softsign", "tanhshrink",
           "softmax", "log_softmax", "cross_entropy", "nll_loss", "ctc_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
           "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "batch_norm", "layer_norm",
           "rms_norm", "group_norm", "instance_norm",
           "dropout", "mm", "div", "sqrt", "exp", "log", "sum", "mean", "cumsum", "cumprod",
           "gather", "index_select", "scatter_add", "index_add", "scatter_reduce", "embedding",
           "embedding_bag", "bincount", "histc",
           "sort", "argsort", "msort", "topk", "kthvalue", "median",
           "scaled_dot_product_attention"]


_t = to_torch


def _np(x, fn, name):
    return None if x is None else to_np(x, fn, name)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        return _t(_ops._linear(to_np(x, "linear", "input"), to_np(w, "linear", "weight"),
                               _np(b, "linear", "bias")))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        dx, dw, db = _ops._linear_backward(to_np(dy, "linear", "grad"), to_np(x, "linear", "input"),
                                           to_np(w, "linear", "weight"), nx, nw,
                                           nb and ctx.has_bias)
        return _t(dx), _t(dw), _t(db)


def linear(input, weight, bias=None):
    return _Linear.apply(input, weight, bias)


class _Conv2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups):
        p = _ops._conv_params(stride, padding, dilation, groups)
        ctx.save_for_backward(x, w)
        ctx.p = p
        ctx.has_bias = b is not None
        return _t(_ops._conv2d(to_np(x, "conv2d", "input"), to_np(w, "conv2d", "weight"),
                               _np(b, "conv2d", "bias"), p))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        dx, dw, db = _ops._conv2d_backward(to_np(dy, "conv2d", "grad"), to_np(x, "conv2d", "input"),
                                           to_np(w, "conv2d", "weight"), ctx.p, nx, nw,
                                           nb and ctx.has_bias)
        return _t(dx), _t(dw), _t(db), None, None, None, None


def _same_padding(weight, stride, dilation, fn):
    """padding='same' as PyTorch resolves it: per axis the total
    dilation*(k-1), its floor half before and the rest after. Returns the
    symmetric part (for the convolution) and the extra (right, bottom) zeros
    an odd total leaves, which an explicit zero pad adds first."""
    sh, sw = (stride, stride) if isinstance(stride, int) else tuple(stride)
    if (sh, sw) != (1, 1):
        raise ValueError("samebits.nn.functional.%s: padding='same' needs stride 1, got %r"
                         % (fn, stride))
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
    th, tw = dh * (weight.shape[2] - 1), dw * (weight.shape[3] - 1)
    return (th // 2, tw // 2), (tw % 2, th % 2)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """padding may be ints, 'valid' (0) or 'same' (stride 1): an even total
    pads symmetrically inside the convolution, an odd one adds its extra
    zero column/row on the right/bottom with pad() first, as PyTorch does;
    zero taps are +0 terms of the chain either way (contract, conv2d)."""
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            padding, (extra_w, extra_h) = _same_padding(weight, stride, dilation, "conv2d")
            if extra_w or extra_h:
                input = pad(input, (0, extra_w, 0, extra_h))
        else:
            raise ValueError("samebits.nn.functional.conv2d: padding must be ints, 'valid' or "
                             "'same', got %r" % (padding,))
    return _Conv2d.apply(input, weight, bias, stride, padding, dilation, groups)


def _single(v, fn, name):
    """The int of a 1-D parameter given as an int or a 1-tuple."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise ValueError("samebits.nn.functional.%s: %s must be an int or a 1-tuple, got %r"
                             % (fn, name, v))
        v = v[0]
    return v


def _check_1d(input, weight, fn):
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise TypeError("samebits.nn.functional.%s: input and weight must be torch.Tensors"
                        % fn)
    if weight.dim() != 3:
        raise ValueError("samebits.nn.functional.%s: weight must be 3-D, got shape %s"
                         % (fn, tuple(weight.shape)))
    if input.dim() not in (2, 3):
        raise ValueError("samebits.nn.functional.%s: input must be (N, C, L) or (C, L), got "
                         "shape %s" % (fn, tuple(input.shape)))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The conv2d of input (N, C, L) viewed as (N, C, 1, L) with weight
    (O, C/groups, K) viewed as (O, C/groups, 1, K) (contract section 7,
    conv1d): exact views, so the chains are conv2d's at height 1. padding
    may be an int, 'valid' or 'same'; an unbatched (C, L) input works too."""
    _check_1d(input, weight, "conv1d")
    if input.dim() == 2:
        return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                      groups).squeeze(0)
    if not isinstance(padding, str):
        padding = (0, _single(padding, "conv1d", "padding"))
    y = conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias,
               (1, _single(stride, "conv1d", "stride")), padding,
               (1, _single(dilation, "conv1d", "dilation")), groups)
    return y.squeeze(2)


class _ConvTranspose2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, p):
        ctx.save_for_backward(x, w)
        ctx.p = p
        ctx.has_bias = b is not None
        fn = "conv_transpose2d"
        return _t(_ops._conv_transpose2d(to_np(x, fn, "input"), to_np(w, fn, "weight"),
                                         _np(b, fn, "bias"), p))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        fn = "conv_transpose2d"
        dx, dw, db = _ops._conv_transpose2d_backward(to_np(dy, fn, "grad"), to_np(x, fn, "input"),
                                                     to_np(w, fn, "weight"), ctx.p, nx, nw,
                                                     nb and ctx.has_bias)
        return _t(dx), _t(dw), _t(db), None


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose2d (same argument order: groups
    before dilation): input (N, C, H, W) or (C, H, W), weight
    (C, O/groups, KH, KW); output_padding < stride or < dilation."""
    if isinstance(input, torch.Tensor) and input.dim() == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    if isinstance(padding, str):
        raise ValueError("samebits.nn.functional.conv_transpose2d: padding must be ints, got %r"
                         % (padding,))
    p = _ops._conv_transpose_params(stride, padding, output_padding, dilation, groups)
    return _ConvTranspose2d.apply(input, weight, bias, p)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """conv_transpose2d at height 1 (input (N, C, L) or (C, L), weight
    (C, O/groups, K)), as conv1d is conv2d at height 1."""
    _check_1d(input, weight, "conv_transpose1d")
    if input.dim() == 2:
        return conv_transpose1d(input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    fn = "conv_transpose1d"
    y = conv_transpose2d(input.unsqueeze(2), weight.unsqueeze(2), bias,
                         (1, _single(stride, fn, "stride")), (0, _single(padding, fn, "padding")),
                         (0, _single(output_padding, fn, "output_padding")), groups,
                         (1, _single(dilation, fn, "dilation")))
    return y.squeeze(2)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad over the last one (len(pad) == 2) or two
    (len(pad) == 4) dims, pads >= 0: every output a bit copy of an input
    element or `value` (constant mode); the backward sums the gradients of an
    input's copies with the canonical sum in output order (contract,
    Padding), where PyTorch's reflect/replicate backward adds them in an
    order that depends on the device."""
    fn = "pad"
    if not isinstance(pad, (tuple, list)) or len(pad) not in (2, 4):
        raise NotImplementedError("samebits.nn.functional.pad: pad %r must pad the last one or "
                                  "two dims (2 or 4 values)" % (pad,))
    if mode != "constant" and value not in (None, 0, 0.0):
        raise ValueError('samebits.nn.functional.pad: padding mode "%s" doesn\'t take in value '
                         "argument" % mode)
    two = len(pad) == 4
    if not isinstance(input, torch.Tensor):
        raise TypeError("samebits.nn.functional.pad: input must be a torch.Tensor, got %s"
                        % type(input).__name__)
    if input.dim() < (2 if two else 1):
        raise ValueError("samebits.nn.functional.pad: input of %d dims cannot be padded over its "
                         "last %d" % (input.dim(), 2 if two else 1))
    sides = tuple(pad) if two else tuple(pad) + (0, 0)
    p = _ops._pad_params(sides, mode, value, fn)
    h = input.shape[-2] if two else 1
    planes = 1
    for d in input.shape[:-2 if two else -1]:
        planes *= d
    return _PadFn.apply(input, p, (planes, 1, h, input.shape[-1]), two)


class _PadFn(torch.autograd.Function):
    """x viewed as (planes, 1, H, W) (H = 1 when one dim is padded)."""

    @staticmethod
    def forward(ctx, x, p, shape4, two):
        xn = to_np(x, "pad", "input")
        ctx.p, ctx.shape, ctx.shape4 = p, tuple(x.shape), shape4
        y = _ops._pad2d(xn.reshape(shape4), p)
        lead = tuple(x.shape[:-2] if two else x.shape[:-1])
        return _t(y.reshape(lead + (y.shape[2:] if two else (y.shape[3],))))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        oh = ctx.shape4[2] + ctx.p.top + ctx.p.bottom
        ow = ctx.shape4[3] + ctx.p.left + ctx.p.right
        dyn = to_np(dy, "pad", "grad").reshape(ctx.shape4[:2] + (oh, ow))
        return _t(_ops._pad2d_backward(dyn, ctx.shape4, ctx.p).reshape(ctx.shape)), None, None, None


# F.interpolate's modes: the samebits mode and the spatial rank each needs
# (None: any of 1 to 3).
_INTERP = {"nearest": ("nearest", None), "nearest-exact": ("nearest-exact", None),
           "linear": ("linear", 1), "bilinear": ("linear", 2), "trilinear": ("linear", 3),
           "bicubic": ("cubic", 2), "area": (None, None)}


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, dim):
    """PyTorch's output size and the scales its kernel receives: with
    scale_factor, each size is floor(float(in) * scale) and the scales go to
    the kernel, unless recompute_scale_factor (then None: in / out)."""
    fn = "samebits.nn.functional.interpolate"
    if size is not None and scale_factor is not None:
        raise ValueError("%s: only one of size or scale_factor should be defined" % fn)
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("%s: recompute_scale_factor is not meaningful with an explicit size"
                             % fn)
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * dim
        if len(sizes) != dim:
            raise ValueError("%s: size %r must have %d values for a %d-D input"
                             % (fn, size, dim, dim + 2))
        for v in sizes:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError("%s: size %r must hold positive ints" % (fn, size))
        return [int(v) for v in sizes], None
    if scale_factor is None:
        raise ValueError("%s: either size or scale_factor should be defined" % fn)
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) \
        else [scale_factor] * dim
    if len(scales) != dim:
        raise ValueError("%s: scale_factor %r must have %d values for a %d-D input"
                         % (fn, scale_factor, dim, dim + 2))
    scales = [float(v) for v in scales]
    if not all(np.isfinite(v) and v > 0 for v in scales):
        raise ValueError("%s: scale_factor %r must hold positive finite numbers"
                         % (fn, scale_factor))
    sizes = [int(np.floor(float(input.shape[2 + i]) * scales[i])) for i in range(dim)]
    return sizes, (None if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate with the contract's bits (section 8,
    "Interpolation"): nearest, nearest-exact, linear (3-D), bilinear and
    bicubic (4-D), trilinear (5-D), and area (adaptive average pooling,
    3-D and 4-D). The forward is PyTorch's CPU formula without fused
    multiply-adds; the backward gathers each input's contributions with the
    canonical sum in output order instead of PyTorch's scatter-add."""
    fn = "samebits.nn.functional.interpolate"
    if not isinstance(input, torch.Tensor):
        raise TypeError("%s: input must be a torch.Tensor, got %s" % (fn, type(input).__name__))
    if mode not in _INTERP:
        raise NotImplementedError("%s: mode %r is not supported (one of %s)"
                                  % (fn, mode, ", ".join(_INTERP)))
    sb_mode, rank = _INTERP[mode]
    dim = input.dim() - 2
    if dim not in (1, 2, 3) or (rank is not None and dim != rank):
        raise NotImplementedError("%s: mode %r takes %s input, got %d-D"
                                  % (fn, mode, "%d-D" % (rank + 2) if rank else "3-D to 5-D",
                                     input.dim()))
    interpolating = sb_mode in ("linear", "cubic")
    if align_corners is not None and not isinstance(align_corners, bool):
        raise TypeError("%s: align_corners must be a bool or None, got %r" % (fn, align_corners))
    if align_corners is not None and not interpolating:
        raise ValueError("%s: align_corners option can only be set with the interpolating "
                         "modes: linear | bilinear | bicubic | trilinear" % fn)
    if antialias:
        raise NotImplementedError("%s: antialias=True is not supported" % fn)
    sizes, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor, dim)
    if mode == "area":  # PyTorch: adaptive average pooling to the output size
        if dim == 1:
            y = adaptive_avg_pool2d(input.unsqueeze(2), (1, sizes[0]))
            return y.squeeze(2)
        if dim == 2:
            return adaptive_avg_pool2d(input, tuple(sizes))
        raise NotImplementedError("%s: mode 'area' takes 3-D or 4-D input, got 5-D" % fn)
    p = _ops._interp_params(sb_mode, bool(align_corners) if interpolating else False, scales,
                            dim, "nn.functional.interpolate")
    return _InterpolateFn.apply(input, tuple(sizes), p)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """torch.nn.functional.upsample (PyTorch's deprecated name of interpolate)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


class _InterpolateFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, sizes, p):
        ctx.p, ctx.shape = p, tuple(x.shape)
        return _t(_ops._interpolate(to_np(x, "interpolate", "input"), sizes, p))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dyn = to_np(dy, "interpolate", "grad")
        return _t(_ops._interpolate_backward(dyn, ctx.shape, ctx.p)), None, None


_GRID_MODES = ("bilinear", "nearest")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch.nn.functional.grid_sample for 4-D input (contract section 8,
    "Grid sampling"): bilinear or nearest, zeros / border / reflection
    padding. The backward gathers dx with the canonical sum in grid order and
    sums dgrid over channels with it, where PyTorch scatter-adds."""
    fn = "samebits.nn.functional.grid_sample"
    for name, v in (("input", input), ("grid", grid)):
        if not isinstance(v, torch.Tensor):
            raise TypeError("%s: %s must be a torch.Tensor, got %s" % (fn, name, type(v).__name__))
    if input.dim() != 4:
        raise NotImplementedError("%s: only 4-D input (N, C, H, W) is supported, got %d-D"
                                  % (fn, input.dim()))
    if mode not in _GRID_MODES:
        raise NotImplementedError("%s: mode %r is not supported (bilinear or nearest)"
                                  % (fn, mode))
    if align_corners is not None and not isinstance(align_corners, bool):
        raise TypeError("%s: align_corners must be a bool or None, got %r" % (fn, align_corners))
    p = _ops._grid_params(mode, padding_mode, bool(align_corners), "nn.functional.grid_sample")
    return _GridSampleFn.apply(input, grid, p)


class _GridSampleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, grid, p):
        ctx.p = p
        ctx.save_for_backward(x, grid)
        return _t(_ops._grid_sample(to_np(x, "grid_sample", "input"),
                                    to_np(grid, "grid_sample", "grid"), p))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, grid = ctx.saved_tensors
        nx, ng = ctx.needs_input_grad[:2]
        dx, dgrid = _ops._grid_sample_backward(
            to_np(dy, "grid_sample", "grad"), to_np(x, "grid_sample", "input"),
            to_np(grid, "grid_sample", "grid"), ctx.p, nx, ng)
        return _t(dx), _t(dgrid), None


def _base_coords(steps, align_corners):
    """PyTorch's linspace_from_neg_one in float32: linspace(-1, 1, steps)
    (step = 2 / (steps - 1); the first half -1 + step * i, the second
    1 - step * (steps - 1 - i)), times (steps - 1) then divided by steps
    without align_corners; one step is 0."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dtype=np.float32)
    f = np.float32
    step = f(2.0) / f(steps - 1)
    i = np.arange(steps)
    half = steps // 2
    r = np.where(i < half, f(-1.0) + step * i.astype(np.float32),
                 f(1.0) - step * (steps - 1 - i).astype(np.float32)).astype(np.float32)
    if not align_corners:
        r = (r * f(steps - 1)).astype(np.float32) / f(steps)
    return r.astype(np.float32)


def affine_grid(theta, size, align_corners=None):
    """torch.nn.functional.affine_grid for 4-D sizes: grid = base @ theta^T
    per batch entry, base the (x, y, 1) points of PyTorch's coordinates, the
    product a samebits matrix product (one fmaf chain over the 3 terms per
    output), whose backward gives theta's gradient."""
    fn = "samebits.nn.functional.affine_grid"
    if not isinstance(theta, torch.Tensor):
        raise TypeError("%s: theta must be a torch.Tensor, got %s" % (fn, type(theta).__name__))
    if not isinstance(size, (tuple, list, torch.Size)) or len(size) != 4:
        raise NotImplementedError("%s: size must be a 4-D (N, C, H, W) size, got %r" % (fn, size))
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in size):
        raise ValueError("%s: size %r must hold ints" % (fn, tuple(size)))
    n, _, h, w = (int(v) for v in size)
    if min(n, h, w) < 1:
        raise ValueError("%s: size %r must be positive" % (fn, tuple(size)))
    if theta.dim() != 3 or tuple(theta.shape) != (n, 2, 3):
        raise ValueError("%s: theta must be (N, 2, 3) = (%d, 2, 3) for size %r, got %s"
                         % (fn, n, tuple(size), tuple(theta.shape)))
    if align_corners is not None and not isinstance(align_corners, bool):
        raise TypeError("%s: align_corners must be a bool or None, got %r" % (fn, align_corners))
    xs, ys = _base_coords(w, bool(align_corners)), _base_coords(h, bool(align_corners))
    base = np.empty((n, h, w, 3), dtype=np.float32)
    base[..., 0] = xs[None, None, :]
    base[..., 1] = ys[None, :, None]
    base[..., 2] = 1.0
    grid = mm(on_device_of(base.reshape(n, h * w, 3), theta, fn, "theta"), theta, trans_b=True)
    return grid.reshape(n, h, w, 2)


class _MaxPool2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p):
        y, idx = _ops._max_pool2d(to_np(x, "max_pool2d", "input"), p)
        ctx.p, ctx.shape = p, tuple(x.shape)
        it = _t(idx)
        ctx.save_for_backward(it)
        ctx.mark_non_differentiable(it)
        return _t(y), it

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, _didx):
        (idx,) = ctx.saved_tensors
        return _t(_ops._max_pool2d_backward(to_np(dy, "max_pool2d", "grad"),
                                            to_np_index(idx, "max_pool2d", "indices"),
                                            ctx.shape, ctx.p)), None


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """First NaN, else first maximum of each window (PyTorch returns the
    last NaN, so its indices and gradients can differ); the backward sums
    with the canonical sum, keeping a -0.0 gradient (PyTorch's scatter-add
    into zeros turns it into +0.0)."""
    p = _ops._pool_params(kernel_size, stride, padding, ceil_mode, True, "max_pool2d", dilation)
    y, idx = _MaxPool2d.apply(input, p)
    return (y, idx) if _ops._flag(return_indices, "max_pool2d", "return_indices") else y


class _AvgPool2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p):
        xn = to_np(x, "avg_pool2d", "input")
        ctx.p, ctx.shape = p, xn.shape
        return _t(_ops._avg_pool2d(xn, p))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        return _t(_ops._avg_pool2d_backward(to_np(dy, "avg_pool2d", "grad"), ctx.shape, ctx.p)), None


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """divisor_override, when given, divides every window's canonical sum
    (one IEEE division), padded windows included, as PyTorch does."""
    p = _ops._pool_params(kernel_size, stride, padding, ceil_mode, count_include_pad, "avg_pool2d",
                          divisor_override=divisor_override)
    return _AvgPool2d.apply(input, p)


class _AdaptiveMaxPool2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, output_size):
        y, idx = _ops._adaptive_max_pool2d(to_np(x, "adaptive_max_pool2d", "input"), output_size)
        ctx.shape = tuple(x.shape)
        it = _t(idx)
        ctx.save_for_backward(it)
        ctx.mark_non_differentiable(it)
        return _t(y), it

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, _didx):
        (idx,) = ctx.saved_tensors
        return _t(_ops._adaptive_max_pool2d_backward(to_np(dy, "adaptive_max_pool2d", "grad"),
                                                     to_np_index(idx, "adaptive_max_pool2d",
                                                                 "indices"), ctx.shape)), None


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's windows (rows floor(r*H/OH) .. ceil((r+1)*H/OH)-1); first NaN,
    else first maximum of each window, as max_pool2d."""
    y, idx = _AdaptiveMaxPool2d.apply(input, output_size)
    return (y, idx) if _ops._flag(return_indices, "adaptive_max_pool2d", "return_indices") else y


class _AdaptiveAvgPool2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, output_size):
        xn = to_np(x, "adaptive_avg_pool2d", "input")
        ctx.shape = xn.shape
        return _t(_ops._adaptive_avg_pool2d(xn, output_size))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        return _t(_ops._adaptive_avg_pool2d_backward(to_np(dy, "adaptive_avg_pool2d", "grad"),
                                                     ctx.shape)), None


def adaptive_avg_pool2d(input, output_size):
    """Canonical sum of each of PyTorch's windows, divided by its size."""
    return _AdaptiveAvgPool2d.apply(input, output_size)


class _Activation(torch.autograd.Function):
    """y = f(x); the backward reads x or y, whichever the contract names.
    in_place: y is written over x's own memory and x is marked dirty; the
    backward then reads x itself (holding y) when it reads y or when y
    serves as x (_Y_SERVES_AS_X), else a copy of x taken before."""

    @staticmethod
    def forward(ctx, x, name, extra, in_place=False):
        fwd, bwd, use_y = _ACT[name]
        xa = to_np(x, name, "input")
        ctx.name, ctx.extra = name, extra
        if in_place:
            keep_x = not use_y and name not in _Y_SERVES_AS_X
            saved = x.clone() if keep_x else x
            _ops._map(fwd, xa, *extra, out=xa)
            ctx.mark_dirty(x)
            ctx.save_for_backward(saved)
            return x
        yt = _t(_ops._map(fwd, xa, *extra))
        ctx.save_for_backward(yt if use_y else x)
        return yt

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        fwd, bwd, use_y = _ACT[ctx.name]
        (saved,) = ctx.saved_tensors
        extra = ctx.extra[:_BACKWARD_EXTRA.get(ctx.name, len(ctx.extra))]
        dx = _ops._map_backward(bwd, to_np(saved, ctx.name, "saved"),
                                to_np(dy, ctx.name, "grad"), *extra)
        return _t(dx), None, None, None


# Activations that in place under autograd overwrite x and save it, as y,
# for the backward: relu, whose backward written over x (contract section 9)
# gives the same bits from y = relu(x) (x <= 0 exactly when y <= 0: y = +0
# there and y = x > 0 elsewhere; a NaN x is its own y and fails both). That
# is also PyTorch's relu_, which saves its result: modifying it in place
# afterwards is refused in both. hardtanh's backward could read y as well
# (min < x < max exactly when min < y < max), but PyTorch's hardtanh_ (and
# so ReLU6(inplace=True)) lets its result be modified in place afterwards
# (Hardswish(inplace=True) after it), which saving it would refuse.
_Y_SERVES_AS_X = {"relu"}


_ACT = {
    "relu": ("sb_relu_forward", "sb_relu_backward", False),
    "tanh": ("sb_tanh_forward", "sb_tanh_backward", True),
    "sigmoid": ("sb_sigmoid_forward", "sb_sigmoid_backward", True),
    "gelu": ("sb_gelu_forward", "sb_gelu_backward", False),
    "hardtanh": ("sb_hardtanh_forward", "sb_hardtanh_backward", False),
    "hardsigmoid": ("sb_hardsigmoid_forward", "sb_hardsigmoid_backward", False),
    "hardswish": ("sb_hardswish_forward", "sb_hardswish_backward", False),
    "silu": ("sb_silu_forward", "sb_silu_backward", False),
    "leaky_relu": ("sb_leaky_relu_forward", "sb_leaky_relu_backward", False),
    "softplus": ("sb_softplus_forward", "sb_softplus_backward", False),
    "elu": ("sb_elu_forward", "sb_elu_backward", False),
    "mish": ("sb_mish_forward", "sb_mish_backward", False),
    "logsigmoid": ("sb_logsigmoid_forward", "sb_logsigmoid_backward", False),
    "hardshrink": ("sb_hardshrink_forward", "sb_hardshrink_backward", False),
    "softshrink": ("sb_softshrink_forward", "sb_softshrink_backward", False),
    "threshold": ("sb_threshold_forward", "sb_threshold_backward", False),
}
# The backward takes fewer parameters than the forward (threshold's value).
_BACKWARD_EXTRA = {"threshold": 1}


# torch >= 2.1: tells autograd that a tensor's memory was written behind its
# back, as an in-place torch op would (1.13 has no way to)
_BUMP_VERSION = getattr(getattr(torch.autograd, "graph", None), "increment_version", None)


def _maybe_inplace(input, name, extra, inplace, fn):
    """inplace=True is honoured. A dense CPU input is overwritten by the
    kernel itself, as in PyTorch: with grad mode off, in one pass (its
    version counter bumped, so that a graph that saved it still refuses to
    use the new bits); under autograd (not a view, not a leaf that requires
    grad), marked dirty, with the backward reading the overwritten input
    (relu, _Y_SERVES_AS_X) or a copy of it taken first. Other inputs: an
    exact clone computed out of place, then copied back into input, which
    autograd records as a copy (PyTorch's own rules then apply: a leaf
    that requires grad is refused; its gradient meets the copy's +0 for the
    overwritten value, so a -0 gradient comes out +0 there)."""
    if not _ops._flag(inplace, fn, "inplace"):
        return _Activation.apply(input, name, extra)
    dense = input.dtype == torch.float32 and input.device.type == "cpu" and \
        input.is_contiguous() and not input.is_sparse
    if dense and _BUMP_VERSION is not None and not torch.is_grad_enabled():
        x = to_np(input, fn, "input")  # a view of input's memory
        _ops._map(_ACT[name][0], x, *extra, out=x)
        _BUMP_VERSION(input)
        return input
    if dense and input._base is None and not (input.is_leaf and input.requires_grad):
        _Activation.apply(input, name, extra, True)  # input is rebased onto it
        return input
    y = _Activation.apply(input.clone(), name, extra)
    return input.copy_(y)


def relu(input, inplace=False):
    """max(x, +0) with relu(-0) = +0 and dx = +0 where x <= 0 (PyTorch's
    relu keeps -0.0: one of the reasons conversion replaces nn.ReLU).
    inplace=True is honoured as for hardtanh (_maybe_inplace)."""
    return _maybe_inplace(input, "relu", (), inplace, "nn.functional.relu")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (NaN, and -0 inside the range, kept);
    the gradient is dy strictly inside, +0 at the kinks and beyond."""
    fn = "nn.functional.hardtanh"
    return _maybe_inplace(input, "hardtanh", _ops._hardtanh_range(min_val, max_val, fn), inplace,
                          fn)


def relu6(input, inplace=False):
    """hardtanh(input, 0, 6)."""
    return _maybe_inplace(input, "hardtanh", (0.0, 6.0), inplace, "nn.functional.relu6")


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(input, "hardsigmoid", (), inplace, "nn.functional.hardsigmoid")


def hardswish(input, inplace=False):
    return _maybe_inplace(input, "hardswish", (), inplace, "nn.functional.hardswish")


def silu(input, inplace=False):
    """x / (1 + exp(-x)) (one rounding fewer than x * sigmoid(x))."""
    return _maybe_inplace(input, "silu", (), inplace, "nn.functional.silu")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x > 0 ? x : x * negative_slope; the gradient at 0 is dy * negative_slope."""
    fn = "nn.functional.leaky_relu"
    return _maybe_inplace(input, "leaky_relu",
                          (_ops._slope(negative_slope, "sb_leaky_relu_forward", 1, fn),), inplace,
                          fn)


def softplus(input, beta=1.0, threshold=20.0):
    """The identity where x * beta > threshold, else log1p(exp(x * beta)) / beta."""
    fn = "nn.functional.softplus"
    return _Activation.apply(input, "softplus",
                             _ops._softplus_args(beta, threshold, "sb_softplus_forward", 1, fn))


def elu(input, alpha=1.0, inplace=False):
    """x > 0 ? x : expm1(x) * alpha (PyTorch's elu kernel with scale 1)."""
    fn = "nn.functional.elu"
    return _maybe_inplace(input, "elu", _ops._elu_args(alpha, 1.0, 1.0, "sb_elu_forward", 1, fn),
                          inplace, fn)


def selu(input, inplace=False):
    """elu with SELU's alpha and scale rounded to float32."""
    fn = "nn.functional.selu"
    return _maybe_inplace(input, "elu", _ops._elu_args(_ops.SELU_ALPHA, _ops.SELU_SCALE, 1.0,
                                                       "sb_elu_forward", 1, fn), inplace, fn)


def celu(input, alpha=1.0, inplace=False):
    """elu with (alpha, 1, 1 / alpha) as PyTorch's celu."""
    fn = "nn.functional.celu"
    return _maybe_inplace(input, "elu", _ops._celu_args(alpha, "sb_elu_forward", 1, fn), inplace,
                          fn)


def mish(input, inplace=False):
    """x * tanh(log1p(exp(x)))."""
    return _maybe_inplace(input, "mish", (), inplace, "nn.functional.mish")


def logsigmoid(input):
    """min(x, 0) - log1p(exp(-|x|))."""
    return _Activation.apply(input, "logsigmoid", ())


def hardshrink(input, lambd=0.5):
    fn = "nn.functional.hardshrink"
    return _Activation.apply(input, "hardshrink",
                             (_ops._lambd(lambd, "sb_hardshrink_forward", 1, fn),))


def softshrink(input, lambd=0.5):
    fn = "nn.functional.softshrink"
    return _Activation.apply(input, "softshrink",
                             (_ops._lambd(lambd, "sb_softshrink_forward", 1, fn),))


def threshold(input, threshold, value, inplace=False):
    """value where x <= threshold, x elsewhere; dx = +0 where x <= threshold."""
    fn = "nn.functional.threshold"
    return _maybe_inplace(input, "threshold",
                          _ops._threshold_args(threshold, value, "sb_threshold_forward", fn),
                          inplace, fn)


def softsign(input):
    """x / (|x| + 1), PyTorch's own composition of three samebits ops (abs,
    add, div); the backward is theirs, summed by autograd."""
    one = torch.tensor(1.0, dtype=torch.float32)
    return _Binary.apply(input, _Binary.apply(_Unary.apply(input, "abs"), one, "add"), "div")


def tanhshrink(input):
    """x - tanh(x), PyTorch's own composition (sub of samebits' tanh)."""
    return _Binary.apply(input, tanh(input), "sub")


def tanh(input):
    return _Activation.apply(input, "tanh", ())


def sigmoid(input):
    return _Activation.apply(input, "sigmoid", ())


def gelu(input, approximate="none"):
    return _Activation.apply(input, "gelu", (_ops._gelu_flag(approximate),))


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, log):
        names = ("sb_log_softmax_forward", "sb_log_softmax_backward") if log else \
            ("sb_softmax_forward", "sb_softmax_backward")
        fn = "log_softmax" if log else "softmax"
        y = _t(_ops._softmax(names[0], to_np(x, fn, "input"), dim, fn))
        ctx.dim, ctx.bwd = dim, names[1]
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _t(_ops._softmax_backward(ctx.bwd, to_np(y, "softmax", "output"),
                                         to_np(dy, "softmax", "grad"), ctx.dim)), None, None


def _dim(dim, fn):
    if dim is None:
        raise ValueError("samebits.nn.functional.%s: pass dim explicitly (PyTorch's implicit "
                         "dim choice is deprecated)" % fn)
    return _lib.arg_int(dim, "sb_softmax_forward", 1, "nn.functional." + fn, "dim")


def softmax(input, dim=None, dtype=None):
    if dtype is not None:
        raise NotImplementedError("samebits.nn.functional.softmax: dtype= is not supported")
    return _Softmax.apply(input, _dim(dim, "softmax"), False)


def log_softmax(input, dim=None, dtype=None):
    if dtype is not None:
        raise NotImplementedError("samebits.nn.functional.log_softmax: dtype= is not supported")
    return _Softmax.apply(input, _dim(dim, "log_softmax"), True)


class _ClassLoss(torch.autograd.Function):
    """Cross-entropy and NLL, class weights and K dimensions: one C entry point
    (sb_class_loss_*), the kind in `params`. The weight gets no gradient (as
    in PyTorch)."""

    @staticmethod
    def forward(ctx, x, target, weight, params, red, name):
        fn = "nn.functional." + name
        tn = to_np_index(target, name, "target")
        nw = None if weight is None else to_np(weight, fn, "weight")
        ctx.save_for_backward(x)
        ctx.saved = (tn, nw)
        ctx.params, ctx.red, ctx.name = params, red, name
        return _t(_ops._class_loss(params, to_np(x, fn, "input"), tn, nw, red))

    @staticmethod
    @once_differentiable
    def backward(ctx, dloss):
        (x,) = ctx.saved_tensors
        tn, nw = ctx.saved
        fn = "nn.functional." + ctx.name
        if ctx.needs_input_grad[2]:
            raise NotImplementedError("samebits.%s: the gradient of weight is not supported "
                                      "(PyTorch has none either)" % fn)
        d = _ops._class_loss_backward(ctx.params, to_np(x, fn, "input"), tn, nw, ctx.red,
                                      to_np(dloss, fn, "grad"))
        return _t(d), None, None, None, None, None


def _class_loss(name, kind, input, target, weight, size_average, reduce, ignore_index,
                reduction, label_smoothing=0.0):
    _no_legacy(name, size_average, reduce)
    fn = "nn.functional." + name
    params = _ops._class_params(kind, label_smoothing, ignore_index, fn)
    red = _ops._reduction(reduction, name)
    if getattr(input, "dim", None) is not None and input.dim() == 1:
        # unbatched (C) against a 0-d target: one row, as PyTorch
        out = _ClassLoss.apply(input.unsqueeze(0), target.unsqueeze(0), weight, params, red,
                               name)
        return out.squeeze(0) if red == 0 else out
    return _ClassLoss.apply(input, target, weight, params, red, name)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits (N, C), (N, C, d1, ..., dk) or (C) against class
    indices; class weights (C) and label smoothing as PyTorch's weighted formula
    (contract section 11, "Class weights and K-dimensional inputs"); or against
    class probabilities (a float32 target of the input's shape; ignore_index
    does not apply), see _probability_cross_entropy."""
    if getattr(target, "dtype", None) is not None and target.dtype.is_floating_point:
        _no_legacy("cross_entropy", size_average, reduce)
        return _probability_cross_entropy(input, target, weight, reduction, label_smoothing)
    return _class_loss("cross_entropy", _lib.SB_LOSS_CROSS_ENTROPY, input, target, weight,
                       size_average, reduce, ignore_index, reduction, label_smoothing)


def _scalar(v):
    """A binary64 number rounded once to a 0-d float32 operand."""
    return torch.tensor(v, dtype=torch.float32)


def _probability_cross_entropy(input, target, weight, reduction, label_smoothing):
    """Cross-entropy against class probabilities (target of input's shape,
    float32), PyTorch's definition written with samebits ops (contract
    section 11, "Probability targets"): with the class dim 1 ((C) inputs:
    dim 0),

        lp = log_softmax(input, class dim)
        t  = target, or target * f32(1 - eps) + f32(eps / C)   (eps > 0)
        e  = (lp * t) * w                  (w (C) along the class dim; no w: lp * t)
        none: -(sum of e over the class dim)       sum: -(sum of e)
        mean: -(sum of e) / f32(numel / C)

    every sum the canonical sum in row-major order, every operation one
    IEEE rounding; the backward is those ops' backward (samebits' own)."""
    fn = "nn.functional.cross_entropy"
    red = _ops._reduction(reduction, "cross_entropy")
    if not isinstance(input, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("samebits.%s: input and target must be tensors" % fn)
    if input.dtype != torch.float32 or target.dtype != torch.float32:
        raise TypeError("samebits.%s: probability targets need float32 input and target, got "
                        "%s and %s" % (fn, input.dtype, target.dtype))
    if input.dim() == 0 or tuple(target.shape) != tuple(input.shape):
        raise ValueError("samebits.%s: a probability target must have the input's shape %s, "
                         "got %s" % (fn, tuple(input.shape), tuple(target.shape)))
    eps = _lib.checked_float(label_smoothing, _lib.ClassLoss.field_type("label_smoothing"),
                             "samebits.%s: label_smoothing" % fn)
    if not 0.0 <= eps <= 1.0:
        raise ValueError("samebits.%s: label_smoothing must be in [0, 1], got %r"
                         % (fn, label_smoothing))
    cdim = 0 if input.dim() == 1 else 1
    classes = input.shape[cdim]
    lp = _Softmax.apply(input, cdim, True)
    t = target
    if eps > 0.0:
        t = _Binary.apply(_Binary.apply(t, _scalar(1.0 - eps), "mul"),
                          _scalar(eps / classes), "add")
    e = _Binary.apply(lp, t, "mul")
    if weight is not None:
        if not isinstance(weight, torch.Tensor) or tuple(weight.shape) != (classes,):
            raise ValueError("samebits.%s: weight must be a tensor of shape (%d,) (one per "
                             "class), got %s" % (fn, classes, tuple(getattr(weight, "shape", ()))))
        shape = [1] * input.dim()
        shape[cdim] = classes
        e = _Binary.apply(e, weight.reshape(shape), "mul")
    if red == _ops._REDUCTION["none"]:
        return _Unary.apply(_Reduce.apply(e, (cdim,), False, False), "neg")
    total = _Unary.apply(_Reduce.apply(e, None, False, False), "neg")
    if red == _ops._REDUCTION["sum"]:
        return total
    return _Binary.apply(total, _scalar(float(input.numel() // classes)), "div")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities (N, C), (N, C, d1, ..., dk) or
    (C) against class indices, with optional class weights (C)."""
    return _class_loss("nll_loss", _lib.SB_LOSS_NLL, input, target, weight, size_average,
                       reduce, ignore_index, reduction)


class _CtcLoss(torch.autograd.Function):
    """CTC loss (sb_ctc_loss_*): log_probs (T, N, C) gets the gradient; the
    targets and lengths are int arrays."""

    @staticmethod
    def forward(ctx, lp, targets, in_len, tg_len, params, red):
        fn = "nn.functional.ctc_loss"
        ctx.save_for_backward(lp)
        ctx.saved = (targets, in_len, tg_len)
        ctx.params, ctx.red = params, red
        lpn = to_np(lp, fn, "log_probs")
        return _t(_ops._ctc_loss(params, lpn, *(like_operands(a) for a in ctx.saved), red))

    @staticmethod
    @once_differentiable
    def backward(ctx, dloss):
        (lp,) = ctx.saved_tensors
        fn = "nn.functional.ctc_loss"
        lpn = to_np(lp, fn, "log_probs")
        d = _ops._ctc_loss_backward(ctx.params, lpn, *(like_operands(a) for a in ctx.saved),
                                    ctx.red, to_np(dloss, fn, "grad"))
        return _t(d), None, None, None, None, None


def _lengths(v, fn, name):
    """Lengths as an int64 numpy array (N): a tensor, an array, or a sequence
    of ints (PyTorch accepts all three), on the host (a device's lengths are
    copied: PyTorch reads them on the host too)."""
    if isinstance(v, torch.Tensor):
        if v.dtype not in (torch.int64, torch.int32):
            raise TypeError("samebits.%s: %s has dtype %s; lengths must be int64 or int32"
                            % (fn, name, v.dtype))
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray):
        return np.ascontiguousarray(to_np_index(v, fn, name).reshape(-1))
    try:
        return np.array([_lib.checked_int(x, ctypes.c_int64, "samebits.%s: %s" % (fn, name))
                         for x in v], dtype=np.int64)
    except TypeError:
        raise TypeError("samebits.%s: %s must be a tensor or a sequence of ints, got %s"
                        % (fn, name, type(v).__name__)) from None


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """CTC loss of log-probabilities (T, N, C), or (T, C) unbatched, against
    padded (N, S) or concatenated targets (contract section 11,
    "Connectionist temporal classification")."""
    fn = "nn.functional.ctc_loss"
    params = _ops._ctc_params(blank, zero_infinity, fn)
    red = _ops._reduction(reduction, "ctc_loss")
    tn = to_np_index(targets, "ctc_loss", "targets")
    il, tl = _lengths(input_lengths, fn, "input_lengths"), _lengths(target_lengths, fn,
                                                                    "target_lengths")
    if getattr(log_probs, "dim", None) is not None and log_probs.dim() == 2:
        # unbatched (T, C) with targets (S): one item
        out = _CtcLoss.apply(log_probs.unsqueeze(1), dense(tn.reshape(1, -1)),
                             il, tl, params, red)
        return out.squeeze(0) if red == 0 else out
    return _CtcLoss.apply(log_probs, tn, il, tl, params, red)


class _Mse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, red):
        ctx.save_for_backward(x, y)
        ctx.red = red
        return _t(_ops._mse(to_np(x, "mse_loss", "input"),
                                          to_np(y, "mse_loss", "target"), red))

    @staticmethod
    @once_differentiable
    def backward(ctx, dloss):
        x, y = ctx.saved_tensors
        nx, ny = ctx.needs_input_grad[:2]
        dx, dy = _ops._mse_backward(to_np(x, "mse_loss", "input"), to_np(y, "mse_loss", "target"),
                                    ctx.red, to_np(dloss, "mse_loss", "grad"), nx, ny)
        return _t(dx), _t(dy), None


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if size_average is not None or reduce is not None:
        raise NotImplementedError("samebits.nn.functional.mse_loss: the deprecated size_average/"
                                  "reduce are not supported")
    if weight is not None:
        return _weighted_mean_loss("mse_loss", _lib.SB_LOSS_MSE, input, target, reduction, weight)
    return _Mse.apply(input, target, _ops._reduction(reduction, "mse_loss"))


def _broadcast_to_input(a, x, fn, name):
    try:
        return broadcast_dense(a, x.shape)
    except ValueError:
        raise ValueError("samebits.%s: %s has shape %s, which does not broadcast to the input's "
                         "shape %s" % (fn, name, tuple(a.shape), tuple(x.shape))) from None


class _ElementwiseLoss(torch.autograd.Function):
    """L1, smooth L1, Huber, BCE, BCE with logits and KL divergence: one C
    entry point (sb_elementwise_loss_*), the kind in `params`."""

    @staticmethod
    def forward(ctx, x, y, w, pw, params, red, name):
        fn = "nn.functional." + name
        nx, ny = to_np(x, fn, "input"), to_np(y, fn, "target")
        # weight and pos_weight broadcast to the input (bit copies)
        nw = None if w is None else _broadcast_to_input(to_np(w, fn, "weight"), nx, fn, "weight")
        npw = None if pw is None else _broadcast_to_input(to_np(pw, fn, "pos_weight"), nx, fn,
                                                          "pos_weight")
        ctx.saved = (nx, ny, nw, npw)
        ctx.params, ctx.red, ctx.name = params, red, name
        return _t(_ops._elementwise_loss(params, nx, ny, nw, npw, red))

    @staticmethod
    @once_differentiable
    def backward(ctx, dloss):
        nx, ny, nw, npw = ctx.saved
        if ctx.needs_input_grad[2] or ctx.needs_input_grad[3]:
            raise NotImplementedError("samebits.nn.functional.%s: gradients of weight and "
                                      "pos_weight are not supported" % ctx.name)
        need_y = ctx.needs_input_grad[1]
        if need_y and ctx.params.kind >= _lib.SB_LOSS_BCE:
            raise NotImplementedError("samebits.nn.functional.%s: the target gradient is not "
                                      "supported" % ctx.name)
        dx, dy = _ops._elementwise_loss_backward(
            ctx.params, nx, ny, nw, npw, ctx.red,
            to_np(dloss, "nn.functional." + ctx.name, "grad"), need_y)
        return _t(dx), _t(dy), None, None, None, None, None


def _no_legacy(name, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise NotImplementedError("samebits.nn.functional.%s: the deprecated size_average/"
                                  "reduce are not supported" % name)


def _loss(name, kind, input, target, reduction, weight=None, pos_weight=None, beta=0.0,
          log_target=False):
    params = _ops._loss_params(kind, beta, log_target, "nn.functional." + name,
                               "delta" if kind == _lib.SB_LOSS_HUBER else "beta")
    return _ElementwiseLoss.apply(input, target, weight, pos_weight, params,
                                  _ops._reduction(reduction, name), name)


def _weighted_mean_loss(name, kind, input, target, reduction, weight):
    """PyTorch's (>= 2.6) weighted l1_loss and mse_loss: each term times its
    weight; 'mean' divides the weighted sum by the sum of the weights (not
    by numel, unlike huber_loss and the BCE losses), both canonical sums."""
    if reduction != "mean":
        return _loss(name, kind, input, target, reduction, weight)
    total = _loss(name, kind, input, target, "sum", weight)
    return div(total, sum(weight.expand_as(input).contiguous()))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _no_legacy("l1_loss", size_average, reduce)
    if weight is not None:
        return _weighted_mean_loss("l1_loss", _lib.SB_LOSS_L1, input, target, reduction, weight)
    return _loss("l1_loss", _lib.SB_LOSS_L1, input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _no_legacy("smooth_l1_loss", size_average, reduce)
    return _loss("smooth_l1_loss", _lib.SB_LOSS_SMOOTH_L1, input, target, reduction, beta=beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    return _loss("huber_loss", _lib.SB_LOSS_HUBER, input, target, reduction, weight, beta=delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    _no_legacy("binary_cross_entropy", size_average, reduce)
    return _loss("binary_cross_entropy", _lib.SB_LOSS_BCE, input, target, reduction, weight)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    _no_legacy("binary_cross_entropy_with_logits", size_average, reduce)
    return _loss("binary_cross_entropy_with_logits", _lib.SB_LOSS_BCE_WITH_LOGITS, input, target,
                 reduction, weight, pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence; reduction 'batchmean' is the sum divided by input.size(0)
    (one samebits division), like PyTorch."""
    _no_legacy("kl_div", size_average, reduce)
    if reduction == "batchmean":
        total = _loss("kl_div", _lib.SB_LOSS_KL_DIV, input, target, "sum", log_target=log_target)
        return div(total, float(input.size(0))) if input.dim() > 0 else total
    return _loss("kl_div", _lib.SB_LOSS_KL_DIV, input, target, reduction, log_target=log_target)


class _BatchNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, rm, rv, training, momentum, eps):
        fn = "batch_norm"
        rmn, rvn = _np(rm, fn, "running_mean"), _np(rv, fn, "running_var")
        y, mean, rstd = _ops._batch_norm(to_np(x, fn, "input"), _np(w, fn, "weight"),
                                         _np(b, fn, "bias"), rmn, rvn, training, momentum, eps)
        _ops._copy_back(rm, rmn)
        _ops._copy_back(rv, rvn)
        ctx.save_for_backward(x, w)
        ctx.stats = (mean, rstd, training)
        ctx.has = (w is not None, b is not None)
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        mean, rstd, training = ctx.stats
        nx, nw, nb = ctx.needs_input_grad[:3]
        fn = "batch_norm"
        dx, dw, db = _ops._batch_norm_backward(to_np(dy, fn, "grad"), to_np(x, fn, "input"),
                                               _np(w, fn, "weight"), mean, rstd, training, nx,
                                               nw and ctx.has[0], nb and ctx.has[1])
        return _t(dx), _t(dw), _t(db), None, None, None, None, None


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if momentum is None:
        raise NotImplementedError("samebits.nn.functional.batch_norm: momentum=None (cumulative "
                                  "average) is not supported")
    fn, c = "nn.functional.batch_norm", "sb_batch_norm_forward"
    return _BatchNorm.apply(input, weight, bias, running_mean, running_var,
                            _ops._flag(training, fn, "training"),
                            _lib.arg_float(momentum, c, 6, fn, "momentum"),
                            _lib.arg_float(eps, c, 7, fn, "eps"))


class _PReLU(torch.autograd.Function):
    """y = x > 0 ? x : w_c * x; the weight gets its gradient (contract
    section 9, "PReLU": one canonical sum per channel)."""

    @staticmethod
    def forward(ctx, x, w):
        fn = "prelu"
        y = _ops._prelu(to_np(x, fn, "input"), to_np(w, fn, "weight"), fn)
        ctx.save_for_backward(x, w)
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        nx, nw = ctx.needs_input_grad
        fn = "prelu"
        dx, dw = _ops._prelu_backward(to_np(x, fn, "input"), to_np(w, fn, "weight"),
                                      to_np(dy, fn, "grad"), nx, nw, fn)
        return _t(dx), _t(dw)


def prelu(input, weight):
    """F.prelu: x > 0 ? x : weight_c * x with weight_c the slope of the
    channel (dim 1) or one shared slope; NaN x is kept."""
    return _PReLU.apply(input, weight)


# Layer norm and group norm normalise rows and share their op shape: the
# samebits.ops (forward, backward) pair of each, told what a row is by one
# argument (layer norm: how many trailing dims; group norm: the groups).
_ROW_NORMS = {"layer_norm": (_ops._layer_norm, _ops._layer_norm_backward),
              "group_norm": (_ops._group_norm, _ops._group_norm_backward)}


class _RowNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, rows, eps, fn):
        y, mean, rstd = _ROW_NORMS[fn][0](to_np(x, fn, "input"), rows, _np(w, fn, "weight"),
                                          _np(b, fn, "bias"), eps)
        ctx.save_for_backward(x, w)
        ctx.stats = (mean, rstd, rows, fn)
        ctx.has = (w is not None, b is not None)
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        mean, rstd, rows, fn = ctx.stats
        nx, nw, nb = ctx.needs_input_grad[:3]
        dx, dw, db = _ROW_NORMS[fn][1](to_np(dy, fn, "grad"), to_np(x, fn, "input"), rows,
                                       _np(w, fn, "weight"), mean, rstd, nx,
                                       nw and ctx.has[0], nb and ctx.has[1])
        return _t(dx), _t(dw), _t(db), None, None, None


def _grad_needed(*tensors):
    """Whether autograd may run a backward through an op of these inputs."""
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                           for t in tensors)


def _row_norm(input, weight, bias, rows, eps, fn, x=None):
    """_RowNorm, or where no backward can follow (no_grad, or no input that
    requires grad) the forward alone: no autograd node, no statistics kept
    (inference's layer norm spent a fifth of its Python time on them). x:
    input's array when the caller already has it."""
    if _grad_needed(input, weight, bias):
        return _RowNorm.apply(input, weight, bias, rows, eps, fn)
    name = "nn.functional." + fn
    x = to_np(input, name, "input") if x is None else x
    return _t(_ROW_NORMS[fn][0](x, rows, _np(weight, name, "weight"), _np(bias, name, "bias"),
                                eps, stats=False)[0])


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    fn = "nn.functional.layer_norm"
    x = to_np(input, fn, "input")
    nd = _ops._normalized_ndim(x.shape, normalized_shape, fn)
    return _row_norm(input, weight, bias, nd,
                     _lib.arg_float(eps, "sb_layer_norm_forward", 4, fn, "eps"), "layer_norm", x)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, nd, eps):
        fn = "rms_norm"
        y, rrms = _ops._rms_norm(to_np(x, fn, "input"), nd, _np(w, fn, "weight"), eps)
        ctx.save_for_backward(x, w)
        ctx.stats = (rrms, nd)
        ctx.has_w = w is not None
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        rrms, nd = ctx.stats
        nx, nw = ctx.needs_input_grad[:2]
        fn = "rms_norm"
        dx, dw = _ops._rms_norm_backward(to_np(dy, fn, "grad"), to_np(x, fn, "input"), nd,
                                         _np(w, fn, "weight"), rrms, nx, nw and ctx.has_w)
        return _t(dx), _t(dw), None, None


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """F.rms_norm (torch >= 2.4): eps=None is float32's machine epsilon."""
    fn = "nn.functional.rms_norm"
    nd = _ops._normalized_ndim(to_np(input, fn, "input").shape, normalized_shape, fn)
    eps = _ops._FLT_EPSILON if eps is None else eps
    return _RMSNorm.apply(input, weight, nd, _lib.arg_float(eps, "sb_rms_norm_forward", 3, fn,
                                                            "eps"))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group norm (contract section 12): statistics per (sample, group of
    C/num_groups channels), per-channel affine."""
    fn = "nn.functional.group_norm"
    return _row_norm(input, weight, bias,
                     _lib.arg_int(num_groups, "sb_group_norm_forward", 1, fn, "num_groups"),
                     _lib.arg_float(eps, "sb_group_norm_forward", 4, fn, "eps"), "group_norm")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance norm, PyTorch's definition: batch norm of the input viewed
    as (1, N*C, ...) with the running statistics repeated N times, then each
    running statistic the mean over N of its N updated copies.

    With the input's statistics (use_input_stats, training) the output is
    group norm with one group per channel (the same statistics); running
    statistics, when given, are then updated as above: batch norm's
    training update (contract section 12) on the (1, N*C, ...) view, and
    the mean over N through sb_mean (the canonical sum divided by N).
    Without them (use_input_stats False) it is batch norm in evaluation
    mode with the running statistics."""
    fn = "nn.functional.instance_norm"
    x = to_np(input, fn, "input")
    if x.ndim < 3:
        raise ValueError("samebits.%s: input must be (N, C, spatial...), got shape %s"
                         % (fn, tuple(x.shape)))
    if (running_mean is None) != (running_var is None):
        raise ValueError("samebits.%s: running_mean and running_var must be given together"
                         % fn)
    tracking = running_mean is not None
    if not use_input_stats:
        if not tracking:
            raise ValueError("samebits.%s: use_input_stats=False needs running_mean and "
                             "running_var" % fn)
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    y = group_norm(input, x.shape[1], weight, bias, eps)
    if tracking:
        n, c = x.shape[0], x.shape[1]
        rm = tile(to_np(running_mean, fn, "running_mean"), n)
        rv = tile(to_np(running_var, fn, "running_var"), n)
        if rm.shape != (n * c,) or rv.shape != (n * c,):
            raise ValueError("samebits.%s: running_mean and running_var must have C = %d "
                             "elements" % (fn, c))
        _ops._batch_norm(dense(x.reshape((1, n * c) + x.shape[2:])), None, None,
                         rm, rv, True, momentum, eps, fn)
        with torch.no_grad():
            running_mean.copy_(_ops.mean(_t(rm.reshape(n, c)), 0))
            running_var.copy_(_ops.mean(_t(rv.reshape(n, c)), 0))
    return y


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, training, seed, stream, offset):
        y, mask = _ops._dropout(to_np(x, "dropout", "input"), p, training, seed, stream, offset)
        ctx.mask, ctx.p, ctx.training = mask, p, training
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dx = _ops._dropout_backward(to_np(dy, "dropout", "grad"), ctx.mask, ctx.p, ctx.training)
        return _t(dx), None, None, None, None, None


def dropout(input, p, training, seed, stream, offset=0):
    """Inverted dropout whose mask is Philox element (seed, stream, offset + i).
    Unlike torch's, the randomness is explicit; samebits.nn.Dropout keeps and
    advances the offset for you."""
    fn, c = "nn.functional.dropout", "sb_dropout_forward"
    return _Dropout.apply(input, _lib.arg_float(p, c, 1, fn, "p"),
                          _ops._flag(training, fn, "training"), _lib.arg_int(seed, c, 3, fn, "seed"),
                          _lib.arg_int(stream, c, 4, fn, "stream"),
                          _lib.arg_int(offset, c, 5, fn, "offset"))


class _SDPA(torch.autograd.Function):
    """Scaled dot-product attention (contract section 19): forward and
    backward are sb_sdpa_forward / sb_sdpa_backward. The second output, the
    probabilities before dropout, carries no gradient."""

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale, p, seed, stream, offset):
        fn = "scaled_dot_product_attention"
        nq, nk, nv = to_np(q, fn, "query"), to_np(k, fn, "key"), to_np(v, fn, "value")
        nm = _ops._sdpa_mask(mask, fn)
        out, probs, scale = _ops._sdpa(nq, nk, nv, nm, causal, scale, p, seed, stream, offset, fn)
        ctx.args = (nq, nk, nv, nm, causal, scale, p, seed, stream, offset, probs)
        probs_t = _t(probs)
        ctx.mark_non_differentiable(probs_t)
        return _t(out), probs_t

    @staticmethod
    @once_differentiable
    def backward(ctx, dout, _dprobs):
        nq, nk, nv, nm, causal, scale, p, seed, stream, offset, probs = ctx.args
        need = ctx.needs_input_grad[:3]
        d = _ops._sdpa_backward(to_np(dout, "scaled_dot_product_attention", "grad"), nq, nk, nv,
                                nm, causal, scale, p, seed, stream, offset, probs, need)
        return tuple(_t(x) for x in d) + (None,) * 7


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, seed=0, stream=0, offset=0,
                                 causal_alignment="top_left", need_probs=False):
    """torch.nn.functional.scaled_dot_product_attention with samebits' bits
    (contract section 19), differentiable in query, key and value.
    attn_mask: bool (True = take part) or float (added), broadcast to
    (..., L, S); is_causal: PyTorch's top-left causal mask, or with
    causal_alignment="bottom_right" the KV-cache one (the last query sees
    every key); dropout from Philox (seed, stream, offset + the position in
    the (..., L, S) probabilities), which the caller advances. need_probs:
    also return the probabilities (before dropout, without gradient)."""
    if causal_alignment not in ("top_left", "bottom_right"):
        raise ValueError("samebits.nn.functional.scaled_dot_product_attention: "
                         "causal_alignment=%r (expected 'top_left' or 'bottom_right')"
                         % (causal_alignment,))
    causal = causal_alignment if _ops._flag(is_causal, "scaled_dot_product_attention",
                                            "is_causal") else False
    out, probs = _SDPA.apply(query, key, value, attn_mask, causal, scale, dropout_p, seed,
                             stream, offset)
    return (out, probs) if need_probs else out


class _Mm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, ta, tb):
        ctx.save_for_backward(a, b)
        ctx.t = (ta, tb)
        return _t(_ops._mm(to_np(a, "mm", "a"), to_np(b, "mm", "b"), ta, tb))

    @staticmethod
    @once_differentiable
    def backward(ctx, dout):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        da, db = _ops._mm_backward(to_np(dout, "mm", "grad"), to_np(a, "mm", "a"),
                                   to_np(b, "mm", "b"), ctx.t[0], ctx.t[1], na, nb)
        return _t(da), _t(db), None, None


def mm(a, b, trans_a=False, trans_b=False):
    fn = "nn.functional.mm"
    return _Mm.apply(a, b, _ops._flag(trans_a, fn, "trans_a"), _ops._flag(trans_b, fn, "trans_b"))


class _Binary(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, op):
        ctx.save_for_backward(a, b)
        ctx.op = op
        return _t(_ops._binary(op, to_np(a, op, "a"), to_np(b, op, "b")))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        da, db = _ops._binary_backward(ctx.op, to_np(dy, ctx.op, "grad"), to_np(a, ctx.op, "a"),
                                       to_np(b, ctx.op, "b"), na, nb)
        return _t(da), _t(db), None


def div(a, b):
    if not isinstance(b, torch.Tensor):
        # rounded to float32 here; a value that rounds to 0 or inf is refused
        b = torch.tensor(_lib.arg_float(b, "sb_binary_scalar", 2, "nn.functional.div", "b"),
                         dtype=torch.float32)
    return _Binary.apply(a, b, "div")


class _Unary(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, op):
        y = _t(_ops._unary(op, to_np(x, op, "input")))
        ctx.save_for_backward(x, y)
        ctx.op = op
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        return _t(_ops._unary_backward(ctx.op, to_np(x, ctx.op, "input"),
                                                     to_np(y, ctx.op, "output"),
                                                     to_np(dy, ctx.op, "grad"))), None


def sqrt(input):
    return _Unary.apply(input, "sqrt")


def exp(input):
    return _Unary.apply(input, "exp")


def log(input):
    return _Unary.apply(input, "log")


class _Reduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, keepdim, is_mean):
        names = ("sb_mean", "sb_mean_backward") if is_mean else ("sb_sum", "sb_sum_backward")
        fn = "nn.functional." + ("mean" if is_mean else "sum")
        x_np = to_np(x, fn, "input")
        ctx.args = (names[1], tuple(x_np.shape), dim, keepdim)
        return _t(_ops._reduce(names[0], x_np, dim, keepdim, fn))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        name, shape, dim, keepdim = ctx.args
        return _t(_ops._reduce_backward(name, to_np(dy, name, "grad"), shape, dim,
                                                      keepdim)), None, None, None


def sum(input, dim=None, keepdim=False):  # noqa: A001
    return _Reduce.apply(input, dim, keepdim, False)


def mean(input, dim=None, keepdim=False):
    return _Reduce.apply(input, dim, keepdim, True)


# ---- cumulative sum and product (contract section 10) -----------------------

class _Cumsum(torch.autograd.Function):
    """cumsum along dim; backward the reversed running sum of dy."""
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _t(_ops._cumulative("sb_cumsum", to_np(x, "cumsum", "input"), dim,
                                                 "nn.functional.cumsum"))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        return _t(_ops._cumulative("sb_cumsum_backward",
                                                 to_np(dy, "cumsum", "grad"), ctx.dim,
                                                 "nn.functional.cumsum")), None


class _Cumprod(torch.autograd.Function):
    """cumprod along dim; backward PyTorch's cumprod_backward (zeros
    included) with sequential chains, from x and the saved output."""
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        y = _t(_ops._cumulative("sb_cumprod", to_np(x, "cumprod", "input"), dim,
                                              "nn.functional.cumprod"))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        return _t(_ops._cumprod_backward(
            to_np(x, "cumprod", "input"), to_np(y, "cumprod", "output"),
            to_np(dy, "cumprod", "grad"), ctx.dim, "nn.functional.cumprod")), None


def _cum_dtype(dtype, fn):
    if dtype is not None and dtype != torch.float32:
        raise TypeError("samebits.nn.functional.%s: dtype=%s is not supported (float32 only: "
                        "the contract's chain is float32)" % (fn, dtype))


def cumsum(input, dim, dtype=None):
    _cum_dtype(dtype, "cumsum")
    return _Cumsum.apply(input, dim)


def cumprod(input, dim, dtype=None):
    _cum_dtype(dtype, "cumprod")
    return _Cumprod.apply(input, dim)


# ---- the index family (contract section 18) --------------------------------
# Every backward that accumulates (gather's, index_select's) is the C
# scatter-add: terms in ascending source position, one rounding each. The
# index is an integer tensor and gets no gradient.

def _index(index, fn):
    return _ops._index_np(index, fn)


def _needs(ctx, i):
    return ctx.needs_input_grad[i]


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        xn, ix = to_np(x, "gather", "input"), _index(index, "gather")
        ctx.args = (dim, ix, tuple(xn.shape))
        return _t(_ops._gather(xn, dim, ix))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dim, ix, shape = ctx.args
        return _t(_ops._gather_backward(to_np(dy, "gather", "grad"), dim, ix, shape)), None, None


def gather(input, dim, index, sparse_grad=False):
    if sparse_grad:
        raise NotImplementedError("samebits.nn.functional.gather: sparse_grad=True is not supported")
    return _Gather.apply(input, dim, index)


class _IndexSelect(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        xn, ix = to_np(x, "index_select", "input"), _index(index, "index_select")
        ctx.args = (dim, ix, tuple(xn.shape))
        return _t(_ops._index_select(xn, dim, ix))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dim, ix, shape = ctx.args
        return _t(_ops._index_select_backward(to_np(dy, "index_select", "grad"), dim, ix,
                                              shape)), None, None


def index_select(input, dim, index):
    return _IndexSelect.apply(input, dim, index)


class _ScatterAdd(torch.autograd.Function):
    """out = input with src scatter-added; d input = dy, d src = gather(dy)
    (zero where src is larger than index)."""
    @staticmethod
    def forward(ctx, x, dim, index, src):
        sn, ix = to_np(src, "scatter_add", "src"), _index(index, "scatter_add")
        ctx.args = (dim, ix, tuple(sn.shape))
        return _t(_ops._scatter_add(to_np(x, "scatter_add", "input"), dim, ix, sn))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dim, ix, sshape = ctx.args
        dsrc = None
        if _needs(ctx, 3):
            g = _ops._gather(to_np(dy, "scatter_add", "grad"), dim, ix)
            if g.shape != sshape:
                full = torch.zeros(sshape, dtype=torch.float32)
                full[tuple(slice(0, n) for n in g.shape)] = _t(g)
                dsrc = full
            else:
                dsrc = _t(g)
        return (dy if _needs(ctx, 0) else None), None, None, dsrc


def scatter_add(input, dim, index, src):
    return _ScatterAdd.apply(input, dim, index, src)


class _IndexAdd(torch.autograd.Function):
    """out = input with alpha * source slices added at index along dim;
    d input = dy, d source = index_select(dy) (times alpha, one rounding)."""
    @staticmethod
    def forward(ctx, x, dim, index, source, alpha):
        ix = _index(index, "index_add")
        ctx.args = (dim, ix, alpha)
        return _t(_ops._index_add(to_np(x, "index_add", "input"), dim, ix,
                                                to_np(source, "index_add", "source"), alpha))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dim, ix, alpha = ctx.args
        dsrc = None
        if _needs(ctx, 3):
            d = _ops._index_select(to_np(dy, "index_add", "grad"), dim, ix)
            if alpha == 0:  # sb_binary_scalar refuses a zero factor: one IEEE product
                d = np.multiply(d, np.float32(0.0))
            elif alpha != 1:
                d = _ops._binary_scalar("mul", d, alpha)
            dsrc = _t(d)
        return (dy if _needs(ctx, 0) else None), None, None, dsrc, None


def index_add(input, dim, index, source, alpha=1):
    return _IndexAdd.apply(input, dim, index, source, alpha)


def _scattered(shape, dim, ix):
    """A boolean mask of `shape`: True where some index names the position
    (the positions scatter_reduce writes to)."""
    mask = np.zeros(shape, dtype=bool)
    if ix.size:
        lead = _ops._lead(shape, ix.shape, dim)
        part = mask[lead]
        np.put_along_axis(part, ix, True, axis=dim)
        mask[lead] = part
    return mask


def _scatter_reduce_grads(g, dim, ix, reduce, include_self, x, src, out):
    """(d input, d src) of out = scatter_reduce(x, dim, ix, src, reduce,
    include_self): PyTorch's scatter_reduce_backward, each float operation a
    samebits op (gather, scatter_add, scatter_reduce, elementwise mul/div;
    contract section 18), masks and counts exact integer work."""
    fn = "nn.functional.scatter_reduce"

    def gather(a):
        return _ops._gather(a, dim, ix, fn)

    def scatter_add(base, terms):
        return _ops._scatter_add(base, dim, ix, terms, fn)

    def mul(a, b):
        return _ops._binary("mul", a, b)

    def div(a, b):
        return _ops._binary("div", a, b)

    def f32(mask):
        return mask.astype(np.float32)

    src = np.ascontiguousarray(src[tuple(slice(0, int(n)) for n in ix.shape)]) if src.ndim else src
    if reduce == "sum":
        gx, gs = g, gather(g)
    elif reduce == "mean":
        n = (np.ones if include_self else np.zeros)(g.shape, dtype=np.float32)
        n = scatter_add(n, np.ones(ix.shape, dtype=np.float32))
        n[n == 0] = 1
        gx, gs = div(g, n), div(gather(g), gather(n))
    elif reduce in ("amax", "amin"):
        # the gradient split evenly among the elements equal to the result
        self_is, src_is = x == out, src == gather(out)
        share = div(g, scatter_add(f32(self_is), f32(src_is)))
        gx, gs = mul(f32(self_is), share), mul(f32(src_is), gather(share))
    else:  # prod, with PyTorch's handling of zeros
        masked_x = np.where(x == 0, np.float32(1), x)
        gx = div(mul(g, _ops._scatter_reduce(masked_x, dim, ix, src, "prod", include_self, fn)),
                 masked_x)
        src_zero = src == 0
        zeros_there = gather(scatter_add(np.zeros(x.shape, dtype=np.float32), f32(src_zero)))
        single = src_zero & (zeros_there == 1)
        rest = _ops._scatter_reduce(x, dim, ix, np.where(single, np.float32(1), src), "prod",
                                    include_self, fn)
        gs = np.where(single, gather(mul(g, rest)),
                      div(gather(mul(g, out)), np.where(src_zero, np.float32(1), src)))
    if not include_self:
        gx = np.where(_scattered(x.shape, dim, ix), np.float32(0), gx)
    return np.ascontiguousarray(gx, dtype=np.float32), np.ascontiguousarray(gs, dtype=np.float32)


class _ScatterReduce(torch.autograd.Function):
    """out = input with src's terms reduced in (ascending source position);
    the gradients as PyTorch's scatter_reduce_backward (zero for src
    positions beyond index, as scatter_add's)."""
    @staticmethod
    def forward(ctx, x, dim, index, src, reduce, include_self):
        fn = "nn.functional.scatter_reduce"
        xn, sn, ix = to_np(x, fn, "input"), to_np(src, fn, "src"), _index(index, fn)
        out = _ops._scatter_reduce(xn, dim, ix, sn, reduce, include_self, fn)
        ctx.args = (dim % max(xn.ndim, 1), ix, reduce, include_self, xn, sn, out)
        return _t(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        dim, ix, reduce, include_self, xn, sn, out = ctx.args
        gx, gs = _scatter_reduce_grads(to_np(dy, "scatter_reduce", "grad"), dim, ix, reduce,
                                       include_self, xn, sn, out)
        dsrc = None
        if _needs(ctx, 3):
            dsrc = _t(gs)
            if gs.shape != sn.shape:
                full = torch.zeros(sn.shape, dtype=torch.float32)
                full[tuple(slice(0, n) for n in gs.shape)] = dsrc
                dsrc = full
        return (_t(gx) if _needs(ctx, 0) else None), None, None, dsrc, None, None


def scatter_reduce(input, dim, index, src, reduce, include_self=True):
    return _ScatterReduce.apply(input, dim, index, src, reduce, include_self)


# ---- counting: bincount and histc (contract section 18) ---------------------
# No gradient (PyTorch has none either): plain results, not recorded.

def bincount(input, weights=None, minlength=0):
    fn = "nn.functional.bincount"
    w = to_np(weights, fn, "weights") if weights is not None else None
    return _t(_ops._bincount(_index(input, fn), w, minlength, fn))


def histc(input, bins=100, min=0.0, max=0.0):  # noqa: A002 (torch's names)
    fn = "nn.functional.histc"
    return _t(_ops._histc(to_np(input, fn, "input"), bins, min, max, fn))


# ---- selection: sort, topk, kthvalue, median (contract section 18) ----------
# Values are bit copies of the input's elements; the gradient goes back to
# the selected positions by sb_sort_backward (a scatter of copies into +0,
# PyTorch's value_selecting_reduction_backward). Indices get no gradient.

class _Select(torch.autograd.Function):
    """(values, indices) of one selection op; `run` maps the input array to
    the pair, dim is the axis the backward scatters along."""
    @staticmethod
    def forward(ctx, x, run, dim, fn):
        xn = to_np(x, fn, "input")
        values, indices = run(xn)
        ctx.args = (dim, indices, tuple(xn.shape), fn)
        out_i = _t(indices)
        ctx.mark_non_differentiable(out_i)
        return _t(values), out_i

    @staticmethod
    @once_differentiable
    def backward(ctx, dv, _di):
        dim, indices, shape, fn = ctx.args
        return _t(_ops._sort_backward(to_np(dv, fn, "grad"), dim, indices, shape, fn)), \
            None, None, None


def _select_dim(dim, x, fn, position=1):
    """dim of the C function sb_<fn> (its argument `position`) wrapped; x is
    checked first (a float32 tensor) so that a bad input is named as such."""
    ndim = to_np(x, fn, "input").ndim
    return _ops._dim_of(dim, ndim, "sb_" + fn, "nn.functional." + fn, position)


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices), stable whatever `stable` says (the one order of
    the contract: ties in ascending position)."""
    d = _select_dim(dim, input, "sort")
    return _Select.apply(input, lambda a: _ops._sort(a, d, descending, "nn.functional.sort"), d,
                         "sort")


def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending)[1]


def msort(input):
    return sort(input, 0)[0]


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (torch's name)
    """The first k of sort's order, always sorted (sorted=False allows any
    order; the sorted one is among them)."""
    d = _select_dim(dim, input, "topk", 2)
    return _Select.apply(input, lambda a: _ops._topk(a, k, d, largest, "nn.functional.topk"), d,
                         "topk")


def kthvalue(input, k, dim=-1, keepdim=False):
    d = _select_dim(dim, input, "kthvalue", 2)
    return _Select.apply(input, lambda a: _ops._kthvalue(a, k, d, keepdim,
                                                         "nn.functional.kthvalue"), d, "kthvalue")


class _MedianAll(torch.autograd.Function):
    """torch.median(input): the median of all elements (an empty input gives
    NaN, as PyTorch). Backward as PyTorch's evenly_distribute_backward: dy
    divided (one IEEE division) by the number of elements equal to the
    median (-0 == +0; NaNs when it is NaN), at each of them; +0 elsewhere."""
    @staticmethod
    def forward(ctx, x):
        xn = to_np(x, "median", "input")
        if xn.size == 0:
            v = np.array(np.nan, dtype=np.float32)
        else:
            v = _ops._median(dense(xn.reshape(-1)), 0, False,
                             "nn.functional.median")[0]
        ctx.args = (xn, v)
        return _t(v)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        xn, v = ctx.args
        mask = np.isnan(xn) if np.isnan(v) else (xn == v)
        count = int(mask.sum())
        if count == 0:  # an empty input
            return torch.zeros(xn.shape, dtype=torch.float32)
        share = to_np(dy, "median", "grad")
        if count != 1:
            share = _ops._binary_scalar("div", share, float(count))
        dx = np.zeros(xn.shape, dtype=np.float32)
        dx[mask] = share
        return _t(dx)


def median(input, dim=None, keepdim=False):
    """median(input) (one value) or median(input, dim, keepdim) (values,
    indices): the lower middle, or the first NaN of a column that has one."""
    if dim is None:
        return _MedianAll.apply(input)
    d = _select_dim(dim, input, "median")
    return _Select.apply(input, lambda a: _ops._median(a, d, keepdim, "nn.functional.median"), d,
                         "median")


# ---- embeddings (contract section 18) ---------------------------------------
# Integer bookkeeping (which positions, which bag, counts) is numpy on int64
# arrays, exact; every float operation is a samebits C op.

def _padding_index(padding_idx, num, fn):
    if padding_idx is None:
        return None
    try:
        p = operator.index(padding_idx)
    except TypeError:
        raise TypeError("samebits.nn.functional.%s: padding_idx=%r is not an integer"
                        % (fn, padding_idx)) from None
    if not -num <= p < num:
        raise ValueError("samebits.nn.functional.%s: padding_idx=%d is outside [-%d, %d)"
                         % (fn, p, num, num))
    return p % num


def _renorm_(weight, flat, max_norm, norm_type, fn):
    """Each row of weight named in flat whose norm exceeds max_norm is
    scaled in place by max_norm / (norm + 1e-7f): norm_type 2 is
    sqrtf(canonical sum of w*w), 1 the canonical sum of |w|; one rounding
    for the sum of norm and 1e-7f, one for the division, one per product."""
    if norm_type not in (1, 2):
        raise NotImplementedError("samebits.nn.functional.%s: max_norm with norm_type=%r is not "
                                  "supported (only 1 and 2)" % (fn, norm_type))
    max_norm = float(np.float32(_lib.arg_float(max_norm, "sb_binary_scalar", 2, fn,
                                                    "max_norm")))
    host_only(weight, "nn.functional." + fn, "weight", "renormalises rows (max_norm)")
    if not weight.is_contiguous():
        raise ValueError("samebits.nn.functional.%s: max_norm renormalises weight in place, "
                         "which must then be contiguous" % fn)
    rows_at = np.unique(flat)
    if rows_at.size == 0:
        return
    if rows_at[0] < 0 or rows_at[-1] >= weight.shape[0]:
        bad = rows_at[0] if rows_at[0] < 0 else rows_at[-1]
        raise _lib.SamebitsError("samebits.nn.functional.%s: index %d is outside [0, %d)"
                                 % (fn, bad, weight.shape[0]))
    with torch.no_grad():
        w = weight.detach().numpy()
        rows = np.ascontiguousarray(w[rows_at])
        norm = _ops._reduce("sb_sum", _ops._unary("square" if norm_type == 2 else "abs", rows),
                            1, False)
        if norm_type == 2:
            norm = _ops._unary("sqrt", norm)
        over = norm > np.float32(max_norm)
        if over.any():
            denom = _ops._binary_scalar("add", np.ascontiguousarray(norm[over]), 1e-7)
            scale = _ops._binary("div", np.full(denom.shape, max_norm, dtype=np.float32), denom)
            w[rows_at[over]] = _ops._binary("mul", np.ascontiguousarray(rows[over]),
                                            np.ascontiguousarray(scale[:, None]))


class _Embedding(torch.autograd.Function):
    """Rows of weight at a 1-D int64 index; the weight gradient is the
    ordered index_add of dy's rows (positions at padding_idx left out; with
    scale_grad_by_freq each row first divided by its index's count)."""
    @staticmethod
    def forward(ctx, weight, flat, padding_idx, scale_grad_by_freq):
        w = to_np(weight, "embedding", "weight")
        ctx.args = (flat, tuple(w.shape), padding_idx, scale_grad_by_freq)
        return _t(_ops._index_select(w, 0, flat, "embedding"))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        flat, shape, pad, freq = ctx.args
        d = to_np(dy, "embedding", "grad")
        if pad is not None:
            keep = flat != pad
            flat, d = flat[keep], np.ascontiguousarray(d[keep])
        if freq and flat.size:
            counts = np.bincount(flat, minlength=shape[0])[flat].astype(np.float32)
            d = _ops._binary("div", d, np.ascontiguousarray(counts[:, None]))
        return _t(_ops._index_select_backward(d, 0, flat, shape, "embedding")), None, None, None


def _embedding_check(weight, sparse, fn):
    if sparse:
        raise NotImplementedError("samebits.nn.functional.%s: sparse=True is not supported "
                                  "(the gradient is a dense tensor)" % fn)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError("samebits.nn.functional.%s: weight must be a 2-D tensor (num_embeddings, "
                         "embedding_dim)" % fn)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """F.embedding: y = weight[input] (bits copied), shape input.shape + (D,)."""
    _embedding_check(weight, sparse, "embedding")
    pad = _padding_index(padding_idx, weight.shape[0], "embedding")
    ix = _index(input, "embedding")
    flat = ix.reshape(-1)
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type, "embedding")
    rows = _Embedding.apply(weight, flat, pad, bool(scale_grad_by_freq))
    return rows.reshape(tuple(ix.shape) + (weight.shape[1],))


class _BagMax(torch.autograd.Function):
    """Per bag and column, the maximum of the bag's rows in sb_max's order
    (NaN above all, the first NaN and the first of equal values win, -0 <
    +0); an empty bag gives +0. The backward routes dy to the winning row:
    each (row, column) wins for at most one bag, so nothing accumulates."""
    @staticmethod
    def forward(ctx, rows, bag, nbags):
        r = to_np(rows, "embedding_bag", "rows")
        K, D = r.shape
        counts = np.bincount(bag, minlength=nbags) if bag.size else np.zeros(nbags, np.int64)
        L = int(counts.max()) if nbags and counts.size else 0
        if nbags == 0 or L == 0:
            ctx.args = (None, K, D)
            return torch.zeros(nbags, D)
        # positions padded with row K, a row of -inf that never wins a
        # non-empty bag (ties keep the first)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(K) - start[bag]
        where = np.full((nbags, L), K, dtype=np.int64)
        where[bag, slot] = np.arange(K)
        padded = np.concatenate([r, np.full((1, D), -np.inf, dtype=np.float32)])[where]
        y = np.empty((nbags, D), dtype=np.float32)
        arg = np.empty((nbags, D), dtype=np.int64)
        dims = (ctypes.c_int * 1)(1)
        _lib.call("sb_max", _lib.ref(_lib.wrap(padded)), dims, 1, False, _lib.ref(_lib.wrap(y)),
                  _lib.ref(_lib.wrap(arg)))
        empty = counts == 0
        y[empty] = 0.0
        won = np.take_along_axis(where, arg, axis=1)   # (nbags, D): the winning position
        ctx.args = (np.where(empty[:, None], -1, won), K, D)
        return _t(y)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        won, K, D = ctx.args
        d = np.zeros((K, D), dtype=np.float32)
        if won is not None:
            g = to_np(dy, "embedding_bag", "grad")
            b, c = np.nonzero(won >= 0)
            d[won[b, c], c] = g[b, c]
        return _t(d), None, None


def _bags(ix, offsets, include_last_offset, fn):
    """(flat positions' indices, bag of each position, number of bags) for
    a 2-D input (one bag per row) or a 1-D input cut at offsets."""
    if ix.ndim == 2:
        if offsets is not None:
            raise ValueError("samebits.nn.functional.%s: offsets must be None for a 2-D input" % fn)
        B, L = ix.shape
        return ix.reshape(-1), np.repeat(np.arange(B, dtype=np.int64), L), B
    if ix.ndim != 1:
        raise ValueError("samebits.nn.functional.%s: input must be 1-D or 2-D, got %d dimensions"
                         % (fn, ix.ndim))
    if offsets is None:
        raise ValueError("samebits.nn.functional.%s: offsets is required for a 1-D input" % fn)
    off = _index(offsets, fn)
    if off.ndim != 1:
        raise ValueError("samebits.nn.functional.%s: offsets must be 1-D" % fn)
    n = ix.shape[0]
    if include_last_offset:
        if off.size < 1:
            raise ValueError("samebits.nn.functional.%s: include_last_offset needs at least one "
                             "offset" % fn)
        starts, ends = off[:-1], off[1:]
    else:
        starts, ends = off, np.append(off[1:], n).astype(np.int64)
    B = starts.size
    if B and (starts[0] != 0 or (np.diff(off) < 0).any() or ends[-1] > n):
        raise ValueError("samebits.nn.functional.%s: offsets must start at 0, never decrease and "
                         "end at most at len(input) = %d, got %s" % (fn, n, off.tolist()))
    lengths = ends - starts
    used = int(ends[-1]) if B else 0
    return ix[:used], np.repeat(np.arange(B, dtype=np.int64), lengths), B


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """F.embedding_bag. Each bag's rows (positions at padding_idx left out)
    are reduced in ascending position: 'sum' adds them into +0 one at a
    time (index_add; per_sample_weights multiply each row first, one
    rounding), 'mean' divides that sum by the bag's row count (empty bags:
    0 / 1 = 0), 'max' takes sb_max's maximum per column (empty bags: 0)."""
    fn = "embedding_bag"
    _embedding_check(weight, sparse, fn)
    host_only(weight, "nn.functional." + fn, "weight", "forms its bags")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("samebits.nn.functional.embedding_bag: mode=%r is not one of 'sum', "
                         "'mean', 'max'" % (mode,))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("samebits.nn.functional.embedding_bag: per_sample_weights "
                                  "needs mode='sum' (as in PyTorch)")
    if scale_grad_by_freq and mode == "max":
        raise NotImplementedError("samebits.nn.functional.embedding_bag: scale_grad_by_freq "
                                  "with mode='max' is not supported (as in PyTorch)")
    num, dim = weight.shape
    pad = _padding_index(padding_idx, num, fn)
    ix = _index(input, fn)
    flat, bag, B = _bags(ix, offsets, include_last_offset, fn)
    psw = None
    if per_sample_weights is not None:
        if tuple(per_sample_weights.shape) != tuple(ix.shape):
            raise ValueError("samebits.nn.functional.embedding_bag: per_sample_weights has shape "
                             "%s, input %s" % (tuple(per_sample_weights.shape), tuple(ix.shape)))
        psw = per_sample_weights.reshape(-1)[:flat.size]
    if pad is not None:
        keep = flat != pad
        flat, bag = flat[keep], bag[keep]
        if psw is not None:
            psw = psw[_t(np.nonzero(keep)[0])]
    if max_norm is not None:
        _renorm_(weight, flat, max_norm, norm_type, fn)
    rows = _Embedding.apply(weight, flat, None, bool(scale_grad_by_freq))     # (K, D)
    if mode == "max":
        return _BagMax.apply(rows, bag, B)
    if psw is not None:
        rows = _Binary.apply(rows, psw.reshape(-1, 1), "mul")
    y = index_add(torch.zeros(B, dim), 0, _t(bag), rows)
    if mode == "mean":
        count = np.maximum(np.bincount(bag, minlength=B), 1).astype(np.float32)
        y = _Binary.apply(y, _t(count.reshape(B, 1)), "div")
    return y


# Every public function and every autograd function's forward and backward
# is one op scope (_convert.op_scope): its operands' device is its results'.
for _name in __all__:
    globals()[_name] = op_scope(globals()[_name])
for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, torch.autograd.Function) and \
            _cls.__module__ == __name__:
        _cls.forward = staticmethod(op_scope(_cls.forward))
        _cls.backward = staticmethod(op_scope(_cls.backward))
del _name, _cls
