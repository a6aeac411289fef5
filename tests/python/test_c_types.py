"""No Python value reaches C changed: ctypes would wrap an int that does not
fit its C type (2**32 + 1 as a C int is 1) and round a double a C float
cannot hold to 0 or inf. samebits._lib checks every scalar argument of every
function in its _SIGS table, and every field of its parameter structs,
against the declared ctypes type before the call; the ops name the Python
parameter."""
import ctypes

import numpy as np
import pytest
import torch

import samebits
from samebits import _lib, ops
from samebits.nn import functional as F

INT_TYPES = _lib._INT_TYPES


def _int_args():
    """(function, index, ctype) for every integer argument of every function."""
    return [(name, i, t) for name, (_, args) in sorted(_lib._SIGS.items())
            for i, t in enumerate(args) if t in INT_TYPES]


def _float_args():
    return [(name, i, t) for name, (_, args) in sorted(_lib._SIGS.items())
            for i, t in enumerate(args) if t is ctypes.c_float]


def _filler(args):
    """Arguments that pass the scalar checks: 0 for numbers, None for pointers."""
    return [0 if t in INT_TYPES else 0.0 if t in (ctypes.c_float, ctypes.c_double) else None
            for t in args]


def test_the_tables_cover_integer_and_float_arguments():
    # the generated tests below are not vacuous
    assert len(_int_args()) >= 40
    assert len(_float_args()) >= 10
    for name in _lib._SIGS:
        assert callable(getattr(_lib.lib, name))


@pytest.mark.parametrize("name,index,ctype", _int_args(),
                         ids=["%s#%d" % (n, i + 1) for n, i, _ in _int_args()])
def test_every_integer_argument_is_range_checked_before_the_call(name, index, ctype):
    lo, hi = _lib.int_range(ctype)
    bits = 8 * ctypes.sizeof(ctype)
    assert hi - lo + 1 == (2 if ctype is ctypes.c_bool else 2 ** bits)
    args = _filler(_lib._SIGS[name][1])
    for bad in (hi + 1, lo - 1, 2 ** 64 + 1, -(2 ** 64) - 1):
        args[index] = bad
        with pytest.raises(OverflowError, match=r"^%s: argument #%d=%d is out of range \(C "
                           % (name, index + 1, bad)):
            getattr(_lib.lib, name)(*args)
    args[index] = 1.5
    with pytest.raises(TypeError, match=r"^%s: argument #%d must be an integer" % (name, index + 1)):
        getattr(_lib.lib, name)(*args)


@pytest.mark.parametrize("name,index,ctype", _float_args(),
                         ids=["%s#%d" % (n, i + 1) for n, i, _ in _float_args()])
def test_every_float_argument_refuses_values_a_c_float_turns_into_0_or_inf(name, index, ctype):
    args = _filler(_lib._SIGS[name][1])
    for bad, err, what in ((1e39, OverflowError, "rounds to inf"), (-1e39, OverflowError, "-inf"),
                           (1e-50, ValueError, "underflows to 0")):
        args[index] = bad
        with pytest.raises(err, match=r"^%s: argument #%d=.*%s" % (name, index + 1, what)):
            getattr(_lib.lib, name)(*args)


def test_a_refused_argument_never_reaches_c():
    before = samebits.get_num_threads()
    with pytest.raises(OverflowError, match=r"samebits\.set_num_threads: n=4294967297 is out of "
                       r"range \(C int32 holds \[-2147483648, 2147483647\]\)"):
        samebits.set_num_threads(2 ** 32 + 1)  # ctypes alone would pass 1
    with pytest.raises(OverflowError, match="sb_set_num_threads: argument #1"):
        _lib.lib.sb_set_num_threads(2 ** 32 + 1)
    assert samebits.get_num_threads() == before


STRUCTS = [c for c in vars(_lib).values()
           if isinstance(c, type) and issubclass(c, _lib.CheckedStructure) and
           c is not _lib.CheckedStructure]


@pytest.mark.parametrize("struct", STRUCTS, ids=[s.__name__ for s in STRUCTS])
def test_every_struct_field_is_range_checked(struct):
    fields = [(n, t) for n, t in struct._fields_ if t in INT_TYPES or t is ctypes.c_float]
    for name, t in struct._fields_:
        if t in INT_TYPES:
            lo, hi = _lib.int_range(t)
            for bad in (hi + 1, lo - 1):
                with pytest.raises(OverflowError, match=r"%s\.%s=" % (struct.__name__, name)):
                    struct(**{name: bad})
            assert getattr(struct(**{name: hi}), name) == (bool(hi) if t is ctypes.c_bool else hi)
    assert fields or all(t is ctypes.c_double for _, t in struct._fields_)


def test_the_parameter_structs_are_checked():
    # the ones C reads by pointer: a plain ctypes.Structure would wrap silently
    for name in ("Conv2dParams", "Pool2dParams", "SgdConfig", "AdamConfig", "Rng"):
        assert issubclass(getattr(_lib, name), _lib.CheckedStructure)


X = np.ones((4, 5), np.float32)


@pytest.mark.parametrize("call,error,message", [
    (lambda: ops.softmax(X, dim=2 ** 32 + 1), OverflowError,
     r"samebits\.softmax: dim=4294967297 is out of range"),
    (lambda: ops.log_softmax_backward(X, X, dim=-2 ** 31 - 1), OverflowError,
     r"samebits\.log_softmax_backward: dim=-2147483649 is out of range"),
    (lambda: ops.softmax(X, dim=1.0), TypeError, r"samebits\.softmax: dim must be an integer"),
    (lambda: F.softmax(torch.ones(2, 3), dim=2 ** 32 + 1), OverflowError,
     r"samebits\.nn\.functional\.softmax: dim=4294967297"),
    (lambda: ops.cross_entropy(X, np.zeros(4, np.int64), ignore_index=2 ** 64 + 1), OverflowError,
     r"samebits\.cross_entropy: ignore_index=18446744073709551617 is out of range \(C int64 holds"),
    (lambda: F.cross_entropy(torch.ones(4, 5), torch.zeros(4, dtype=torch.int64),
                             ignore_index=2 ** 64 + 1), OverflowError,
     r"samebits\.nn\.functional\.cross_entropy: ignore_index=18446744073709551617"),
    (lambda: ops.conv2d(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32),
                        stride=2 ** 64 + 1), OverflowError,
     r"samebits\.conv2d: stride=18446744073709551617 is out of range"),
    (lambda: ops.conv2d(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32),
                        padding=(0, 1.5)), TypeError, r"samebits\.conv2d: padding must be an integer"),
    (lambda: ops.max_pool2d(np.ones((1, 1, 4, 4), np.float32), 2 ** 63), OverflowError,
     r"samebits\.max_pool2d: kernel_size=9223372036854775808"),
    (lambda: ops.sum(X, dim=(0, 2 ** 32)), OverflowError, r"samebits\.sum: dim=4294967296"),
    (lambda: ops.mean(X, dim=0, keepdim="yes"), TypeError, r"samebits\.mean: keepdim must be an "
     r"integer"),
    (lambda: ops.dropout(X, 0.5, True, seed=-1, stream=0), OverflowError,
     r"samebits\.dropout: seed=-1 is out of range \(C uint64 holds"),
    (lambda: ops.dropout(X, 1e-50, True, seed=0, stream=0), ValueError,
     r"samebits\.dropout: p=1e-50 underflows to 0 as a C float"),
    (lambda: ops.div(X, 1e-50), ValueError, r"samebits\.div: b=1e-50 underflows to 0"),
    (lambda: ops.mul(X, 1e39), OverflowError, r"samebits\.mul: b=1e\+39 is out of range"),
    (lambda: F.div(torch.ones(2), 1e-50), ValueError, r"samebits\.nn\.functional\.div: b=1e-50"),
    (lambda: ops.layer_norm(X, (5,), eps=1e-50), ValueError, r"samebits\.layer_norm: eps=1e-50"),
    (lambda: ops.batch_norm(np.ones((2, 3), np.float32), None, None, training=True, momentum=1e40),
     OverflowError, r"samebits\.batch_norm: momentum=1e\+40"),
    (lambda: samebits.random.uniform((2,), seed=2 ** 64, stream=0), OverflowError,
     r"samebits\.uniform: seed=18446744073709551616"),
    (lambda: samebits.random.permutation(4, 0, stream=1.5), TypeError,
     r"samebits\.permutation: stream must be an integer"),
    (lambda: samebits.manual_seed(2 ** 64), OverflowError, r"samebits\.manual_seed: seed="),
    (lambda: samebits.data.BatchLoader(X, X, batch_size=2 ** 63), OverflowError,
     r"samebits\.data\.BatchLoader: batch_size="),
])
def test_ops_name_the_python_parameter(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_layer_norm_refuses_a_normalized_shape_that_is_not_the_trailing_shape():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    for shape in ((7,), 7, (4, 4), (1, 4, 5), ()):
        with pytest.raises(ValueError, match=r"samebits\.layer_norm: normalized_shape .* is not "
                           r"the trailing shape of the input \(4, 5\)"):
            ops.layer_norm(x, shape)
        with pytest.raises(ValueError, match=r"samebits\.nn\.functional\.layer_norm: "
                           r"normalized_shape"):
            F.layer_norm(torch.from_numpy(x), shape)
    # the right one still works, and (5,) and 5 are the same
    assert np.array_equal(ops.layer_norm(x, (5,)), ops.layer_norm(x, 5))
    assert ops.layer_norm(x, (4, 5)).shape == (4, 5)
