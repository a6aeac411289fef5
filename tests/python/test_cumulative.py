"""cumsum and cumprod from Python (contract section 10, "Cumulative sum and
product"): samebits.ops, the differentiable samebits.nn.functional versions
and strict-mode routing of torch.cumsum / Tensor.cumsum(_) / cumprod(_).

The expected bits are a float32 restatement written here: one running chain
per column, one rounding per operation. PyTorch's CPU kernel keeps a float32
running sum in float64 (torch 1.13 and 2.x), so against torch the tests
check closeness, not bits."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing, _strict_run_like_pytorch


def _bits(t):
    return torch.as_tensor(np.ascontiguousarray(np.asarray(t, dtype=np.float32))).view(torch.int32)


def _running(x, dim, kind):
    """The contract's chain along dim in float32: s = +0 (or p = 1), then one
    rounding per element, index ascending."""
    x = np.moveaxis(np.asarray(x, dtype=np.float32), dim, -1)
    out = np.empty_like(x)
    for col in np.ndindex(*x.shape[:-1]):
        acc = np.float32(0.0) if kind == "sum" else np.float32(1.0)
        for i in range(x.shape[-1]):
            acc = np.float32(acc + x[col + (i,)]) if kind == "sum" else \
                np.float32(acc * x[col + (i,)])
            out[col + (i,)] = acc
    return np.moveaxis(out, -1, dim)


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e4], size=shape),
                   dtype=np.float32)
    flat = x.reshape(-1)
    if flat.size > 8:
        flat[3], flat[5], flat[7] = np.nan, np.inf, -0.0
    return x


@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 11), 1), ((3, 11), 0), ((2, 5, 9), -2),
                                       ((4, 0, 3), 2), ((4, 0, 3), 1), ((), 0)])
def test_bits_are_the_sequential_chain(kind, shape, dim):
    x = _data(shape, len(shape) * 10 + dim)
    fn = ops.cumsum if kind == "sum" else ops.cumprod
    want = _running(x, dim, kind) if x.ndim else x.copy()
    if kind == "sum" and x.ndim == 0:
        want = np.asarray(x + np.float32(0.0), dtype=np.float32)
    got_np, got_t = fn(x, dim), fn(torch.from_numpy(x), dim)
    assert isinstance(got_np, np.ndarray) and isinstance(got_t, torch.Tensor)
    assert torch.equal(_bits(got_np), _bits(want))
    assert torch.equal(_bits(got_t), _bits(want))


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 7])
def test_threads_do_not_change_the_bits(threads):
    x = _data((37, 300), 3)
    want = _running(x, 1, "sum")
    was = samebits.get_num_threads()
    try:
        samebits.set_num_threads(threads)
        got = ops.cumsum(x, 1)
    finally:
        samebits.set_num_threads(was)
    assert torch.equal(_bits(got), _bits(want))


def test_float32_chain_differs_from_a_wider_running_sum():
    """The contract's example: a float32 chain loses each 2^-24; a running
    sum kept wider (PyTorch's CPU kernel) does not."""
    x = torch.tensor([1.0, 2.0 ** -24, 2.0 ** -24, 2.0 ** -24])
    assert ops.cumsum(x, 0).tolist() == [1.0, 1.0, 1.0, 1.0]
    wide = torch.cumsum(x.double(), 0).float()
    assert wide.tolist()[3] > 1.0   # what a double running sum gives


def test_leading_negative_zero_becomes_positive():
    y = ops.cumsum(torch.tensor([-0.0, -0.0]), 0)
    assert _bits(y).tolist() == [0, 0]
    assert _bits(torch.cumsum(torch.tensor([-0.0, -0.0]), 0)).tolist() == [0, 0]


@pytest.mark.parametrize("kind", ["sum", "prod"])
def test_close_to_torch(kind):
    torch.manual_seed(0)
    x = torch.randn(5, 64) * (0.2 if kind == "prod" else 1.0) + (1.0 if kind == "prod" else 0.0)
    ours = (SF.cumsum if kind == "sum" else SF.cumprod)(x, 1)
    theirs = (torch.cumsum if kind == "sum" else torch.cumprod)(x, 1)
    assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def _float64_grad(f, x, dy):
    x64 = x.detach().double().requires_grad_(True)
    f(x64).backward(dy.double())
    return x64.grad


@pytest.mark.parametrize("zeros", [(), (4,), (2, 6), (0, 1, 7)])
def test_cumprod_gradient_with_zeros_close_to_torch(zeros):
    torch.manual_seed(1)
    x = torch.rand(3, 9) + 0.5
    for z in zeros:
        x[:, z] = 0.0
    x.requires_grad_(True)
    dy = torch.randn(3, 9)
    SF.cumprod(x, 1).backward(dy)
    want = _float64_grad(lambda a: torch.cumprod(a, 1), x, dy)
    assert torch.allclose(x.grad.double(), want, rtol=1e-5, atol=1e-5)


def test_cumsum_gradient_is_the_reversed_chain():
    x = torch.zeros(4, requires_grad=True)
    dy = torch.tensor([1.0, -(2.0 ** 25), 1.0, 2.0 ** 25])
    SF.cumsum(x, 0).backward(dy)
    # from the last index down: 2^25, 2^25 + 1 = 2^25 (rounded), 0, 1
    assert x.grad.tolist() == [1.0, 0.0, 2.0 ** 25, 2.0 ** 25]
    ours = torch.tensor(_running(dy.numpy()[::-1], 0, "sum")[::-1].copy())
    assert torch.equal(_bits(x.grad), _bits(ours))


def test_gradcheck_in_float64_terms():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 5, requires_grad=True)
    dy = torch.randn(2, 3, 5)
    SF.cumsum(x, -1).backward(dy)
    want = _float64_grad(lambda a: torch.cumsum(a, -1), x, dy)
    assert torch.allclose(x.grad.double(), want, rtol=1e-6, atol=1e-6)


def test_refusals_name_the_parameter():
    with pytest.raises(samebits.SamebitsError, match="dim"):
        ops.cumsum(np.zeros((2, 3), np.float32), 2)
    with pytest.raises(TypeError, match="dim"):
        ops.cumprod(np.zeros((2, 3), np.float32), 1.5)
    with pytest.raises(TypeError, match="dtype"):
        SF.cumsum(torch.zeros(3), 0, dtype=torch.float64)
    with pytest.raises(TypeError):
        ops.cumsum(np.zeros(3, np.float64), 0)


def test_strict_routes_every_form():
    torch.manual_seed(3)
    x = torch.randn(3, 6)
    want_s, want_p = ops.cumsum(x, 1), ops.cumprod(x, 0)
    ar = torch.arange(5)
    with samebits.StrictMode():
        got = [torch.cumsum(x, 1), x.cumsum(1), x.cumsum(dim=1, dtype=torch.float32),
               x.clone().cumsum_(1)]
        prods = [torch.cumprod(x, 0), x.cumprod(0), x.clone().cumprod_(0)]
        ints = torch.cumsum(ar, 0)                     # integer: exact, PyTorch's
    for g in got:
        assert torch.equal(_bits(g), _bits(want_s))
    for g in prods:
        assert torch.equal(_bits(g), _bits(want_p))
    assert ints.tolist() == [0, 1, 3, 6, 10]


def test_strict_refuses_another_dtype_by_name():
    x, ints = torch.randn(3), torch.arange(4)
    with samebits.StrictMode():
        with pytest.raises(samebits.NotReproducibleError, match="dtype=torch.float64"):
            torch.cumsum(x, 0, dtype=torch.float64)
        with pytest.raises(samebits.NotReproducibleError, match="cumprod"):
            ints.cumprod(0, dtype=torch.float32)


class RunningModel(torch.nn.Module):
    """A model whose forward calls cumsum, cumprod and an in-place cumsum_."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x):
        h = self.fc(x)                          # (2, 3)
        s = torch.cumsum(h, 1)
        p = (h * 0.5 + 1.0).cumprod(dim=0)
        t = s.clone()
        t.cumsum_(0)
        return s + p + t


def test_strict_model_runs_no_pytorch_arithmetic():
    samebits.manual_seed(0)
    torch.manual_seed(4)
    m = RunningModel()
    sb = samebits.from_torch_module(m)
    x = torch.randn(2, 5, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert any(op == "torch.cumsum" for op, _ in report.covered)
    assert x.grad is not None and sb.fc.weight.grad is not None
