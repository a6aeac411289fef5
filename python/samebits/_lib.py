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
import os

import numpy as np

__all__ = ["lib", "SamebitsError", "Tensor", "check", "lib_path"]


class SamebitsError(RuntimeError):
    """A samebits C call failed; the message is sb_last_error()'s."""

    def __init__(self, message, status=None, function=None):
        super().__init__(message)
        self.status = status
        self.function = function


SB_MAX_DIMS = 8
SB_F32, SB_I32, SB_I64 = 0, 1, 2
SB_DEVICE_CPU, SB_DEVICE_CUDA = 0, 1


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


class Conv2dParams(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("stride_h", "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w", "groups")]


class Pool2dParams(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in
                ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_h", "pad_w")] + [
        ("ceil_mode", ctypes.c_bool), ("count_include_pad", ctypes.c_bool)]


class SgdConfig(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_double), ("momentum", ctypes.c_double),
                ("dampening", ctypes.c_double), ("weight_decay", ctypes.c_double),
                ("nesterov", ctypes.c_bool), ("maximize", ctypes.c_bool)]


class AdamConfig(ctypes.Structure):
    _fields_ = [("lr", ctypes.c_double), ("beta1", ctypes.c_double),
                ("beta2", ctypes.c_double), ("eps", ctypes.c_double),
                ("weight_decay", ctypes.c_double), ("amsgrad", ctypes.c_bool),
                ("decoupled_weight_decay", ctypes.c_bool), ("maximize", ctypes.c_bool)]


class Rng(ctypes.Structure):
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


lib, lib_path = _load()

_P = ctypes.c_void_p
_T = ctypes.POINTER(Tensor)
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_f = ctypes.c_float
_b = ctypes.c_bool
_i = ctypes.c_int
_ip = ctypes.POINTER(ctypes.c_int)

# name: (restype, argtypes). restype int means an sb_status.
_SIGS = {
    "sb_last_error": (ctypes.c_char_p, []),
    "sb_status_name": (ctypes.c_char_p, [_i]),
    "sb_clear_error": (None, []),
    "sb_tensor_wrap": (_i, [ctypes.POINTER(_T), _P, _i, _i, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_tensor_free": (None, [_T]),
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
    "sb_pool2d_output_size": (_i, [_i64, _i64, ctypes.POINTER(Pool2dParams),
                                   ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "sb_max_pool2d_forward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T, _T]),
    "sb_max_pool2d_backward": (_i, [_T, _T, ctypes.POINTER(Pool2dParams), _T]),
    "sb_avg_pool2d_forward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T]),
    "sb_avg_pool2d_backward": (_i, [_T, ctypes.POINTER(Pool2dParams), _T]),
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
    "sb_sum": (_i, [_T, _ip, _i, _b, _T]),
    "sb_mean": (_i, [_T, _ip, _i, _b, _T]),
    "sb_sum_backward": (_i, [_T, _ip, _i, _b, _T]),
    "sb_mean_backward": (_i, [_T, _ip, _i, _b, _T]),
    "sb_softmax_forward": (_i, [_T, _i, _T]),
    "sb_softmax_backward": (_i, [_T, _T, _i, _T]),
    "sb_log_softmax_forward": (_i, [_T, _i, _T]),
    "sb_log_softmax_backward": (_i, [_T, _T, _i, _T]),
    "sb_cross_entropy_forward": (_i, [_T, _T, _i, _f, _i64, _T]),
    "sb_cross_entropy_backward": (_i, [_T, _T, _i, _f, _i64, _T, _T]),
    "sb_mse_forward": (_i, [_T, _T, _i, _T]),
    "sb_mse_backward": (_i, [_T, _T, _i, _T, _T, _T]),
    "sb_batch_norm_forward": (_i, [_T, _T, _T, _T, _T, _b, _f, _f, _T, _T, _T]),
    "sb_batch_norm_backward": (_i, [_T, _T, _T, _T, _T, _b, _T, _T, _T]),
    "sb_layer_norm_forward": (_i, [_T, _i, _T, _T, _f, _T, _T, _T]),
    "sb_layer_norm_backward": (_i, [_T, _T, _i, _T, _T, _T, _T, _T, _T]),
    "sb_dropout_forward": (_i, [_T, _f, _b, _u64, _u64, _u64, _T, _T]),
    "sb_dropout_backward": (_i, [_T, _T, _f, _b, _T]),
    "sb_sgd_step": (_i, [ctypes.POINTER(SgdConfig), _i64, _i64, _P, _P, _P]),
    "sb_sgd_check_config": (_i, [ctypes.POINTER(SgdConfig)]),
    "sb_adam_step": (_i, [ctypes.POINTER(AdamConfig), _i64, _i64, _P, _P, _P, _P, _P]),
    "sb_adam_check_config": (_i, [ctypes.POINTER(AdamConfig)]),
    "sb_rng_uniform_range": (_i, [ctypes.POINTER(Rng), _u64, _f, _f, _P, _i64]),
    "sb_rng_uniform": (_i, [ctypes.POINTER(Rng), _u64, _P, _i64]),
    "sb_rng_normal": (_i, [ctypes.POINTER(Rng), _u64, _f, _f, _P, _i64]),
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
}

for _name, (_res, _args) in _SIGS.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args


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


def call(name, *args):
    """lib.<name>(*args), raising on a non-zero sb_status."""
    check(getattr(lib, name)(*args), name)


_NP_DTYPES = {np.dtype(np.float32): SB_F32, np.dtype(np.int32): SB_I32,
              np.dtype(np.int64): SB_I64}


def wrap(arr):
    """An sb_tensor header (Python-owned) viewing the C-contiguous numpy array
    `arr` zero-copy. The header is built by sb_tensor_wrap (which validates
    it) and copied here, so nothing needs freeing; keep `arr` alive while C
    uses it."""
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
