"""Strict-mode routes added for Hugging Face's GPT-2 (samebits/strict.py;
contract sections 7 and 11), each against what it claims to be:

* torch.addmm(bias, x, w) (beta = alpha = 1) gives linear's bits with the
  bias (mm's chains, then one add), forward and gradients;
* torch.matmul of 4-D operands with equal leading dims gives the bits of
  each (n, k) @ (k, m) product on its own;
* a training-mode F.dropout draws samebits' dropout with the calling
  module's key (seed, stream, offset advancing by numel);
* the exact pass-through forms and their refusals: comparisons pass,
  where under autograd, a fractional arange, a scatter_ with duplicate
  indices, addmm with beta != 1 and matmul of unequal batch dims are
  refused naming the op."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits.nn import functional as SF


def _bits(t):
    return t.detach().contiguous().numpy().view(np.uint32)


class Call(torch.nn.Module):
    """Runs fn(*inputs) as model code."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def strict(fn, *inputs):
    m = Call(fn)
    with samebits.StrictMode(m):
        return m(*inputs)


def test_addmm_is_linear_with_bias():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(7, 5, generator=g), torch.randn(5, 3, generator=g), \
        torch.randn(3, generator=g)
    grads = []
    for route in ("addmm", "linear"):
        xx, ww, bb = (t.clone().requires_grad_() for t in (x, w, b))
        if route == "addmm":
            y = strict(lambda a, m, c: torch.addmm(c, a, m), xx, ww, bb)
        else:
            y = SF.linear(xx, ww.t().contiguous(), bb)
        y.backward(torch.ones_like(y) * 0.5 + y.detach())
        grads.append([y, xx.grad, ww.grad, bb.grad])
    for a, c in zip(*grads):
        assert np.array_equal(_bits(a), _bits(c))


def test_matmul_4d_is_each_product():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 3, 5, 6, generator=g)
    y = strict(torch.matmul, a, b.transpose(-1, -2).contiguous().transpose(-1, -2))
    assert y.shape == (2, 3, 4, 6)
    for i in range(2):
        for j in range(3):
            assert np.array_equal(_bits(y[i, j]), _bits(SF.mm(a[i, j], b[i, j])))


class Dropper(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.3, training=True), F.dropout(x, 0.3, training=True)


def test_functional_dropout_is_philox_keyed_by_the_module():
    samebits.manual_seed(5)
    m = Dropper()
    x = torch.rand(4, 50) + 0.5
    with samebits.StrictMode(m):
        y1, y2 = m(x)
    seed, stream, offset = m._samebits_draws
    assert offset == 2 * x.numel()
    assert np.array_equal(_bits(y1), _bits(SF.dropout(x, 0.3, True, seed, stream, 0)))
    assert np.array_equal(_bits(y2), _bits(SF.dropout(x, 0.3, True, seed, stream, x.numel())))
    assert not torch.equal(y1 == 0, y2 == 0)  # the second draw is new


def test_exact_calls_pass_and_their_other_forms_are_refused():
    x = torch.randn(3, 4)
    out = strict(lambda v: ((v > 0) & v.isfinite(), torch.where(v > 0, v, torch.zeros_like(v)),
                            torch.arange(5, dtype=torch.float32)), x)
    assert torch.equal(out[0], x > 0)
    assert torch.equal(out[2], torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0]))
    perm = torch.tensor([2, 0, 1])
    inv = strict(lambda p: torch.empty_like(p).scatter_(0, p, torch.arange(3)), perm)
    assert inv.tolist() == [1, 2, 0]

    xg = x.clone().requires_grad_()
    for fn, inputs, op in [
            (lambda v: torch.where(v > 0, v, torch.zeros_like(v)), (xg,), "torch.where"),
            (lambda v: torch.arange(0.0, 1.0, 0.1) + v.sum(), (x,), "torch.arange"),
            (lambda p: torch.zeros(3, dtype=torch.int64).scatter_(0, p, p), (torch.tensor([1, 1, 0]),),
             "Tensor.scatter_"),
            (lambda v: torch.addmm(v[0, :3], v[:, :2].t(), v[:3, :3], beta=2), (x,), "torch.addmm"),
            (lambda a, b: torch.matmul(a, b), (torch.randn(2, 1, 3, 4), torch.randn(1, 2, 4, 5)),
             "torch.matmul")]:
        with pytest.raises(samebits.NotReproducibleError, match=op.replace(".", r"\.")):
            strict(fn, *inputs)
