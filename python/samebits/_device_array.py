"""PyTorch tensors in a device's memory, taken by samebits' ops zero-copy.

A torch CUDA tensor passed to a samebits op is not copied to the host. Its
memory becomes the data of an sb_tensor header on SB_DEVICE_CUDA, the op's
results are allocated by PyTorch's allocator on the same GPU, and the op
runs there through libsamebits' CUDA backend, which computes the CPU
reference's bits (docs/CONTRACT.md). The result is a torch CUDA tensor.

Inside the Python layer such an operand is a DeviceArray: the few things
the ops need of an array (shape, dtype, views, exact copies) and nothing
that reads its elements on the host (numpy refuses it), so an op that
would compute on the host with a device operand fails loudly instead of
copying behind the caller's back.

Operands of one op must share a device (PyTorch's rule); `op_scope` wraps
every public op and autograd function so that its first operand fixes the
device its results are allocated on (`empty`).

Streams: libsamebits' CUDA context queues its kernels on a stream of its
own. Before an op it waits for the work PyTorch queued on its current
stream, and PyTorch's stream waits for the op after it (`_CudaDevice.run`),
so each side sees the other's writes, and memory PyTorch frees afterwards
is reused only once the op has finished.

The mirror device stands in for a GPU in tests: its memory is host memory
that libsamebits treats as a device's (it refuses a pointer that is not a
live mirror block), so a torch CPU tensor can view it. `to_mirror(t)` makes
one; every op then takes it as it takes a CUDA tensor, and
tests/python/test_device_tensors.py proves the two paths give the CPU's
bits without a GPU."""
import ctypes
import threading
import weakref

import numpy as np

from . import _lib
from ._lib import UnsupportedDeviceError

try:
    import torch
except ImportError:  # numpy-only use of samebits.ops never makes device arrays
    torch = None

SB_DEVICE_MIRROR = 2

_NP_OF_TORCH = {}
if torch is not None:
    _NP_OF_TORCH = {torch.float32: np.dtype(np.float32), torch.int64: np.dtype(np.int64),
                    torch.int32: np.dtype(np.int32), torch.bool: np.dtype(np.bool_)}
_TORCH_OF_NP = {v: k for k, v in _NP_OF_TORCH.items()}
_SB_DTYPE = {np.dtype(np.float32): _lib.SB_F32, np.dtype(np.int32): _lib.SB_I32,
             np.dtype(np.int64): _lib.SB_I64}


class DeviceArray:
    """An array in a device's memory, owned by the torch tensor `tensor`.
    `device` is the sb_device it lives on (_lib.SB_DEVICE_CUDA or
    SB_DEVICE_MIRROR)."""
    __slots__ = ("tensor", "device")

    def __init__(self, tensor, device):
        self.tensor, self.device = tensor, device

    @property
    def shape(self):
        return tuple(self.tensor.shape)

    @property
    def ndim(self):
        return self.tensor.dim()

    @property
    def size(self):
        return self.tensor.numel()

    @property
    def dtype(self):
        return _NP_OF_TORCH[self.tensor.dtype]

    def __array__(self, *args, **kwargs):
        raise UnsupportedDeviceError(
            "samebits.%s: this op computes part of its work on the host and has no path for %s "
            "tensors yet; move its operands with .cpu()" % (_lib.op_state.name or "op",
                                                             _device_name(self.device)))

    def __len__(self):
        return self.shape[0]

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return DeviceArray(self.contiguous().tensor.view(*shape), self.device)

    def __getitem__(self, index):
        return DeviceArray(self.tensor[index], self.device)

    def __setitem__(self, index, value):
        """An exact copy of value (a DeviceArray on this device) into a view."""
        self.tensor[index] = value.tensor

    def max(self):
        """The largest element, read back to the host (exact)."""
        return self.tensor.max().item()

    def min(self):
        return self.tensor.min().item()

    def span(self):
        """[first byte, end) of the memory this array's elements reach."""
        start = self.tensor.data_ptr()
        if not self.size:
            return start, start
        reach = sum((n - 1) * s for n, s in zip(self.tensor.shape, self.tensor.stride()))
        return start, start + (reach + 1) * self.tensor.element_size()

    def contiguous(self):
        """This array, or an exact copy of it in dense row-major order."""
        return self if self.tensor.is_contiguous() else self.copy()

    def copy(self):
        out = new_like(self.shape, self.dtype, self)
        out.tensor.copy_(self.tensor)
        return out

    def astype(self, dtype):
        """An exact conversion (the index dtypes, or float32 to itself)."""
        dtype = np.dtype(dtype)
        if dtype == self.dtype:
            return self.copy()
        out = new_like(self.shape, dtype, self)
        out.tensor.copy_(self.tensor)
        return out

    def broadcast_to(self, shape):
        """An exact dense copy of this array broadcast to `shape`."""
        out = new_like(shape, self.dtype, self)
        out.tensor.copy_(self.tensor.expand(*shape))
        return out


def _device_name(code):
    return {_lib.SB_DEVICE_CUDA: "cuda", SB_DEVICE_MIRROR: "mirror"}.get(code, str(code))


# ---- which tensors live on a device -----------------------------------------

# the base pointers of the mirror blocks _mirror_empty made and has not released
_mirror_blocks = set()
_mirror_lock = threading.Lock()


def _storage_ptr(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr()


def device_code(t, fn, name):
    """The sb_device a torch tensor's memory belongs to: SB_DEVICE_CPU for
    host memory, SB_DEVICE_CUDA for a CUDA tensor (once the CUDA backend is
    ready for its GPU), SB_DEVICE_MIRROR for to_mirror's tensors."""
    kind = t.device.type
    if kind == "cpu":
        if _mirror_blocks and _storage_ptr(t) in _mirror_blocks:
            return SB_DEVICE_MIRROR
        return _lib.SB_DEVICE_CPU
    if kind == "cuda":
        _cuda_device(t.device, fn, name)
        return _lib.SB_DEVICE_CUDA
    raise UnsupportedDeviceError("samebits.%s: %s is on %s; samebits takes CPU and CUDA tensors"
                                 % (fn, name, t.device))


def from_tensor(t, code):
    """t (a float32 or index tensor on device `code`) as a dense DeviceArray,
    zero-copy when it is dense already."""
    return DeviceArray(t.detach(), code).contiguous()


def new_like(shape, dtype, like):
    """An uninitialised array of `shape` and numpy `dtype` on like's device
    (the same GPU for CUDA)."""
    shape = tuple(int(s) for s in shape)
    if like.device == SB_DEVICE_MIRROR:
        return DeviceArray(_mirror_empty(shape, np.dtype(dtype)), SB_DEVICE_MIRROR)
    return DeviceArray(torch.empty(shape, dtype=_TORCH_OF_NP[np.dtype(dtype)],
                                   device=like.tensor.device), like.device)


def zeros_like_device(shape, dtype, like):
    out = new_like(shape, dtype, like)
    out.tensor.zero_()
    return out


def upload(arr, like):
    """A host numpy array copied to like's device (the constant tables an op
    builds on the host, such as affine_grid's base grid)."""
    out = new_like(arr.shape, arr.dtype, like)
    out.tensor.copy_(torch.from_numpy(arr if arr.flags.c_contiguous else arr.copy(order="C")))
    return out


def header(arr):
    """The sb_tensor header of a dense DeviceArray (Python-owned, like the
    host headers of _lib.wrap)."""
    t = _lib.Tensor()
    shape = arr.shape
    t.dtype, t.device, t.ndim = _SB_DTYPE[arr.dtype], arr.device, len(shape)
    t.data = arr.tensor.data_ptr() if arr.size else None
    t.shape[:len(shape)] = shape
    t.strides[:len(shape)] = arr.tensor.stride()
    return t


def scalar_header(arr):
    """A host 0-d numpy array (a scalar operand, which PyTorch lets any op
    take) copied to the current op's device; the copy lives until the op
    returns (op_state.keep)."""
    up = upload(arr, _lib.op_state.where)
    _lib.op_state.keep.append(up)
    return header(up)


# ---- the mirror device (tests) ------------------------------------------------

def _release_mirror(base, tp):
    with _mirror_lock:
        _mirror_blocks.discard(base)
    _lib.lib.sb_tensor_free(tp)


def _mirror_empty(shape, dtype):
    """A torch CPU tensor viewing a new zero-filled mirror block, registered
    so that device_code says SB_DEVICE_MIRROR; the block is released through
    the mirror backend when the last view of it is gone."""
    n = 1
    for s in shape:
        n *= s
    nbytes = max(n * dtype.itemsize, 1)
    words = (ctypes.c_int64 * 1)((nbytes + 3) // 4)   # any dtype, in float32-sized words
    tp = _lib._T()
    _lib.check(_lib.lib.sb_tensor_new_on(ctypes.byref(tp), SB_DEVICE_MIRROR, _lib.SB_F32, 1,
                                         words), "sb_tensor_new_on")
    base = tp.contents.data
    host = np.frombuffer((ctypes.c_byte * nbytes).from_address(base), dtype=np.uint8)
    weakref.finalize(host, _release_mirror, base, tp)
    with _mirror_lock:
        _mirror_blocks.add(base)
    return torch.from_numpy(host)[:n * dtype.itemsize].view(_TORCH_OF_NP[dtype]).view(shape)


def to_mirror(t):
    """A copy of the CPU tensor t in mirror memory (a torch CPU tensor that
    samebits' ops treat as a device tensor). Tests only."""
    out = _mirror_empty(tuple(t.shape), _NP_OF_TORCH[t.dtype])
    out.copy_(t)
    return out.requires_grad_(t.requires_grad)


# ---- CUDA ------------------------------------------------------------------

# The CUDA backend's entry points (include/samebits/cuda.h), found only in a
# libsamebits built with it (`make cuda-lib`), hence not in _lib._SIGS.
_CUDA_SIGS = {
    "sb_cuda_available": (ctypes.c_bool, [ctypes.POINTER(ctypes.c_char_p)]),
    "sb_cuda_context_new": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]),
    "sb_cuda_register": (ctypes.c_int, [ctypes.c_void_p]),
    "sb_cuda_stream": (ctypes.c_void_p, [ctypes.c_void_p]),
}


def _cuda_function(name):
    f = getattr(_lib.lib, name)
    f.restype, f.argtypes = _CUDA_SIGS[name]
    return f


class _CudaDevice:
    """libsamebits' CUDA context serving one GPU, registered as the
    SB_DEVICE_CUDA backend, and its stream as PyTorch sees it."""

    def __init__(self, index):
        self.index = index
        self.context = ctypes.c_void_p()
        _lib.check(_cuda_function("sb_cuda_context_new")(ctypes.byref(self.context), index),
                   "sb_cuda_context_new")
        _lib.check(_cuda_function("sb_cuda_register")(self.context), "sb_cuda_register")
        stream = _cuda_function("sb_cuda_stream")(self.context)
        self.stream = torch.cuda.ExternalStream(stream, device=torch.device("cuda", index))

    def run(self, function, args):
        torch_stream = torch.cuda.current_stream(self.index)
        self.stream.wait_stream(torch_stream)
        try:
            _lib.check(getattr(_lib.lib, function)(*args), function)
        finally:
            torch_stream.wait_stream(self.stream)


_cuda = None
_cuda_lock = threading.Lock()


def _cuda_device(tdev, fn, name):
    """The _CudaDevice of torch device `tdev`, made on first use. Raises
    UnsupportedDeviceError naming what is missing: a libsamebits built
    without the CUDA backend, no usable GPU, or a second GPU (one context
    serves SB_DEVICE_CUDA)."""
    global _cuda
    index = tdev.index if tdev.index is not None else torch.cuda.current_device()
    if _cuda is not None and _cuda.index == index:
        return _cuda
    with _cuda_lock:
        if _cuda is None:
            if not all(hasattr(_lib.lib, n) for n in _CUDA_SIGS):
                raise UnsupportedDeviceError(
                    "samebits.%s: %s is on %s, but %s has no CUDA backend (build it with "
                    "`make cuda-lib` and set SAMEBITS_LIB to build/libsamebits_cuda.so), or move "
                    "it with .cpu()" % (fn, name, tdev, _lib.lib_path))
            why = ctypes.c_char_p()
            if not _cuda_function("sb_cuda_available")(ctypes.byref(why)):
                raise UnsupportedDeviceError(
                    "samebits.%s: %s is on %s, but libsamebits cannot use the GPU: %s"
                    % (fn, name, tdev, (why.value or b"unknown reason").decode()))
            _cuda = _CudaDevice(index)
        if _cuda.index != index:
            raise UnsupportedDeviceError(
                "samebits.%s: %s is on cuda:%d, but samebits serves cuda:%d in this process "
                "(one GPU per process)" % (fn, name, index, _cuda.index))
    return _cuda


def run_on_cuda(function, args):
    """lib.<function>(*args) ordered against PyTorch's current stream."""
    _cuda.run(function, args)


def call_on(code, function, *args):
    """lib.<function>(*args) for tensors on device `code` outside an op
    scope (the optimizers' tensor steps)."""
    if code == _lib.SB_DEVICE_CUDA:
        run_on_cuda(function, args)
    else:
        _lib.check(getattr(_lib.lib, function)(*args), function)


_lib.device_header = header
_lib.device_scalar_header = scalar_header
_lib.run_on_cuda = run_on_cuda
