"""Turning caller arrays (torch.Tensor or numpy.ndarray) into C-ready numpy
views and results back into the caller's type.

Rules (documented in python/README.md):
  * float32 only for float data: float64, float16, bfloat16 ... are refused
    with a TypeError. samebits never converts silently, because a conversion
    is itself a rounding the caller should see.
  * CPU only: a CUDA tensor raises UnsupportedDeviceError. The dispatch point
    is `device_of`; a CUDA backend adds its branch there.
  * Non-contiguous inputs are COPIED to a contiguous buffer (the copy is
    exact, so results are the same bits as for a contiguous input); outputs
    are always new contiguous arrays.
"""
import numpy as np

try:
    import torch
except ImportError:  # numpy-only use of samebits.ops is supported
    torch = None

__all__ = ["UnsupportedDeviceError", "to_np", "to_np_index", "back", "kind_of", "device_of"]


class UnsupportedDeviceError(NotImplementedError):
    pass


def is_torch(x):
    return torch is not None and isinstance(x, torch.Tensor)


def kind_of(*xs):
    """'torch' if any argument is a torch.Tensor, else 'numpy'."""
    return "torch" if any(is_torch(x) for x in xs) else "numpy"


def device_of(x, fn, name):
    """The device an input lives on. Only 'cpu' is served by this build."""
    if is_torch(x) and x.device.type != "cpu":
        raise UnsupportedDeviceError(
            "samebits.%s: %s is on %s; CUDA tensors are not supported by this build "
            "(move it with .cpu())" % (fn, name, x.device))
    return "cpu"


def _dtype_name(x):
    return str(x.dtype) if is_torch(x) else "numpy.%s" % np.dtype(x.dtype).name


def to_np(x, fn, name):
    """A C-contiguous float32 numpy view of x (zero-copy when x already is one)."""
    if is_torch(x):
        device_of(x, fn, name)
        if x.dtype != torch.float32:
            raise TypeError("samebits.%s: %s has dtype %s; samebits computes in float32 only "
                            "(convert explicitly with .float())" % (fn, name, x.dtype))
        if x.is_sparse:
            raise TypeError("samebits.%s: %s is a sparse tensor; only dense tensors are supported"
                            % (fn, name))
        return x.detach().contiguous().numpy()
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        if a.dtype != np.float32:
            raise TypeError("samebits.%s: %s has dtype %s; samebits computes in float32 only "
                            "(convert explicitly with .astype(numpy.float32))"
                            % (fn, name, _dtype_name(a)))
        return _contiguous(a)
    raise TypeError("samebits.%s: %s must be a torch.Tensor or a numpy.ndarray, got %s"
                    % (fn, name, type(x).__name__))


def to_np_index(x, fn, name):
    """A C-contiguous int64/int32 numpy view of class indices."""
    if is_torch(x):
        device_of(x, fn, name)
        if x.dtype not in (torch.int64, torch.int32):
            raise TypeError("samebits.%s: %s has dtype %s; class indices must be int64 or int32"
                            % (fn, name, x.dtype))
        return x.detach().contiguous().numpy()
    if isinstance(x, np.ndarray):
        if x.dtype not in (np.int64, np.int32):
            raise TypeError("samebits.%s: %s has dtype %s; class indices must be int64 or int32"
                            % (fn, name, _dtype_name(x)))
        return _contiguous(x)
    raise TypeError("samebits.%s: %s must be a torch.Tensor or a numpy.ndarray, got %s"
                    % (fn, name, type(x).__name__))


def _contiguous(a):
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    return a if a.flags.c_contiguous else a.copy(order="C")


def back(arr, kind):
    """Returns a result array in the caller's type (zero-copy)."""
    if kind == "torch":
        return torch.from_numpy(arr)
    return arr


def empty(shape):
    return np.empty(tuple(int(s) for s in shape), dtype=np.float32)
