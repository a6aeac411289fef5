"""Philox-based seeding, initialisation and shuffling, identical to the C
library's (include/samebits/random.h, nn.h, train.h).

Every random value is a pure function of (seed, stream, index), so nothing
here has hidden state except two counters that make module construction
follow the C library's numbering:

  * manual_seed(seed) sets the seed and restarts the *parameter stream
    counter* at 0. Each samebits.nn layer constructed afterwards initialises
    its parameters from the next streams, one stream per parameter tensor in
    declaration order: building a model layer by layer right after
    manual_seed(s) gives exactly sb_module_init(model, s). init_module(model,
    seed) re-initialises an existing (e.g. converted) model the same way
    without touching the counter.
  * Dropout modules get streams DROPOUT_STREAM_BASE + k, k = 0, 1, ... in
    construction order since the last manual_seed.
"""
import ctypes

import numpy as np

from . import _lib
from ._lib import call

__all__ = ["manual_seed", "initial_seed", "init_module", "fan_in_uniform_", "permutation",
           "epoch_permutation", "uniform", "normal", "bernoulli", "bernoulli_stream",
           "SHUFFLE_STREAM", "DROPOUT_STREAM_BASE", "BERNOULLI_STREAM_BASE"]

#: SB_STREAM_SHUFFLE of include/samebits/train.h: epoch e shuffles with stream SHUFFLE_STREAM + e.
SHUFFLE_STREAM = 0x5348554600000000
#: Streams of Dropout modules made in Python ("DROP" in ASCII, then a counter).
DROPOUT_STREAM_BASE = 0x44524F5000000000
#: Streams of Bernoulli draws in strict model code ("BERN", then the FNV-1a
#: hash of the module path that draws): see bernoulli_stream.
BERNOULLI_STREAM_BASE = 0x4245524E00000000

_state = {"seed": 0, "param_stream": 0, "dropout_stream": 0}


def manual_seed(seed):
    """Sets samebits' seed (an integer in [0, 2^64)) and restarts the stream
    counters. The default seed, before any call, is 0 (the CLI's default)."""
    seed = _u64(seed, "manual_seed", "seed")
    _state.update(seed=seed, param_stream=0, dropout_stream=0)


def initial_seed():
    return _state["seed"]


def _u64(value, fn, name):
    """A seed, stream or index: an integer in [0, 2^64) (a float or a larger
    int is refused, not truncated)."""
    return _lib.checked_int(value, ctypes.c_uint64, "samebits.%s: %s" % (fn, name))


def _count(shape, fn):
    """The element count of an output shape, each size a non-negative int64."""
    dims = tuple(shape) if hasattr(shape, "__len__") else (shape,)
    n = 1
    for i, d in enumerate(dims):
        d = _lib.checked_int(d, ctypes.c_int64, "samebits.%s: shape[%d]" % (fn, i))
        if d < 0:
            raise ValueError("samebits.%s: shape %r has a negative size" % (fn, dims))
        n *= d
    if n > _lib.int_range(ctypes.c_int64)[1] // 4:
        raise ValueError("samebits.%s: shape %r has more elements than an array can hold"
                         % (fn, dims))
    return dims, n


def _next_streams(n):
    s = _state["param_stream"]
    _state["param_stream"] += n
    return s


def _next_dropout_stream():
    s = DROPOUT_STREAM_BASE + _state["dropout_stream"]
    _state["dropout_stream"] += 1
    return s


def _fill_uniform_range(arr, seed, stream, lo, hi):
    rng = _lib.Rng(seed, stream, 0)
    call("sb_rng_uniform_range", ctypes.byref(rng), 0, lo, hi, ctypes.c_void_p(arr.ctypes.data),
         arr.size)


def _bound(fan_in):
    # 1.0f / sqrtf((float)fan_in): float32 conversion, IEEE sqrt, one division
    return float(np.float32(1.0) / np.sqrt(np.float32(fan_in)))


def _np_param(p):
    import torch
    t = p.detach()
    if t.dtype != torch.float32 or t.device.type != "cpu" or not t.is_contiguous():
        raise TypeError("samebits init: parameters must be contiguous float32 CPU tensors, got "
                        "%s on %s" % (t.dtype, t.device))
    return t.numpy()


def fan_in_uniform_(tensors, fan_in, seed, first_stream):
    """Fills tensors[k] with U(-b, b), b = 1/sqrtf(fan_in), from Philox stream
    first_stream + k of seed (PyTorch's default Linear/Conv init; None
    entries still own their stream)."""
    b = _bound(fan_in)
    for k, t in enumerate(tensors):
        if t is not None:
            _fill_uniform_range(_np_param(t), seed, first_stream + k, -b, b)


def _init_rule(module, name):
    """'fan_in' with its fan-in, 'ones' or 'zeros' for a parameter, like the C modules."""
    import torch
    if isinstance(module, torch.nn.Linear):
        return "fan_in", module.in_features
    if isinstance(module, torch.nn.Conv2d):
        kh, kw = module.kernel_size
        return "fan_in", module.in_channels // module.groups * kh * kw
    if isinstance(module, (torch.nn.RNNBase, torch.nn.RNNCellBase)):
        return "fan_in", module.hidden_size   # PyTorch's U(-1/sqrt(hidden), 1/sqrt(hidden))
    norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm)
    norms += (torch.nn.RMSNorm,) if hasattr(torch.nn, "RMSNorm") else ()  # torch >= 2.4
    if isinstance(module, norms):
        return ("ones", None) if name == "weight" else ("zeros", None)
    raise NotImplementedError(
        "samebits.init_module: no samebits initialisation rule for parameter %r of %s"
        % (name, type(module).__module__ + "." + type(module).__name__))


def init_module(module, seed=None):
    """Re-initialises every parameter of `module` as sb_module_init does:
    parameter number k in module.parameters() order uses Philox stream k of
    seed (default: the manual_seed value); Linear and Conv2d weights and
    biases U(-1/sqrtf(fan_in), +1/sqrtf(fan_in)), every RNN/LSTM/GRU (and
    cell) parameter that with fan_in = hidden_size, norm weights 1 and biases
    0; batch-norm running mean 0, running var 1, batch count 0. Returns the
    module."""
    import torch
    seed = _state["seed"] if seed is None else _u64(seed, "init_module", "seed")
    stream = 0
    seen = set()
    with torch.no_grad():
        for mod in module.modules():
            for name, p in mod.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                rule, fan_in = _init_rule(mod, name)
                if rule == "fan_in":
                    fan_in_uniform_([p], fan_in, seed, stream)
                else:
                    p.fill_(1.0 if rule == "ones" else 0.0)
                stream += 1
            if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm) and mod.track_running_stats:
                mod.reset_running_stats()
    return module


def permutation(n, seed, stream):
    """sb_rng_permutation: a uniformly random permutation of 0..n-1 (int64 numpy)."""
    (n,), _ = _count((n,), "permutation")
    seed, stream = _u64(seed, "permutation", "seed"), _u64(stream, "permutation", "stream")
    perm = np.empty(n, dtype=np.int64)
    call("sb_rng_permutation", seed, stream, n, ctypes.c_void_p(perm.ctypes.data))
    return perm


def epoch_permutation(n, seed, epoch):
    """The order in which the C loader visits n examples in epoch `epoch`."""
    epoch = _u64(epoch, "epoch_permutation", "epoch")
    return permutation(n, seed, _u64(SHUFFLE_STREAM + epoch, "epoch_permutation",
                                     "SHUFFLE_STREAM + epoch"))


def uniform(shape, seed, stream, low=0.0, high=1.0, index=0):
    """float32 numpy array of Philox uniforms: element j is element index + j
    of (seed, stream), mapped to low + (high - low) * u."""
    c = "sb_rng_uniform_range"
    shape, n = _count(shape, "uniform")
    rng = _lib.Rng(_u64(seed, "uniform", "seed"), _u64(stream, "uniform", "stream"), 0)
    index = _lib.arg_int(index, c, 1, "uniform", "index")
    low, high = _lib.arg_float(low, c, 2, "uniform", "low"), _lib.arg_float(high, c, 3, "uniform", "high")
    out = np.empty(shape, dtype=np.float32)
    call(c, ctypes.byref(rng), index, low, high, ctypes.c_void_p(out.ctypes.data), n)
    return out


def normal(shape, seed, stream, mean=0.0, std=1.0, index=0):
    """float32 numpy array of Philox normals (mean + std * z)."""
    c = "sb_rng_normal"
    shape, n = _count(shape, "normal")
    rng = _lib.Rng(_u64(seed, "normal", "seed"), _u64(stream, "normal", "stream"), 0)
    index = _lib.arg_int(index, c, 1, "normal", "index")
    mean, std = _lib.arg_float(mean, c, 2, "normal", "mean"), _lib.arg_float(std, c, 3, "normal", "std")
    out = np.empty(shape, dtype=np.float32)
    call(c, ctypes.byref(rng), index, mean, std, ctypes.c_void_p(out.ctypes.data), n)
    return out


def bernoulli_stream(path):
    """The Philox stream of the Bernoulli draws made by the module at `path`
    (its name in the model, '' for the root): BERNOULLI_STREAM_BASE plus the
    32-bit FNV-1a hash of the path's UTF-8 bytes. Fixed by the model's
    structure, so it does not depend on call order, threads or batch split."""
    h = 0x811C9DC5
    for byte in str(path).encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return BERNOULLI_STREAM_BASE + h


def bernoulli(shape, p, seed, stream, offset):
    """float32 array of `shape`: element i (row-major) is 1.0 with
    probability p, else 0.0; it is dropout's keep mask (contract section 11)
    for the drop probability 1 - p: mask_i = (u_i >= (float)(1 - p)) with
    u_i = uniform(seed, stream, offset + i). Costs nothing from any other
    stream; the caller advances offset by the element count."""
    fn = "bernoulli"
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError("samebits.%s: p=%r must be in [0, 1]" % (fn, p))
    from . import ops
    import numpy as np
    _, mask = ops._dropout(np.ones(tuple(shape), dtype=np.float32), 1.0 - p, True,
                           _u64(seed, fn, "seed"), _u64(stream, fn, "stream"),
                           _u64(offset, fn, "offset"), fn=fn)
    return mask
