"""Shared setup of the samebits Python tests.

The library comes from $SAMEBITS_LIB (tests/check_python.sh sets it to the
build under test); the CLI for the end-to-end test from $SAMEBITS_CLI, else
the `samebits` binary next to the library."""
import ctypes
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import samebits  # noqa: E402
from samebits import _lib  # noqa: E402

DATA = os.environ.get("SB_TEST_DATA", "/usr/share/datasets/fashion-mnist")

# signatures (also of sb_expf, sb_ssum, sb_sgemm the tests call) are _lib._SIGS
lib = _lib.lib


def ssum(v):
    """The canonical sum of a 1-D float32 array, by the C raw-buffer entry point."""
    v = np.ascontiguousarray(v, dtype=np.float32)
    out = ctypes.c_float()
    rc = lib.sb_ssum(v.size, ctypes.c_void_p(v.ctypes.data), 1, ctypes.byref(out))
    assert rc == 0, lib.sb_last_error()
    return np.float32(out.value)


def elementwise(fn, x):
    """f applied per element through the C scalar function (e.g. sb_expf)."""
    f = getattr(lib, fn)
    return np.array([f(float(v)) for v in np.asarray(x, np.float32).ravel()],
                    dtype=np.float32).reshape(np.shape(x))


def bits(x):
    if hasattr(x, "detach"):
        x = x.detach().contiguous().numpy()
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def same_bits(a, b):
    return np.shape(a) == np.shape(b) and np.array_equal(bits(a), bits(b))


def cli_path():
    env = os.environ.get("SAMEBITS_CLI")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(samebits.lib_path)), "samebits")


def have_data():
    return os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")) or \
        os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte"))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _restore_threads():
    import torch
    t, s = torch.get_num_threads(), samebits.get_num_threads()
    yield
    torch.set_num_threads(t)
    samebits.set_num_threads(s)
