"""Hashes and runtime settings."""
import ctypes

import numpy as np

from . import _host_pool, _lib
from ._lib import call, wrap

__all__ = ["get_hash", "print_hash", "set_num_threads", "get_num_threads", "isa", "set_isa"]


def _as_np(t):
    try:
        import torch
        if isinstance(t, torch.Tensor):
            if t.device.type != "cpu":
                raise NotImplementedError("samebits.get_hash: tensor is on %s; CUDA tensors are "
                                          "not supported by this build" % t.device)
            t = t.detach().contiguous().numpy()
    except ImportError:
        pass
    if not isinstance(t, np.ndarray):
        raise TypeError("samebits.get_hash: expected a tensor, an array, a module or a list of "
                        "them, got %s" % type(t).__name__)
    if t.dtype not in (np.float32, np.int32, np.int64):
        raise TypeError("samebits.get_hash: dtype %s is not hashable by samebits (float32, int32, "
                        "int64)" % t.dtype)
    return t if t.flags.c_contiguous else t.copy(order="C")


def _tensors(x):
    try:
        import torch
        if isinstance(x, torch.nn.Module):
            # sb_module_hash: the parameters, in declaration order
            return [_as_np(p) for p in x.parameters()]
    except ImportError:
        pass
    if isinstance(x, (list, tuple)):
        return [_as_np(t) for t in x]
    return [_as_np(x)]


def get_hash(x):
    """SHA-256 (64 hex digits) of the canonical bytes (contract "Hashes") of a
    tensor/array, a list of them, or a module's parameters in declaration
    order - the same as sb_module_hash, so it matches `samebits train`'s
    "Hash of the ... model" lines for the same parameters."""
    arrs = _tensors(x)
    heads = [wrap(a) for a in arrs]
    ptrs = (ctypes.POINTER(_lib.Tensor) * max(len(heads), 1))(
        *[ctypes.pointer(h) for h in heads])
    digest = ctypes.create_string_buffer(32)
    call("sb_hash_tensors", ptrs, len(heads), digest)
    hexbuf = ctypes.create_string_buffer(65)
    _lib.lib.sb_hex_digest(digest, hexbuf)
    return hexbuf.value.decode()


def print_hash(label, x):
    """Prints '<label>: <hash>' (the CLI's format)."""
    print("%s: %s" % (label, get_hash(x)), flush=True)


def set_num_threads(n):
    """Threads samebits' kernels use (results do not depend on it)."""
    call("sb_set_num_threads", _lib.arg_int(n, "sb_set_num_threads", 0, "set_num_threads", "n"))


def get_num_threads():
    return _lib.lib.sb_num_threads()


def isa():
    """The instruction-set level of samebits' fast kernels, e.g. 'avx2'."""
    return _lib.lib.sb_isa_name(_lib.lib.sb_isa()).decode()


def set_isa(name):
    if not isinstance(name, str):
        raise TypeError("samebits.set_isa: name must be a string such as 'avx2', got %r" % (name,))
    level = ctypes.c_int()
    call("sb_isa_from_name", name.encode(), ctypes.byref(level))
    call("sb_set_isa", level.value)


def empty_cache():
    """Drops the large host buffers samebits keeps for reuse (results of
    1 MiB or more, up to 1 GiB tracked): free ones go back to malloc now,
    ones still viewed when their last view dies; as torch.cuda.empty_cache
    does for PyTorch's GPU memory. Results keep their bits either way."""
    _host_pool.release()
