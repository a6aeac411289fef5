"""samebits for PyTorch users: the same bits on every machine.

    import samebits
    model = samebits.from_torch_module(model)   # forward and backward now run in samebits
    samebits.audit(model, example_input)        # which torch ops are covered, passed, missing

The package loads libsamebits.so with ctypes (no compiled dependency on
PyTorch) and passes contiguous float32 CPU tensors to it by pointer.
See python/README.md for what is covered.
"""
from ._lib import SamebitsError, ArgumentRangeError, lib_path
from ._convert import UnsupportedDeviceError
from . import ops
from .random import manual_seed, initial_seed, init_module
from .utils import get_hash, print_hash, set_num_threads, get_num_threads
from .device import set_device, get_device, on_device
from . import random, utils, data

__version__ = "0.1.0"

__all__ = ["ops", "nn", "optim", "utils", "random", "data", "from_torch_module", "manual_seed",
           "initial_seed", "init_module", "get_hash", "print_hash", "set_num_threads",
           "get_num_threads", "set_device", "get_device", "on_device", "SamebitsError", "ArgumentRangeError", "UnsupportedDeviceError", "UnsupportedModuleError", "lib_path",
           "NotReproducibleError", "StrictMode", "audit", "AuditReport"]

try:
    import torch as _torch  # noqa: F401
except ImportError:  # samebits.ops works on numpy arrays without PyTorch
    _torch = None

if _torch is not None:
    from . import nn, optim
    from .convert import from_torch_module, UnsupportedModuleError
    from .strict import NotReproducibleError, StrictMode, audit, AuditReport
