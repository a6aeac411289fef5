"""samebits.nn.functional: gradients are right (against PyTorch's analytical
ones and finite differences) and are exactly the C backward functions' bits."""
import numpy as np
import pytest
import torch

from samebits import ops
from samebits.nn import functional as F
from conftest import same_bits


def _pair(rng, *shape, scale=1.0):
    a = (rng.standard_normal(shape) * scale).astype(np.float32)
    return torch.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()


def _check(sb_out, t_out, sb_ins, t_ins, rng, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(sb_out.detach().numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    g = torch.from_numpy(rng.standard_normal(tuple(sb_out.shape)).astype(np.float32))
    sb_out.backward(g)
    t_out.backward(g)
    for a, b in zip(sb_ins, t_ins):
        if b.grad is None:
            assert a.grad is None
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


def test_linear(rng):
    x, tx = _pair(rng, 6, 5)
    w, tw = _pair(rng, 4, 5)
    b, tb = _pair(rng, 4)
    _check(F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb), (x, w, b), (tx, tw, tb), rng)
    # the gradients are the C backward's bits
    dy = np.ones((6, 4), np.float32)
    x.grad = w.grad = b.grad = None
    F.linear(x, w, b).backward(torch.from_numpy(dy))
    dx, dw, db = ops.linear_backward(dy, x.detach().numpy(), w.detach().numpy())
    assert same_bits(x.grad, dx) and same_bits(w.grad, dw) and same_bits(b.grad, db)


def test_conv2d(rng):
    x, tx = _pair(rng, 2, 4, 7, 6)
    w, tw = _pair(rng, 6, 2, 3, 3)
    b, tb = _pair(rng, 6)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    _check(F.conv2d(x, w, b, **kw), torch.nn.functional.conv2d(tx, tw, tb, **kw), (x, w, b),
           (tx, tw, tb), rng)


@pytest.mark.parametrize("name", ["relu", "tanh", "sigmoid", "gelu", "softmax", "log_softmax",
                                  "sqrt", "exp", "log"])
def test_pointwise_and_softmax(rng, name):
    x, tx = _pair(rng, 5, 7)
    if name in ("sqrt", "log"):
        with torch.no_grad():
            x.abs_().add_(0.1)
            tx.abs_().add_(0.1)
    extra = {"dim": 1} if "softmax" in name else {}
    ref = torch.nn.functional.gelu if name == "gelu" else getattr(torch, name)
    _check(getattr(F, name)(x, **extra), ref(tx, **extra), (x,), (tx,), rng)


def test_div_mm_sum_mean(rng):
    a, ta = _pair(rng, 4, 6)
    b, tb = _pair(rng, 6)
    with torch.no_grad():
        b.abs_().add_(0.5)
        tb.abs_().add_(0.5)
    _check(F.div(a, b), ta / tb, (a, b), (ta, tb), rng)
    a, ta = _pair(rng, 4, 6)
    c, tc = _pair(rng, 3, 6)
    _check(F.mm(a, c, trans_b=True), ta @ tc.t(), (a, c), (ta, tc), rng)
    x, tx = _pair(rng, 3, 4, 5)
    _check(F.sum(x, dim=(0, 2)), tx.sum(dim=(0, 2)), (x,), (tx,), rng)
    x, tx = _pair(rng, 3, 4, 5)
    _check(F.mean(x, dim=1, keepdim=True), tx.mean(dim=1, keepdim=True), (x,), (tx,), rng)


def test_losses(rng):
    x, tx = _pair(rng, 8, 5)
    t = torch.from_numpy(rng.integers(0, 5, 8))
    for red in ("mean", "sum", "none"):
        x.grad = tx.grad = None
        _check(F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
               torch.nn.functional.cross_entropy(tx, t, reduction=red, label_smoothing=0.1),
               (x,), (tx,), rng)
    y, ty = _pair(rng, 8, 5)
    x.grad = tx.grad = None
    _check(F.mse_loss(x, y), torch.nn.functional.mse_loss(tx, ty), (x, y), (tx, ty), rng)


def test_norms(rng):
    x, tx = _pair(rng, 6, 3, 4, 4)
    w, tw = _pair(rng, 3)
    b, tb = _pair(rng, 3)
    rm, trm = torch.zeros(3), torch.zeros(3)
    rv, trv = torch.ones(3), torch.ones(3)
    _check(F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5),
           torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True, 0.1, 1e-5),
           (x, w, b), (tx, tw, tb), rng, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-5, atol=1e-6)
    x, tx = _pair(rng, 4, 3, 8)
    w, tw = _pair(rng, 3, 8)
    b, tb = _pair(rng, 3, 8)
    _check(F.layer_norm(x, (3, 8), w, b), torch.nn.functional.layer_norm(tx, (3, 8), tw, tb),
           (x, w, b), (tx, tw, tb), rng, rtol=1e-3, atol=1e-4)


def test_pooling(rng):
    x, tx = _pair(rng, 2, 3, 8, 7)
    _check(F.max_pool2d(x, 2), torch.nn.functional.max_pool2d(tx, 2), (x,), (tx,), rng)
    x, tx = _pair(rng, 2, 3, 8, 7)
    _check(F.avg_pool2d(x, 3, 2, 1), torch.nn.functional.avg_pool2d(tx, 3, 2, 1), (x,), (tx,), rng)


def test_finite_differences(rng):
    # float32 central differences on a smooth composite, loose tolerance
    x0 = rng.standard_normal((3, 4)).astype(np.float32)
    w = torch.from_numpy(rng.standard_normal((2, 4)).astype(np.float32))

    def f(x):
        return F.sum(F.tanh(F.linear(x, w)))

    x = torch.from_numpy(x0.copy()).requires_grad_()
    f(x).backward()
    h = 1e-2
    for i in range(3):
        for j in range(4):
            xp, xm = x0.copy(), x0.copy()
            xp[i, j] += h
            xm[i, j] -= h
            fd = (float(f(torch.from_numpy(xp))) - float(f(torch.from_numpy(xm)))) / (2 * h)
            assert abs(fd - float(x.grad[i, j])) < 2e-3


def test_dropout_masks_are_philox_and_backward_uses_them(rng):
    x = torch.ones(1000, requires_grad=True)
    y1 = F.dropout(x, 0.3, True, seed=5, stream=9)
    y2 = F.dropout(x, 0.3, True, seed=5, stream=9)
    assert same_bits(y1, y2)
    assert not same_bits(y1, F.dropout(x, 0.3, True, seed=5, stream=9, offset=1))
    kept = (y1 != 0).float().mean().item()
    assert 0.6 < kept < 0.8
    y1.sum().backward()
    assert same_bits(x.grad, y1.detach())  # d/dx of x * m_i is m_i
    assert same_bits(F.dropout(x, 0.3, False, 5, 9), x)
