"""Turning caller arrays (torch.Tensor or numpy.ndarray) into C-ready numpy
views and results back into the caller's type.

Rules (documented in python/README.md):
  * float32 only for float data: float64, float16, bfloat16 ... are refused
    with a TypeError. samebits never converts silently, because a conversion
    is itself a rounding the caller should see.
  * CPU tensors become numpy views; a CUDA tensor (with a libsamebits built
    with its CUDA backend, on a machine with a GPU) becomes a DeviceArray
    over its memory, zero-copy (_device_array.py), and the op's results are
    CUDA tensors. Without that backend or GPU it raises
    UnsupportedDeviceError. The operands of one op share a device
    (`op_scope`, `empty`).
  * Non-contiguous inputs are COPIED to a contiguous buffer (the copy is
    exact, so results are the same bits as for a contiguous input); outputs
    are always new contiguous arrays.
"""
import functools

import numpy as np

from . import _lib
from . import _device_array as _dev
from . import _host_pool
from ._lib import UnsupportedDeviceError, op_state, HOST

try:
    import torch
except ImportError:  # numpy-only use of samebits.ops is supported
    torch = None

__all__ = ["UnsupportedDeviceError", "to_np", "to_np_index", "back", "kind_of", "device_of",
           "op_scope", "empty", "to_torch", "samebits_code"]

# torch >= 2.0 (which has DisableTorchFunctionSubclass beside it):
# DisableTorchFunction turns off torch function modes as well as subclass
# handlers. In 1.13 it turns off only the latter.
_MODES_OFF = (torch._C.DisableTorchFunction
              if torch is not None and hasattr(torch._C, "DisableTorchFunctionSubclass") else None)


def samebits_code(fn):
    """fn, one of samebits' entry points from model code (a samebits.nn
    layer's forward, a strict-mode handler), run with torch function modes
    off. Its torch calls are the data movement of samebits' own ops (views,
    detach, numpy), which StrictMode passes anyway because they come from
    samebits' frames; off, they skip the mode's Python handler and its frame
    walk, some 2-3 us each and tens of them per layer call. Nothing in fn
    calls model code. With torch 1.13 (no way to turn a mode off from C) fn
    is returned as it is and the mode passes the calls as before."""
    if _MODES_OFF is None:
        return fn

    @functools.wraps(fn)
    def modes_off(*args, **kwargs):
        with _MODES_OFF():
            return fn(*args, **kwargs)
    return modes_off


def is_torch(x):
    return torch is not None and isinstance(x, torch.Tensor)


def kind_of(*xs):
    """'torch' if any argument is a torch.Tensor, else 'numpy' (device
    arrays from the numpy-level code come back as device arrays)."""
    return "torch" if any(is_torch(x) for x in xs) else "numpy"


def op_scope(fn):
    """fn as one op: the device of its first array operand (to_np,
    to_np_index) is the one its results are allocated on (empty) and every
    other operand must share; scopes nest (an op calling an op)."""
    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        saved, saved_name, saved_keep = op_state.where, op_state.name, op_state.keep
        op_state.where, op_state.name, op_state.keep = None, name, []
        op_state.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            op_state.depth -= 1
            op_state.where, op_state.name, op_state.keep = saved, saved_name, saved_keep
    name = fn.__qualname__.replace("._", ".").lstrip("_")
    return scoped


def _device_label(where):
    """"cpu", "cuda:N" or "mirror" for a HOST or DeviceArray place."""
    if where is HOST:
        return "cpu"
    if where.device == _lib.SB_DEVICE_CUDA:
        return str(where.tensor.device)
    return _dev._device_name(where.device)


def _note(where, fn, name):
    """Records an operand's place (HOST or a DeviceArray) in the current op;
    one on another device than the op's first operand is refused."""
    if not op_state.depth:
        return
    first = op_state.where
    if first is None:
        op_state.where = where
    elif (first is HOST) != (where is HOST) or (
            first is not HOST and (first.device, first.tensor.device) != (where.device,
                                                                          where.tensor.device)):
        raise ValueError("samebits.%s: %s is on %s, but the op's first operand is on %s; all "
                         "operands of an op must be on one device"
                         % (fn, name, _device_label(where), _device_label(first)))


def _note_host(ndim, fn, name):
    """A host operand; a 0-d one is a scalar that any op takes, as in
    PyTorch (wrap copies it to the op's device)."""
    if ndim:
        _note(HOST, fn, name)


def device_of(x, fn, name):
    """The sb_device an input's memory belongs to (_device_array.device_code)."""
    if is_torch(x):
        return _dev.device_code(x, fn, name)
    if isinstance(x, _dev.DeviceArray):
        return x.device
    return _lib.SB_DEVICE_CPU


def _tensor_operand(x, fn, name):
    """A (dtype-checked) torch tensor as the array an op reads, noted in the
    op's scope: its DeviceArray when it lives on a device, else a numpy view
    of its host memory (a copy if it is not dense)."""
    code = _dev.device_code(x, fn, name)
    if code != _lib.SB_DEVICE_CPU:
        arr = _dev.from_tensor(x, code)
        _note(arr, fn, name)
        return arr
    _note_host(x.dim(), fn, name)
    return x.detach().contiguous().numpy()


def _dtype_name(x):
    return str(x.dtype) if is_torch(x) else "numpy.%s" % np.dtype(x.dtype).name


def to_np(x, fn, name):
    """A C-contiguous float32 numpy view of x (zero-copy when x already is one)."""
    if is_torch(x):
        if x.dtype != torch.float32:
            raise TypeError("samebits.%s: %s has dtype %s; samebits computes in float32 only "
                            "(convert explicitly with .float())" % (fn, name, x.dtype))
        if x.is_sparse:
            raise TypeError("samebits.%s: %s is a sparse tensor; only dense tensors are supported"
                            % (fn, name))
        return _tensor_operand(x, fn, name)
    if isinstance(x, _dev.DeviceArray):
        _note(x, fn, name)
        return x.contiguous()
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        _note_host(a.ndim, fn, name)
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
        if x.dtype not in (torch.int64, torch.int32):
            raise TypeError("samebits.%s: %s has dtype %s; class indices must be int64 or int32"
                            % (fn, name, x.dtype))
        return _tensor_operand(x, fn, name)
    if isinstance(x, _dev.DeviceArray):
        _note(x, fn, name)
        return x.contiguous()
    if isinstance(x, np.ndarray):
        _note_host(x.ndim, fn, name)
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
    """Returns a result array in the caller's type (zero-copy): a torch
    tensor for a torch caller, else the array itself (numpy, or a device
    array for the numpy-level code that passed device arrays)."""
    if isinstance(arr, _dev.DeviceArray):
        return arr.tensor if kind == "torch" else arr
    if kind == "torch":
        return torch.from_numpy(arr)
    return arr


def to_torch(arr):
    """A result array as a torch tensor (zero-copy; None stays None)."""
    if arr is None:
        return None
    return arr.tensor if isinstance(arr, _dev.DeviceArray) else torch.from_numpy(arr)


def empty(shape, dtype=np.float32):
    """An uninitialised result array of the current op: on its operands'
    device (op_scope), or a numpy array."""
    where = op_state.where
    if where is None or where is HOST:
        return _host_pool.empty(tuple(int(s) for s in shape), dtype)
    return _dev.new_like(shape, dtype, where)


def zeros(shape, dtype=np.float32):
    """empty(shape, dtype) filled with +0."""
    where = op_state.where
    if where is None or where is HOST:
        return np.zeros(tuple(int(s) for s in shape), dtype=dtype)
    return _dev.zeros_like_device(shape, dtype, where)


def dense(a):
    """a, or an exact copy of it in dense row-major order (numpy or device)."""
    if isinstance(a, _dev.DeviceArray):
        return a.contiguous()
    return np.ascontiguousarray(a)


def expand_dims(a, dim):
    if isinstance(a, _dev.DeviceArray):
        return _dev.DeviceArray(a.tensor.unsqueeze(dim), a.device)
    return np.expand_dims(a, dim)


def may_share_memory(a, b):
    """Whether two arrays (numpy or device) may reach the same memory."""
    da, db = isinstance(a, _dev.DeviceArray), isinstance(b, _dev.DeviceArray)
    if da and db:
        (a0, a1), (b0, b1) = a.span(), b.span()
        return a0 < b1 and b0 < a1
    return False if da or db else np.may_share_memory(a, b)


def like_operands(arr):
    """A host numpy array (a constant table, host-side indices) moved to the
    current op's device, exactly; numpy stays numpy on the host, and a
    device array stays where it is."""
    where = op_state.where
    if where is None or where is HOST or isinstance(arr, _dev.DeviceArray):
        return arr
    return _dev.upload(arr, where)


def on_device_of(arr, t, fn, name):
    """The host numpy array arr as a torch tensor on torch tensor t's device
    (an exact copy there; zero-copy on the host)."""
    code = _dev.device_code(t, fn, name)
    if code == _lib.SB_DEVICE_CPU:
        return torch.from_numpy(arr)
    return _dev.upload(arr, _dev.DeviceArray(t, code)).tensor


def broadcast_dense(a, shape):
    """An exact dense copy of a broadcast to shape (ValueError if it does
    not broadcast)."""
    if isinstance(a, _dev.DeviceArray):
        try:
            return a.broadcast_to(tuple(shape))
        except RuntimeError as e:
            raise ValueError(str(e)) from None
    return np.ascontiguousarray(np.broadcast_to(a, shape))


def tile(a, n):
    """The 1-D array a repeated n times (numpy.tile's order), exactly."""
    if isinstance(a, _dev.DeviceArray):
        return a.broadcast_to((n,) + a.shape).reshape(n * a.size)
    return np.tile(a, n)


def data_ptr(arr):
    """The address of an array's first element (numpy or device)."""
    return arr.tensor.data_ptr() if isinstance(arr, _dev.DeviceArray) else arr.ctypes.data


def concat(arrays, axis=0):
    """numpy.concatenate for numpy or device arrays (exact copies into a new
    array on the current op's device)."""
    if not any(isinstance(a, _dev.DeviceArray) for a in arrays):
        return np.concatenate(arrays, axis=axis)
    first = arrays[0]
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = _dev.new_like(shape, first.dtype, first)
    at = 0
    for a in arrays:
        n = a.shape[axis]
        out.tensor.narrow(axis, at, n).copy_(a.tensor)
        at += n
    return out


def full(shape, value, dtype=np.float32):
    """An array of the current op filled with value (bit copies)."""
    out = empty(shape, dtype)
    if isinstance(out, _dev.DeviceArray):
        out.tensor.fill_(float(value))
    else:
        out.fill(value)
    return out


def take(a, order, axis):
    """a's slices along axis in `order` (a sequence of indices), exactly."""
    if not isinstance(a, _dev.DeviceArray):
        return np.ascontiguousarray(np.take(a, order, axis=axis))
    shape = list(a.shape)
    shape[axis] = len(order)
    out = _dev.new_like(shape, a.dtype, a)
    index = torch.as_tensor(np.asarray(order, dtype=np.int64), device=a.tensor.device)
    torch.index_select(a.tensor, axis, index, out=out.tensor)
    return out


def put(dst, order, axis, src):
    """dst's slices along axis at `order` set to src's, in place, exactly."""
    if not isinstance(dst, _dev.DeviceArray):
        index = [slice(None)] * dst.ndim
        index[axis] = order
        dst[tuple(index)] = src
        return
    index = torch.as_tensor(np.asarray(order, dtype=np.int64), device=dst.tensor.device)
    dst.tensor.index_copy_(axis, index, src.tensor)


def zeros_like_place(shape, t, fn, name):
    """A torch tensor of +0 in the memory torch tensor t lives in (host, or
    t's device): a state a module makes for its input."""
    code = _dev.device_code(t, fn, name)
    if code == _lib.SB_DEVICE_CPU:
        return torch.zeros(tuple(shape))
    return _dev.zeros_like_device(shape, np.float32, _dev.DeviceArray(t, code)).tensor


def host_only(t, fn, name, why):
    """Refuses a device tensor t for an op that does `why` on the host in
    Python (UnsupportedDeviceError naming op, operand and device)."""
    if is_torch(t):
        code = _dev.device_code(t, fn, name)
        if code != _lib.SB_DEVICE_CPU:
            raise UnsupportedDeviceError(
                "samebits.%s: %s is on %s, but this op %s on the host and has no path for device "
                "tensors yet; move its operands with .cpu()"
                % (fn, name, _dev._device_name(code), why))
