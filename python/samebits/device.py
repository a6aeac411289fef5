"""The device samebits' ops run on.

    samebits.set_device("opencl")      # every samebits op from here on
    with samebits.on_device("opencl"):  # or for a block
        loss = model(x).sum(); loss.backward()

Tensors stay PyTorch CPU tensors: each op copies its operands to the
device, runs its kernels there and copies its results back, so a converted
model runs unchanged. Every backend computes the CPU reference's bits
(docs/CONTRACT.md), so the choice changes where the arithmetic happens,
never its result; tests/python/test_device.py proves it for whole models.
The copies make this a correctness and portability feature, not a fast
path. The optimizers' steps (raw-pointer calls) and hashing run on the
host. The choice is process-wide (PyTorch's autograd may run the backward
on another thread than the forward)."""
import contextlib
import ctypes

from . import _lib

# sb_device values (include/samebits/tensor.h) by name, as sb_device_name
# spells them; "mirror" is the CPU mirror device the C tests use.
_DEVICES = {"cpu": 0, "cuda": 1, "mirror": 2, "opencl": 3}


def _code(name):
    if not isinstance(name, str) or name not in _DEVICES:
        raise ValueError("samebits.set_device: device=%r is not one of %s" %
                         (name, ", ".join(sorted(_DEVICES))))
    return _DEVICES[name]


def _probe(code):
    """Raises SamebitsError when the device cannot hold a tensor (no
    OpenCL device, a device refused for its numerics, no CUDA build)."""
    t = _lib._T()
    _lib.check(_lib.lib.sb_tensor_new_on(ctypes.byref(t), code, _lib.SB_F32, 0, None),
               "sb_tensor_new_on")
    _lib.lib.sb_tensor_free(t)


def set_device(device):
    """Runs every samebits op from now on on `device` ("cpu", "opencl",
    "cuda" or "mirror"). Raises ValueError for an unknown name and
    SamebitsError (the library's message) for a device this machine lacks."""
    code = _code(device)
    if code != _lib.SB_DEVICE_CPU:
        _probe(code)
    _lib.device = code


def get_device():
    """The name of the device samebits' ops run on."""
    return next(n for n, c in _DEVICES.items() if c == _lib.device)


@contextlib.contextmanager
def on_device(device):
    """set_device(device) for a block, then the previous device again."""
    before = get_device()
    set_device(device)
    try:
        yield
    finally:
        set_device(before)
