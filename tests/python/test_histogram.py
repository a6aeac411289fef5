"""bincount and histc from Python (contract section 18, "bincount and
histc"): samebits.ops, samebits.nn.functional and strict routing.

Counts are exact integers. A weighted bincount adds each bin's weights in
ascending position (PyTorch's CPU loop), so its bits are compared with
torch's. histc uses PyTorch 2.x's float32 bin rule; torch 1.13 computed the
bin differently ((v - min) / (max - min) * bins, and the range test against
the unrounded min and max), so elements on or next to a bin edge may land
one bin apart or drop out there; under torch 1.13 the comparison with torch
allows those few elements."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def _bits(t):
    return torch.as_tensor(np.ascontiguousarray(np.asarray(t, dtype=np.float32))).view(torch.int32)


def _bin(v, bins, lo, hi):
    """PyTorch 2.x's rule, restated in float32 steps."""
    lo, hi = np.float32(lo), np.float32(hi)
    if np.isnan(v) or v < lo or v > hi:
        return -1
    b = int(np.float32(np.float32((v - lo) * np.float32(bins)) / np.float32(hi - lo)))
    return bins - 1 if b == bins else b


def _histc_restated(x, bins, lo, hi):
    out = np.zeros(bins, np.float32)
    for v in np.asarray(x, np.float32).reshape(-1):
        b = _bin(v, bins, lo, hi)
        if b >= 0:
            out[b] += 1
    return out


@pytest.mark.parametrize("minlength", [0, 3, 20])
def test_bincount_against_torch(minlength):
    rng = np.random.default_rng(minlength)
    x = torch.from_numpy(rng.integers(0, 9, 500))
    w = torch.from_numpy((rng.standard_normal(500) * 1e4).astype(np.float32))
    got = ops.bincount(x, minlength=minlength)
    assert got.dtype == torch.int64 and torch.equal(got, torch.bincount(x, minlength=minlength))
    got_w = ops.bincount(x, w, minlength)
    want_w = torch.bincount(x, w, minlength)
    assert got_w.dtype == torch.float32 and torch.equal(_bits(got_w), _bits(want_w))
    assert isinstance(ops.bincount(x.numpy(), w.numpy()), np.ndarray)


def test_bincount_order_and_empty():
    x = torch.zeros(4, dtype=torch.int64)
    w = torch.tensor([2.0 ** 25, 1.0, -(2.0 ** 25), 1.0])
    assert ops.bincount(x, w).tolist() == [1.0]
    empty = torch.zeros(0, dtype=torch.int64)
    assert ops.bincount(empty).tolist() == [] and ops.bincount(empty, minlength=2).tolist() == [0, 0]


@pytest.mark.parametrize("bins,lo,hi", [(1, -1.0, 1.0), (7, -0.3, 2.9), (64, 0.0, 0.3),
                                        (100, -5.0, 5.0)])
def test_histc_rule(bins, lo, hi):
    rng = np.random.default_rng(bins)
    x = rng.uniform(lo - 1, hi + 1, 3000).astype(np.float32)
    edges = (np.float32(lo) + (np.float32(hi) - np.float32(lo)) *
             np.arange(bins + 1, dtype=np.float32) / np.float32(bins)).astype(np.float32)
    x = np.concatenate([x, edges, [np.nan, np.inf, -np.inf, lo, hi]]).astype(np.float32)
    got = ops.histc(torch.from_numpy(x), bins, lo, hi)
    assert torch.equal(_bits(got), _bits(_histc_restated(x, bins, lo, hi)))
    theirs = torch.histc(torch.from_numpy(x), bins, lo, hi)
    if TORCH2:
        assert torch.equal(_bits(got), _bits(theirs))
    else:   # 1.13: only elements on or next to an edge may move (or, at min/max, drop)
        assert (got - theirs).abs().sum() <= 2 * (bins + 3)


def test_histc_range_from_the_data():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(ops.histc(x, 4), torch.histc(x, 4))
    x = torch.tensor([1.0, 1.0, 1.0])
    assert ops.histc(x, 4, 5, 5).tolist() == torch.histc(x, 4, 5, 5).tolist() == [0, 0, 3, 0]
    assert ops.histc(torch.zeros(0), 3).tolist() == [0, 0, 0]


def test_refusals_name_the_parameter():
    with pytest.raises(samebits.SamebitsError, match="-1"):
        ops.bincount(torch.tensor([0, -1, 2]))
    with pytest.raises(ValueError, match="minlength"):
        ops.bincount(torch.tensor([0]), minlength=-2)
    with pytest.raises(samebits.SamebitsError, match="weights"):
        ops.bincount(torch.tensor([0, 1]), torch.ones(3))
    with pytest.raises(samebits.SamebitsError, match="dimensions"):
        ops.bincount(torch.zeros(2, 2, dtype=torch.int64))
    with pytest.raises(TypeError):
        ops.bincount(torch.tensor([0.5]))
    with pytest.raises(ValueError, match="bins"):
        ops.histc(torch.ones(3), 0)
    with pytest.raises(samebits.SamebitsError, match="max must not be below min"):
        ops.histc(torch.ones(3), 4, 2, 1)
    with pytest.raises(samebits.SamebitsError, match="finite"):
        ops.histc(torch.tensor([1.0, float("inf")]), 4)


def test_strict_routes():
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.integers(0, 5, 50))
    w = torch.from_numpy(rng.standard_normal(50).astype(np.float32))
    h = torch.from_numpy(rng.standard_normal(200).astype(np.float32))
    with samebits.StrictMode():
        counts = torch.bincount(x)               # integer: exact, PyTorch's
        sums = torch.bincount(x, weights=w, minlength=7)
        hist = torch.histc(h, bins=9, min=-2, max=2)
        hist2 = h.histc(5)
    assert torch.equal(counts, torch.bincount(x))
    assert torch.equal(_bits(sums), _bits(ops.bincount(x, w, 7)))
    assert torch.equal(_bits(hist), _bits(ops.histc(h, 9, -2, 2)))
    assert torch.equal(_bits(hist2), _bits(SF.histc(h, 5)))
