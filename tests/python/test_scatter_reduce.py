"""scatter_reduce from Python (contract section 18, "scatter_reduce"):
samebits.ops, the differentiable samebits.nn.functional version and strict
routing of torch.scatter_reduce / Tensor.scatter_reduce(_).

The expected bits are a float32 restatement written here: every
destination's terms folded in ascending source position with PyTorch's
rules. Against PyTorch the forward and the gradients (PyTorch's
scatter_reduce_backward: ties of amax/amin share the gradient evenly, prod's
zeros handled as PyTorch does) are compared for closeness."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def _bits(t):
    return torch.as_tensor(np.ascontiguousarray(np.asarray(t, dtype=np.float32))).view(torch.int32)


def _restated(x, dim, index, src, reduce, include_self):
    x, src, index = np.asarray(x, np.float32), np.asarray(src, np.float32), np.asarray(index)
    out = x.copy()
    start = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}[reduce]
    acc, count = {}, {}
    for p in np.ndindex(*index.shape):         # row-major: ascending source position
        q = list(p)
        q[dim] = int(index[p])
        q = tuple(q)
        d = acc.get(q, x[q] if include_self else np.float32(start))
        t = src[p]
        if reduce in ("sum", "mean"):
            d = np.float32(d + t)
        elif reduce == "prod":
            d = np.float32(d * t)
        elif reduce == "amax":
            d = t if (np.isnan(t) or d < t) else d
        else:
            d = t if (np.isnan(t) or t < d) else d
        acc[q] = np.float32(d)
        count[q] = count.get(q, 1 if include_self else 0) + 1
    for q, d in acc.items():
        if reduce == "mean" and count[q] > 1:
            d = np.float32(d / np.float32(count[q]))
        out[q] = d
    return out


def _case(seed, shape=(4, 9), out_len=3, dim=1, special=True):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal(shape).astype(np.float32)
    oshape = list(shape)
    oshape[dim] = out_len
    x = rng.standard_normal(oshape).astype(np.float32)
    if special:
        src.reshape(-1)[[1, 5, 8]] = [np.nan, np.inf, -0.0]
        src.reshape(-1)[[3, 11]] = [2.0 ** 25, -(2.0 ** 25)]
    index = rng.integers(0, out_len, size=shape)
    return torch.from_numpy(x), torch.from_numpy(index), torch.from_numpy(src)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_bits_are_the_ascending_fold(reduce, include_self):
    for dim, shape, out_len in ((1, (4, 9), 3), (0, (7, 3), 2), (-1, (2, 3, 20), 5)):
        x, index, src = _case(hash((reduce, dim)) % 1000, shape, out_len, dim % len(shape))
        want = _restated(x, dim % len(shape), index, src, reduce, include_self)
        got = ops.scatter_reduce(x, dim, index, src, reduce, include_self)
        assert torch.equal(_bits(got), _bits(want)) or \
            torch.equal(torch.isnan(got), torch.isnan(torch.from_numpy(want))) and \
            torch.equal(_bits(got)[~torch.isnan(got)], _bits(want)[~torch.isnan(got)])
        numpy_out = ops.scatter_reduce(x.numpy(), dim, index.numpy(), src.numpy(), reduce,
                                       include_self)
        assert isinstance(numpy_out, np.ndarray)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_close_to_torch(reduce, include_self):
    x, index, src = _case(3, special=False)
    ours = ops.scatter_reduce(x, 1, index, src, reduce, include_self)
    theirs = torch.scatter_reduce(x, 1, index, src, reduce, include_self=include_self)
    assert torch.allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_order_is_ascending_source_position():
    x = torch.zeros(1)
    src = torch.tensor([2.0 ** 25, 1.0, -(2.0 ** 25), 1.0])
    idx = torch.zeros(4, dtype=torch.int64)
    assert ops.scatter_reduce(x, 0, idx, src, "sum").item() == 1.0
    assert ops.scatter_reduce(x, 0, idx, src, "mean").item() == np.float32(1.0) / np.float32(5.0)


def test_index_smaller_than_src_and_input():
    x, index, src = _case(4, shape=(4, 9), out_len=5)
    small = index[:3, :6]
    want = torch.scatter_reduce(x, 1, small, src, "amax")
    got = ops.scatter_reduce(x, 1, small, src, "amax")
    assert torch.equal(_bits(got), _bits(want))


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 7])
def test_threads_do_not_change_the_bits(threads):
    x, index, src = _case(5, shape=(300, 40), out_len=7)
    want = _restated(x, 1, index, src, "mean", True)
    was = samebits.get_num_threads()
    try:
        samebits.set_num_threads(threads)
        got = ops.scatter_reduce(x, 1, index, src, "mean")
    finally:
        samebits.set_num_threads(was)
    assert torch.equal(_bits(got), _bits(want))


def _grads(f, x, src, dy):
    a, b = x.clone().requires_grad_(True), src.clone().requires_grad_(True)
    f(a, b).backward(dy)
    return a.grad, b.grad


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradients_close_to_torch(reduce, include_self):
    x, index, src = _case(6, special=False)
    if reduce == "prod":   # one zero alone in its destination, two zeros in another
        src[0, :] = torch.tensor([0.0, 2.0, 0.5, 0.0, 1.5, -1.0, 0.0, 3.0, 1.0])
        index[0, :] = torch.tensor([0, 1, 1, 2, 2, 1, 2, 0, 0])
        x[1, 1] = 0.0
    if reduce in ("amax", "amin"):   # ties share the gradient
        src[1, :3] = 5.0 if reduce == "amax" else -5.0
        index[1, :3] = 2
    dy = torch.randn(x.shape)
    ga, gs = _grads(lambda a, b: SF.scatter_reduce(a, 1, index, b, reduce, include_self), x, src, dy)
    ta, ts = _grads(lambda a, b: torch.scatter_reduce(a, 1, index, b, reduce,
                                                      include_self=include_self), x, src, dy)
    assert torch.allclose(ga, ta, rtol=1e-5, atol=1e-6), (ga, ta)
    assert torch.allclose(gs, ts, rtol=1e-5, atol=1e-6), (gs, ts)


def test_refusals_name_the_parameter():
    x, index, src = _case(7)
    with pytest.raises(ValueError, match="reduce='max'"):
        ops.scatter_reduce(x, 1, index, src, "max")
    with pytest.raises(TypeError, match="include_self"):
        ops.scatter_reduce(x, 1, index, src, "sum", "yes")
    bad = index.clone()
    bad[0, 0] = 3
    with pytest.raises(samebits.SamebitsError, match="outside"):
        ops.scatter_reduce(x, 1, bad, src, "sum")
    with pytest.raises(samebits.SamebitsError, match="dim"):
        ops.scatter_reduce(x, 2, index, src, "sum")


def test_strict_routes_every_form():
    x, index, src = _case(8, special=False)
    want = ops.scatter_reduce(x, 1, index, src, "amin", False)
    with samebits.StrictMode():
        a = torch.scatter_reduce(x, 1, index, src, "amin", include_self=False)
        b = x.scatter_reduce(1, index, src, reduce="amin", include_self=False)
        c = x.clone()
        c.scatter_reduce_(1, index, src, "amin", include_self=False)
    for t in (a, b, c):
        assert torch.equal(_bits(t), _bits(want))


class PoolModel(torch.nn.Module):
    """Segment pooling the way graph networks write it: scatter_reduce of
    node features into their segments, mean and amax."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)                                        # (2, 3)
        seg = torch.tensor([[0, 1, 1], [1, 0, 0]])
        pooled = torch.zeros(2, 2).scatter_reduce(1, seg, h, "mean", include_self=False)
        peak = torch.zeros(2, 2).scatter_reduce(1, seg, h, reduce="amax")
        return torch.cat([pooled + peak, h], 1)              # (2, 5)


def test_strict_model_runs_no_pytorch_arithmetic():
    samebits.manual_seed(0)
    torch.manual_seed(9)
    m = PoolModel()
    sb = samebits.from_torch_module(m)
    x = torch.randn(2, 4, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert any("scatter_reduce" in op for op, _ in report.covered)
    assert x.grad is not None and sb.fc.weight.grad is not None
