"""Loading libsamebits.so and the ctypes plumbing every module shares.

samebits' Python layer adds no numerics: each op hands the caller's buffer
to the C library by pointer (zero-copy for contiguous float32 CPU arrays) and
returns what C wrote. Nothing here depends on PyTorch's C++ ABI.

Library discovery, first hit wins:
  1. $SAMEBITS_LIB (a path to libsamebits.so),
  2. libsamebits.so next to this file (an installed wheel can ship it),
  3. the repository's build directories (../../build*/ relative to this
     package: build/ first, then the others alphabetically),
  4. ctypes.util.find_library("samebits") (an installed library).
"""
import ctypes
import ctypes.util
import glob
import math
import operator
import os
import threading

import numpy as np

__all__ = ["lib", "SamebitsError", "ArgumentRangeError", "Tensor", "check", "lib_path"]


class SamebitsError(RuntimeError):
    """A samebits C call failed; the message is sb_last_error()'s."""

    def __init__(self, message, status=None, function=None):
        super().__init__(message)
        self.status = status
        self.function = function


class UnsupportedDeviceError(NotImplementedError):
    """A tensor on a device this build or this machine cannot serve."""


class ArgumentRangeError(OverflowError, ValueError):
    """A value outside what its C type holds (an int too large for an int32,
    a float that a C float rounds to 0 or infinity). Both an OverflowError
    and a ValueError, so either kind of handler catches it."""


SB_MAX_DIMS = 8
SB_F32, SB_I32, SB_I64 = 0, 1, 2
SB_DEVICE_CPU, SB_DEVICE_CUDA, SB_DEVICE_OPENCL = 0, 1, 3


# ---- C-type range checks -----------------------------------------------------
# ctypes silently wraps an int that does not fit its C type (2**32 + 1 passed
# as a C int arrives as 1) and rounds a double that a C float cannot hold to
# inf or 0. Every integer and float argument of every call in _SIGS, and every
# field of the parameter structs below, is checked against its declared C type
# here first, so no value reaches C changed.

_INT_TYPES = (ctypes.c_bool, ctypes.c_byte, ctypes.c_ubyte, ctypes.c_short, ctypes.c_ushort,
              ctypes.c_int, ctypes.c_uint, ctypes.c_long, ctypes.c_ulong, ctypes.c_longlong,
              ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_ssize_t, ctypes.c_int8,
              ctypes.c_uint8, ctypes.c_int16, ctypes.c_uint16, ctypes.c_int32, ctypes.c_uint32,
              ctypes.c_int64, ctypes.c_uint64)
_FLOAT_TYPES = (ctypes.c_float, ctypes.c_double)


def c_type_name(ctype):
    """The C type of a ctypes scalar type, for messages: int32, uint64, bool,
    float... (by size and sign: ctypes itself cannot tell size_t from
    uint64_t, they are one type object)."""
    if ctype is ctypes.c_bool:
        return "bool"
    if ctype is ctypes.c_float:
        return "float"
    if ctype is ctypes.c_double:
        return "double"
    if ctype in _INT_TYPES:
        return "%sint%d" % ("" if ctype(-1).value < 0 else "u", 8 * ctypes.sizeof(ctype))
    return ctype.__name__


def int_range(ctype):
    """(lowest, highest) value of a ctypes integer type, from its size and sign."""
    if ctype is ctypes.c_bool:
        return 0, 1
    bits = 8 * ctypes.sizeof(ctype)
    if ctype(-1).value < 0:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def checked_int(value, ctype, what):
    """value as a Python int that `ctype` holds exactly. A float, None or any
    object without __index__ raises TypeError (int() would truncate 1.5 to
    1); a value outside the C type's range raises OverflowError. `what` names
    the argument in the message."""
    if isinstance(value, float) or value is None:
        raise TypeError("%s must be an integer, got %r" % (what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, got %s" % (what, type(value).__name__)) from None
    lo, hi = int_range(ctype)
    if not lo <= v <= hi:
        raise ArgumentRangeError("%s=%d is out of range (C %s holds [%d, %d])"
                            % (what, v, c_type_name(ctype), lo, hi))
    return v


_FLT_MAX = float(ctypes.c_float(3.4028234663852886e38).value)


def checked_float(value, ctype, what):
    """value as a Python float that `ctype` holds without changing meaning:
    a finite value that would round to infinity as a C float raises
    OverflowError, a non-zero one that would round to zero ValueError (NaN
    and infinities pass as they are; ops that refuse them say so)."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError("%s must be a number, got %r" % (what, value))
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a number, got %s" % (what, type(value).__name__)) from None
    if ctype is ctypes.c_float and math.isfinite(v):
        r = ctypes.c_float(v).value
        if math.isinf(r):
            raise ArgumentRangeError("%s=%r is out of range (it rounds to %s as a C float)"
                                % (what, v, r))
        if r == 0.0 and v != 0.0:
            raise ArgumentRangeError("%s=%r underflows to 0 as a C float; pass 0 explicitly if that is "
                             "meant" % (what, v))
    return v


def checked_scalar(value, ctype, what):
    """checked_int or checked_float by `ctype`; any other type passes as is."""
    if ctype in _INT_TYPES:
        return checked_int(value, ctype, what)
    if ctype in _FLOAT_TYPES:
        return checked_float(value, ctype, what)
    return value


class CheckedStructure(ctypes.Structure):
    """A ctypes struct whose scalar fields are range-checked at construction
    (a plain Structure would wrap 2**64 + 1 to 1 in an int64_t field)."""

    def __init__(self, *args, **kwargs):
        names = [f[0] for f in self._fields_]
        types = dict(self._fields_)
        if len(args) > len(names):
            raise TypeError("%s takes at most %d values" % (type(self).__name__, len(names)))
        values = dict(zip(names, args))
        values.update(kwargs)
        for name, value in values.items():
            if name not in types:
                raise TypeError("%s has no field %r" % (type(self).__name__, name))
            values[name] = checked_scalar(value, types[name],
                                          "%s.%s" % (type(self).__name__, name))
        super().__init__(**values)

    @classmethod
    def field_type(cls, name):
        return dict(cls._fields_)[name]


class Tensor(ctypes.Structure):
    """struct sb_tensor (include/samebits/tensor.h)."""
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("device", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * SB_MAX_DIMS),
        ("strides", ctypes.c_int64 * SB_MAX_DIMS),
        ("data", ctypes.c_void_p),
        ("owner", ctypes.c_uint),
    ]


class Named(ctypes.Structure):
    """struct sb_named (include/samebits/nn.h)."""
    _fields_ = [
        ("name", ctypes.c_char * 64),
        ("value", ctypes.POINTER(Tensor)),
        ("grad", ctypes.POINTER(Tensor)),
    ]


class Dataset(ctypes.Structure):
    """struct sb_dataset (include/samebits/io.h)."""
    _fields_ = [
        ("images", ctypes.POINTER(Tensor)),
        ("labels", ctypes.POINTER(Tensor)),
        ("count", ctypes.c_int64),
    ]


class Conv2dParams(CheckedStructure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("stride_h", "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w", "groups")]


class ConvTranspose2dParams(CheckedStructure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("stride_h", "stride_w", "pad_h", "pad_w", "output_pad_h", "output_pad_w",
                 "dilation_h", "dilation_w", "groups")]


class Pool2dParams(CheckedStructure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_h", "pad_w")] + [
        ("ceil_mode", ctypes.c_bool), ("count_include_pad", ctypes.c_bool)] + [
        (n, ctypes.c_int64) for n in ("dilation_h", "dilation_w", "divisor_override")]


# sb_pad_mode (include/samebits/conv.h)
SB_PAD_CONSTANT, SB_PAD_REFLECT, SB_PAD_REPLICATE, SB_PAD_CIRCULAR = 0, 1, 2, 3
# sb_scatter_reduce_op (include/samebits/index.h)
SB_SCATTER_SUM, SB_SCATTER_PROD, SB_SCATTER_MEAN, SB_SCATTER_AMAX, SB_SCATTER_AMIN = 0, 1, 2, 3, 4


class Pad2dParams(CheckedStructure):
    _fields_ = [(n, ctypes.c_int64) for n in ("left", "right", "top", "bottom")] + [
        ("mode", ctypes.c_int), ("value", ctypes.c_float)]


# sb_elementwise_loss_kind (include/samebits/loss.h)
(SB_LOSS_MSE, SB_LOSS_L1, SB_LOSS_SMOOTH_L1, SB_LOSS_HUBER, SB_LOSS_BCE, SB_LOSS_BCE_WITH_LOGITS,
 SB_LOSS_KL_DIV) = range(7)


class ElementwiseLoss(CheckedStructure):
    _fields_ = [("kind", ctypes.c_int), ("beta", ctypes.c_float), ("log_target", ctypes.c_bool)]


# sb_class_loss_kind (include/samebits/loss.h)
SB_LOSS_CROSS_ENTROPY, SB_LOSS_NLL = 0, 1


class ClassLoss(CheckedStructure):
    _fields_ = [("kind", ctypes.c_int), ("label_smoothing", ctypes.c_float),
                ("ignore_index", ctypes.c_int64)]


# sb_interp_mode (include/samebits/conv.h)
SB_INTERP_NEAREST, SB_INTERP_NEAREST_EXACT, SB_INTERP_LINEAR, SB_INTERP_CUBIC = 0, 1, 2, 3


class InterpolateParams(CheckedStructure):
    _fields_ = [("mode", ctypes.c_int), ("align_corners", ctypes.c_bool),
                ("scales", ctypes.c_double * 3)]


class CtcLoss(CheckedStructure):
    _fields_ = [("blank", ctypes.c_int64), ("zero_infinity", ctypes.c_bool)]


# sb_rnn_mode (include/samebits/recurrent.h)
SB_RNN_TANH, SB_RNN_RELU, SB_RNN_LSTM, SB_RNN_GRU = 0, 1, 2, 3


class RnnSequence(CheckedStructure):
    _fields_ = [("mode", ctypes.c_int), ("reverse", ctypes.c_bool), ("steps", ctypes.c_int64),
                ("batch_sizes", ctypes.POINTER(ctypes.c_int64))]


# sb_grid_mode, sb_grid_padding (include/samebits/conv.h)
SB_GRID_BILINEAR, SB_GRID_NEAREST = 0, 1
SB_GRID_ZEROS, SB_GRID_BORDER, SB_GRID_REFLECTION = 0, 1, 2


class GridSampleParams(CheckedStructure):
    _fields_ = [("mode", ctypes.c_int), ("padding_mode", ctypes.c_int),
                ("align_corners", ctypes.c_bool)]


class SgdConfig(CheckedStructure):
    _fields_ = [("lr", ctypes.c_double), ("momentum", ctypes.c_double),
                ("dampening", ctypes.c_double), ("weight_decay", ctypes.c_double),
                ("nesterov", ctypes.c_bool), ("maximize", ctypes.c_bool)]


class AdamConfig(CheckedStructure):
    _fields_ = [("lr", ctypes.c_double), ("beta1", ctypes.c_double),
                ("beta2", ctypes.c_double), ("eps", ctypes.c_double),
                ("weight_decay", ctypes.c_double), ("amsgrad", ctypes.c_bool),
                ("decoupled_weight_decay", ctypes.c_bool), ("maximize", ctypes.c_bool)]


class Rng(CheckedStructure):
    _fields_ = [("seed", ctypes.c_uint64), ("stream", ctypes.c_uint64),
                ("counter", ctypes.c_uint64)]


def _candidates():
    env = os.environ.get("SAMEBITS_LIB")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "libsamebits.so")]
    repo = os.path.dirname(os.path.dirname(here))
    dirs = sorted(glob.glob(os.path.join(repo, "build*")))
    plain = os.path.join(repo, "build")
    if plain in dirs:
        dirs.remove(plain)
        dirs.insert(0, plain)
    # A sanitizer build cannot be loaded into an ordinary Python process.
    dirs = [d for d in dirs if "asan" not in os.path.basename(d)]
    out += [os.path.join(d, "libsamebits.so") for d in dirs]
    found = ctypes.util.find_library("samebits")
    if found:
        out.append(found)
    return out, False


def _load():
    paths, from_env = _candidates()
    errors = []
    for p in paths:
        if from_env or os.path.exists(p) or not os.path.isabs(p):
            try:
                return ctypes.CDLL(p), p
            except OSError as e:
                errors.append("%s: %s" % (p, e))
                if from_env:
                    break
    raise ImportError(
        "samebits: cannot load libsamebits.so. Build it with `make lib` in the "
        "samebits repository and set SAMEBITS_LIB=/path/to/libsamebits.so "
        "(tried: %s)" % ("; ".join(errors) if errors else ", ".join(paths)))


_cdll, lib_path = _load()

_P = ctypes.c_void_p
_T = ctypes.POINTER(Tensor)
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_f = ctypes.c_float
_b = ctypes.c_bool
_i = ctypes.c_int
_ip = ctypes.POINTER(ctypes.c_int)

# name: (restype, argtypes). restype int means an sb_status. The one Python
# copy of each C signature: tests/python/test_bindings.py checks every entry
# against the C declarations (through src/ops/op_table.h), and every sb_*
# function the package calls must be here.
_SIGS = {
    "sb_last_error": (ctypes.c_char_p, []),
    "sb_status_name": (ctypes.c_char_p, [_i]),
    "sb_clear_error": (None, []),
    "sb_tensor_wrap": (_i, [ctypes.POINTER(_T), _P, _i, _i, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_tensor_free": (None, [_T]),
    "sb_tensor_new_on": (_i, [ctypes.POINTER(_T), _i, _i, _i, ctypes.POINTER(_i64)]),
    "sb_tensor_to": (_i, [ctypes.POINTER(_T), _T, _i]),
    "sb_tensor_copy": (_i, [_T, _T]),
    "sb_set_num_threads": (_i, [_i]),
    "sb_num_threads": (_i, []),
    "sb_isa": (_i, []),
    "sb_isa_name": (ctypes.c_char_p, [_i]),
    "sb_isa_from_name": (_i, [ctypes.c_char_p, ctypes.POINTER(_i)]),
    "sb_set_isa": (_i, [_i]),
    "sb_matmul": (_i, [_T, _T, _b, _b, _T]),
    "sb_matmul_backward": (_i, [_T, _T, _T, _b, _b, _T, _T]),
    "sb_linear_forward": (_i, [_T, _T, _T, _T]),
    "sb_linear_backward": (_i, [_T, _T, _T, _T, _T, _T]),
    "sb_conv2d_output_size": (_i, [_i64, _i64, _i64, _i64, ctypes.POINTER(Conv2dParams),
                                   ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_conv2d_forward": (_i, [_T, _T, _T, ctypes.POINTER(Conv2dParams), _T]),
    "sb_conv2d_backward": (_i, [_T, _T, _T, ctypes.POINTER(Conv2dParams), _T, _T, _T]),
    "sb_conv_transpose2d_output_size": (_i, [_i64, _i64, _i64, _i64,
                                             ctypes.POINTER(ConvTranspose2dParams),
                                             ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_conv_transpose2d_forward": (_i, [_T, _T, _T, ctypes.POINTER(ConvTranspose2dParams), _T]),
    "sb_conv_transpose2d_backward": (_i, [_T, _T, _T, ctypes.POINTER(ConvTranspose2dParams), _T,
                                          _T, _T]),
    "sb_pool2d_output_size": (_i, [_i64, _i64, ctypes.POINTER(Pool2dParams),
                                   ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_max_pool2d_forward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T, _T]),
    "sb_max_pool2d_backward": (_i, [_T, _T, ctypes.POINTER(Pool2dParams), _T]),
    "sb_avg_pool2d_forward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T]),
    "sb_avg_pool2d_backward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T]),
    "sb_pad2d_forward": (_i, [_T, ctypes.POINTER(Pad2dParams), _T]),
    "sb_pad2d_backward": (_i, [_T, ctypes.POINTER(Pad2dParams), _T]),
    "sb_interpolate_forward": (_i, [_T, ctypes.POINTER(InterpolateParams), _T]),
    "sb_interpolate_backward": (_i, [_T, ctypes.POINTER(InterpolateParams), _T]),
    "sb_grid_sample_forward": (_i, [_T, _T, ctypes.POINTER(GridSampleParams), _T]),
    "sb_grid_sample_backward": (_i, [_T, _T, _T, ctypes.POINTER(GridSampleParams), _T, _T]),
    "sb_adaptive_max_pool2d_forward": (_i, [_T, _T, _T]),
    "sb_adaptive_max_pool2d_backward": (_i, [_T, _T, _T]),
    "sb_adaptive_avg_pool2d_forward": (_i, [_T, _T]),
    "sb_adaptive_avg_pool2d_backward": (_i, [_T, _T]),
    "sb_binary": (_i, [_i, _T, _T, _T]),
    "sb_binary_scalar": (_i, [_i, _T, _f, _T]),
    "sb_binary_backward": (_i, [_i, _T, _T, _T, _T, _T]),
    "sb_unary": (_i, [_i, _T, _T]),
    "sb_unary_backward": (_i, [_i, _T, _T, _T, _T]),
    "sb_relu_forward": (_i, [_T, _T]),
    "sb_relu_backward": (_i, [_T, _T, _T]),
    "sb_tanh_forward": (_i, [_T, _T]),
    "sb_tanh_backward": (_i, [_T, _T, _T]),
    "sb_sigmoid_forward": (_i, [_T, _T]),
    "sb_sigmoid_backward": (_i, [_T, _T, _T]),
    "sb_gelu_forward": (_i, [_T, _b, _T]),
    "sb_gelu_backward": (_i, [_T, _T, _b, _T]),
    "sb_leaky_relu_forward": (_i, [_T, _f, _T]),
    "sb_leaky_relu_backward": (_i, [_T, _T, _f, _T]),
    "sb_silu_forward": (_i, [_T, _T]),
    "sb_silu_backward": (_i, [_T, _T, _T]),
    "sb_softplus_forward": (_i, [_T, _f, _f, _T]),
    "sb_softplus_backward": (_i, [_T, _T, _f, _f, _T]),
    "sb_hardtanh_forward": (_i, [_T, _f, _f, _T]),
    "sb_hardtanh_backward": (_i, [_T, _T, _f, _f, _T]),
    "sb_hardsigmoid_forward": (_i, [_T, _T]),
    "sb_hardsigmoid_backward": (_i, [_T, _T, _T]),
    "sb_hardswish_forward": (_i, [_T, _T]),
    "sb_hardswish_backward": (_i, [_T, _T, _T]),
    "sb_elu_forward": (_i, [_T, _f, _f, _f, _T]),
    "sb_elu_backward": (_i, [_T, _T, _f, _f, _f, _T]),
    "sb_mish_forward": (_i, [_T, _T]),
    "sb_mish_backward": (_i, [_T, _T, _T]),
    "sb_logsigmoid_forward": (_i, [_T, _T]),
    "sb_logsigmoid_backward": (_i, [_T, _T, _T]),
    "sb_hardshrink_forward": (_i, [_T, _f, _T]),
    "sb_hardshrink_backward": (_i, [_T, _T, _f, _T]),
    "sb_softshrink_forward": (_i, [_T, _f, _T]),
    "sb_softshrink_backward": (_i, [_T, _T, _f, _T]),
    "sb_threshold_forward": (_i, [_T, _f, _f, _T]),
    "sb_threshold_backward": (_i, [_T, _T, _f, _T]),
    "sb_prelu_forward": (_i, [_T, _T, _T]),
    "sb_prelu_backward": (_i, [_T, _T, _T, _T, _T]),
    "sb_sum": (_i, [_T, _ip, _i, _b, _T]),
    "sb_mean": (_i, [_T, _ip, _i, _b, _T]),
    "sb_sum_backward": (_i, [_T, _ip, _i, _b, _T]),
    "sb_mean_backward": (_i, [_T, _ip, _i, _b, _T]),
    "sb_max": (_i, [_T, _ip, _i, _b, _T, _T]),
    "sb_cumsum": (_i, [_T, _i, _T]),
    "sb_cumsum_backward": (_i, [_T, _i, _T]),
    "sb_cumprod": (_i, [_T, _i, _T]),
    "sb_cumprod_backward": (_i, [_T, _T, _T, _i, _T]),
    "sb_gather": (_i, [_T, _i, _T, _T]),
    "sb_gather_backward": (_i, [_T, _i, _T, _T]),
    "sb_scatter_add": (_i, [_i, _T, _T, _T]),
    "sb_index_select": (_i, [_T, _i, _T, _T]),
    "sb_index_select_backward": (_i, [_T, _i, _T, _T]),
    "sb_index_add": (_i, [_i, _T, _T, _f, _T]),
    "sb_scatter_reduce": (_i, [_i, _T, _T, _i, _b, _T]),
    "sb_bincount": (_i, [_T, _T, _T]),
    "sb_histc": (_i, [_T, _i64, _f, _f, _T]),
    "sb_sort": (_i, [_T, _i, _b, _T, _T]),
    "sb_topk": (_i, [_T, _i64, _i, _b, _T, _T]),
    "sb_kthvalue": (_i, [_T, _i64, _i, _b, _T, _T]),
    "sb_median": (_i, [_T, _i, _b, _T, _T]),
    "sb_sort_backward": (_i, [_T, _i, _T, _T]),
    "sb_softmax_forward": (_i, [_T, _i, _T]),
    "sb_softmax_backward": (_i, [_T, _T, _i, _T]),
    "sb_log_softmax_forward": (_i, [_T, _i, _T]),
    "sb_log_softmax_backward": (_i, [_T, _T, _i, _T]),
    "sb_cross_entropy_forward": (_i, [_T, _T, _i, _f, _i64, _T]),
    "sb_cross_entropy_backward": (_i, [_T, _T, _i, _f, _i64, _T, _T]),
    "sb_mse_forward": (_i, [_T, _T, _i, _T]),
    "sb_mse_backward": (_i, [_T, _T, _i, _T, _T, _T]),
    "sb_class_loss_forward": (_i, [ctypes.POINTER(ClassLoss), _T, _T, _T, _i, _T]),
    "sb_class_loss_backward": (_i, [ctypes.POINTER(ClassLoss), _T, _T, _T, _i, _T, _T]),
    "sb_ctc_loss_forward": (_i, [ctypes.POINTER(CtcLoss), _T, _T, _T, _T, _i, _T]),
    "sb_ctc_loss_backward": (_i, [ctypes.POINTER(CtcLoss), _T, _T, _T, _T, _i, _T, _T]),
    "sb_elementwise_loss_forward": (_i, [ctypes.POINTER(ElementwiseLoss), _T, _T, _T, _T, _i, _T]),
    "sb_elementwise_loss_backward": (_i, [ctypes.POINTER(ElementwiseLoss), _T, _T, _T, _T, _i, _T,
                                          _T, _T]),
    "sb_batch_norm_forward": (_i, [_T, _T, _T, _T, _T, _b, _f, _f, _T, _T, _T]),
    "sb_batch_norm_backward": (_i, [_T, _T, _T, _T, _T, _b, _T, _T, _T]),
    "sb_layer_norm_forward": (_i, [_T, _i, _T, _T, _f, _T, _T, _T]),
    "sb_layer_norm_backward": (_i, [_T, _T, _i, _T, _T, _T, _T, _T, _T]),
    "sb_rms_norm_forward": (_i, [_T, _i, _T, _f, _T, _T]),
    "sb_rms_norm_backward": (_i, [_T, _T, _i, _T, _T, _T, _T]),
    "sb_group_norm_forward": (_i, [_T, _i64, _T, _T, _f, _T, _T, _T]),
    "sb_group_norm_backward": (_i, [_T, _T, _i64, _T, _T, _T, _T, _T, _T]),
    "sb_dropout_forward": (_i, [_T, _f, _b, _u64, _u64, _u64, _T, _T]),
    "sb_dropout_backward": (_i, [_T, _T, _f, _b, _T]),
    "sb_sdpa_default_scale": (_i, [_i64, ctypes.POINTER(_f)]),
    "sb_sdpa_forward": (_i, [_T, _T, _T, _T, _i, _f, _f, _u64, _u64, _u64, _T, _T]),
    "sb_sdpa_backward": (_i, [_T, _T, _T, _T, _T, _i, _f, _f, _u64, _u64, _u64, _T, _T, _T, _T]),
    "sb_rnn_forward": (_i, [ctypes.POINTER(RnnSequence), _T, _T, _T, _T, _T, _T, _T, _T, _T, _T,
                            _T]),
    "sb_rnn_backward": (_i, [ctypes.POINTER(RnnSequence), _T, _T, _T, _T, _T, _T, _T, _T, _T, _T,
                             _T]),
    "sb_sgd_step": (_i, [ctypes.POINTER(SgdConfig), _i64, _i64, _P, _P, _P]),
    "sb_sgd_step_tensor": (_i, [ctypes.POINTER(SgdConfig), _i64, _T, _T, _T]),
    "sb_sgd_check_config": (_i, [ctypes.POINTER(SgdConfig)]),
    "sb_adam_step": (_i, [ctypes.POINTER(AdamConfig), _i64, _i64, _P, _P, _P, _P, _P]),
    "sb_adam_step_tensor": (_i, [ctypes.POINTER(AdamConfig), _i64, _T, _T, _T, _T, _T]),
    "sb_adam_check_config": (_i, [ctypes.POINTER(AdamConfig)]),
    "sb_rng_uniform_range": (_i, [ctypes.POINTER(Rng), _u64, _f, _f, _P, _i64]),
    "sb_rng_uniform": (_i, [ctypes.POINTER(Rng), _u64, _P, _i64]),
    "sb_rng_normal": (_i, [ctypes.POINTER(Rng), _u64, _f, _f, _P, _i64]),
    "sb_rng_bounded": (_i, [ctypes.POINTER(Rng), _u64, ctypes.c_uint32, _P, _i64]),
    "sb_rng_permutation": (_i, [_u64, _u64, _i64, _P]),
    "sb_hash_tensors": (_i, [ctypes.POINTER(_T), ctypes.c_size_t, ctypes.c_char_p]),
    "sb_hex_digest": (None, [ctypes.c_char_p, ctypes.c_char_p]),
    "sb_mnist_load": (_i, [ctypes.c_char_p, _b, ctypes.POINTER(Dataset)]),
    "sb_dataset_free": (None, [ctypes.POINTER(Dataset)]),
    "sb_model_lenet5": (_i, [ctypes.POINTER(_P)]),
    "sb_module_init": (_i, [_P, _u64]),
    "sb_module_free": (None, [_P]),
    "sb_module_parameters": (_i, [_P, ctypes.POINTER(Named), ctypes.c_size_t,
                                  ctypes.POINTER(ctypes.c_size_t)]),
    "sb_module_buffers": (_i, [_P, ctypes.POINTER(Named), ctypes.c_size_t,
                               ctypes.POINTER(ctypes.c_size_t)]),
    "sb_module_hash": (_i, [_P, ctypes.c_char_p]),
    "sb_sgemm": (_i, [ctypes.c_char, ctypes.c_char, _i64, _i64, _i64, _P, _i64, _P, _i64, _P, _i64]),
    "sb_ssum": (_i, [_i64, _P, _i64, ctypes.POINTER(_f)]),
    "sb_expf": (_f, [_f]),
    "sb_logf": (_f, [_f]),
    "sb_tanhf": (_f, [_f]),
    "sb_powf": (_f, [_f, _f]),
}

for _name, (_res, _args) in _SIGS.items():
    _fn = getattr(_cdll, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def _scalar_checker(ctype, what):
    """The range check of one argument: checked_int or checked_float bound to
    its type and message, or None for pointers and structs (ctypes checks
    those itself)."""
    if ctype in _INT_TYPES:
        lo, hi = int_range(ctype)

        def check_int(value):
            # the common case (an in-range int) without checked_int's call
            if type(value) is int and lo <= value <= hi:
                return value
            return checked_int(value, ctype, what)
        return check_int
    if ctype in _FLOAT_TYPES:
        return lambda value: checked_float(value, ctype, what)
    return None


def _checked_function(name, fn, argtypes):
    """fn with every scalar argument range-checked against its declared type."""
    checkers = [_scalar_checker(t, "%s: argument #%d" % (name, i + 1))
                for i, t in enumerate(argtypes)]
    scalars = [(i, c) for i, c in enumerate(checkers) if c is not None]
    count = len(argtypes)

    def call_checked(*args):
        if len(args) != count:
            raise TypeError("%s takes %d arguments, got %d" % (name, count, len(args)))
        if scalars:
            args = list(args)
            for i, check_one in scalars:
                args[i] = check_one(args[i])
        return fn(*args)
    call_checked.__name__ = name
    # what code inspecting the ctypes function expects to find
    call_checked.argtypes, call_checked.restype, call_checked.raw = fn.argtypes, fn.restype, fn
    return call_checked


class _CheckedLibrary:
    """libsamebits with every function of _SIGS wrapped by _checked_function;
    other symbols (tests declare a few themselves) are the raw ctypes ones."""

    def __init__(self, cdll):
        self._cdll = cdll
        self._checked = {n: _checked_function(n, getattr(cdll, n), a) for n, (_, a) in _SIGS.items()}

    def __getattr__(self, name):
        checked = self.__dict__.get("_checked", {})
        if name in checked:
            return checked[name]
        return getattr(self._cdll, name)


lib = _CheckedLibrary(_cdll)


def argtype(name, index):
    """The declared ctypes type of argument `index` (0-based) of C function `name`."""
    return _SIGS[name][1][index]


def arg_int(value, function, index, fn, param):
    """A Python op's integer parameter checked against the C type of the
    argument it becomes, with the Python parameter named:
    'samebits.softmax: dim=4294967297 is out of range (C int holds ...)'."""
    return checked_int(value, argtype(function, index), "samebits.%s: %s" % (fn, param))


def arg_float(value, function, index, fn, param):
    """A Python op's float parameter checked against its C argument's type."""
    return checked_float(value, argtype(function, index), "samebits.%s: %s" % (fn, param))


def field_int(value, struct, field, fn, param):
    """A Python op's integer parameter that becomes `struct`.`field`."""
    return checked_int(value, struct.field_type(field), "samebits.%s: %s" % (fn, param))


def last_error():
    msg = lib.sb_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status, function=""):
    """Raises SamebitsError with sb_last_error()'s message on a non-zero status."""
    if status != 0:
        msg = last_error() or "%s failed" % function
        name = lib.sb_status_name(status)
        name = name.decode() if name else str(status)
        lib.sb_clear_error()
        raise SamebitsError("%s (%s)" % (msg, name), status, function)


# The device samebits' ops run on (samebits.set_device): SB_DEVICE_CPU, or
# a device whose backend computes the CPU's bits (contract section 1).
device = SB_DEVICE_CPU


class _OpState(threading.local):
    """What the op running on this thread has seen of its operands
    (_convert.op_scope): `depth` counts the op scopes entered; `where` is
    None before the first operand, HOST after a host one, or the first
    device operand (a _device_array.DeviceArray), whose device the op's
    results are allocated on and its C calls run on."""
    depth = 0
    where = None
    name = None   # the innermost op's name, for messages
    keep = None   # device copies of the op's host scalars, alive until it returns


HOST = "host"
op_state = _OpState()
# set by _device_array: the header of a DeviceArray, and the CUDA call that
# orders a C call against PyTorch's stream
device_header = None
device_scalar_header = None
run_on_cuda = None


def call(name, *args):
    """lib.<name>(*args), raising on a non-zero sb_status. An op whose
    operands are CUDA tensors runs ordered against PyTorch's stream
    (_device_array). With a device chosen (samebits.set_device), an op's
    host tensors go to that device for the call and come back after it (see
    _call_on_device)."""
    where = op_state.where
    if where is not None and where is not HOST and where.device == SB_DEVICE_CUDA:
        return run_on_cuda(name, args)
    if device != SB_DEVICE_CPU:
        return _call_on_device(name, args)
    check(getattr(lib, name)(*args), name)


def _call_on_device(name, args):
    """Runs lib.<name> with every host Tensor argument (a byref of a wrapped
    array) replaced by a copy on the chosen device, then copies each back
    over its array: the op computed there, and its outputs land where the
    caller expects them (inputs come back with their own bits). One header
    passed twice (an in-place op) is one device tensor. Calls without tensor
    arguments (raw-pointer optimizer steps, hashing, loading) run on the
    host unchanged."""
    moved, by_header, new_args = [], {}, []
    try:
        for a in args:
            t = getattr(a, "_obj", None)
            if not isinstance(t, Tensor) or t.device != SB_DEVICE_CPU:
                new_args.append(a)
                continue
            key = (t.data, t.dtype, t.ndim, tuple(t.shape[:t.ndim]), tuple(t.strides[:t.ndim]))
            if key not in by_header:
                d = _T()
                check(lib.sb_tensor_to(ctypes.byref(d), ctypes.byref(t), device), name)
                by_header[key] = d
                moved.append((t, d))
            new_args.append(by_header[key])
        check(getattr(lib, name)(*new_args), name)
        for host, d in moved:
            check(lib.sb_tensor_copy(ctypes.byref(host), d), name)
    finally:
        for _, d in moved:
            lib.sb_tensor_free(d)


# the most elements a tensor may have (src/core/checked.h)
SB_NUMEL_MAX = (2 ** 63 - 1) // 16

_NP_DTYPES = {np.dtype(np.float32): SB_F32, np.dtype(np.int32): SB_I32,
              np.dtype(np.int64): SB_I64}


def wrap(arr):
    """An sb_tensor header (Python-owned) viewing the C-contiguous numpy array
    `arr` zero-copy; keep `arr` alive while C uses it. The header is the one
    sb_tensor_wrap builds (tests/python/test_bindings.py compares the two
    byte for byte), filled here because an op wraps every operand: two C
    calls and a malloc per operand were a third of a small op's time. Arrays
    sb_tensor_wrap would refuse (too many dimensions, too many elements)
    take the C path and its message. A device array (a CUDA tensor's memory)
    gets a device header (_device_array.header)."""
    if type(arr) is not np.ndarray and not isinstance(arr, np.ndarray):
        return device_header(arr)
    dt = _NP_DTYPES[arr.dtype]
    shape = arr.shape
    nd = len(shape)
    if not nd and op_state.where is not None and op_state.where is not HOST:
        return device_scalar_header(arr)
    if nd <= SB_MAX_DIMS:
        strides = [0] * nd
        stride = 1
        for i in range(nd - 1, -1, -1):
            strides[i] = stride
            stride *= shape[i] or 1
        if stride <= SB_NUMEL_MAX:
            t = Tensor()   # zero-filled: device CPU, owner "wrapped"
            t.dtype, t.ndim, t.data = dt, nd, arr.ctypes.data
            t.shape[:nd] = shape
            t.strides[:nd] = strides
            return t
    return wrap_in_c(arr)


def wrap_in_c(arr):
    """wrap(arr) built by sb_tensor_wrap, which validates it (and raises with
    its message when it refuses)."""
    dt = _NP_DTYPES[arr.dtype]
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    out = _T()
    call("sb_tensor_wrap", ctypes.byref(out), ctypes.c_void_p(arr.ctypes.data), dt, arr.ndim,
         shape, None)
    t = Tensor()
    ctypes.memmove(ctypes.byref(t), out, ctypes.sizeof(Tensor))
    lib.sb_tensor_free(out)
    return t


def ref(t):
    """A pointer argument for an optional Tensor (None -> NULL)."""
    return None if t is None else ctypes.byref(t)


def tensor_to_numpy(tp, copy=True):
    """A numpy array of a C tensor's (contiguous) elements."""
    t = tp.contents
    n = 1
    for i in range(t.ndim):
        n *= t.shape[i]
    ctype = {SB_F32: ctypes.c_float, SB_I32: ctypes.c_int32, SB_I64: ctypes.c_int64}[t.dtype]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if n == 0:
        return np.zeros(shape, dtype=np.dtype(ctype))
    buf = (ctype * n).from_address(t.data)
    arr = np.frombuffer(buf, dtype=np.dtype(ctype)).reshape(shape)
    return arr.copy() if copy else arr
