"""The elementwise losses (L1, smooth L1, Huber, BCE, BCE with logits, KL
divergence): samebits.nn.functional against PyTorch (forward and input
gradient, every reduction, weight and pos_weight), the same bits at 1 and
3 threads, the nn.*Loss modules, strict routing of torch.nn.functional
inside a model's forward with no PyTorch computing kernel in the profile,
and the refusals."""
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing

torch.manual_seed(0)
X = torch.randn(6, 5)
T = torch.randn(6, 5)
P = torch.rand(6, 5) * 0.98 + 0.01          # probabilities for BCE
TP = torch.rand(6, 5)
LOGP = torch.log_softmax(torch.randn(6, 5), 1)
W = torch.rand(5) + 0.5                      # broadcast over rows
PW = torch.rand(5) * 3


def _cases():
    return [
        ("l1", F.l1_loss, SF.l1_loss, X, T, {}),
        ("smooth_l1", F.smooth_l1_loss, SF.smooth_l1_loss, X, T, {"beta": 0.5}),
        ("smooth_l1_beta0", F.smooth_l1_loss, SF.smooth_l1_loss, X, T, {"beta": 0.0}),
        ("huber", F.huber_loss, SF.huber_loss, X, T, {"delta": 0.7}),
        ("bce", F.binary_cross_entropy, SF.binary_cross_entropy, P, TP, {"weight": W}),
        ("bce_logits", F.binary_cross_entropy_with_logits, SF.binary_cross_entropy_with_logits,
         X * 3, TP, {"weight": W, "pos_weight": PW}),
        ("bce_logits_plain", F.binary_cross_entropy_with_logits,
         SF.binary_cross_entropy_with_logits, X * 3, TP, {}),
        ("kl", F.kl_div, SF.kl_div, LOGP, torch.softmax(T, 1), {}),
        ("kl_log_target", F.kl_div, SF.kl_div, LOGP, torch.log_softmax(T, 1),
         {"log_target": True}),
    ]


@pytest.mark.parametrize("name,tf,sf,x,t,kw", _cases(), ids=[c[0] for c in _cases()])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_close_to_pytorch(name, tf, sf, x, t, kw, reduction):
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    want = tf(xa, t, reduction=reduction, **kw)
    got = sf(xb, t, reduction=reduction, **kw)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
    g = torch.rand_like(want) + 0.5
    want.backward(g)
    got.backward(g)
    assert torch.allclose(xb.grad, xa.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not hasattr(F.l1_loss, "__code__") or
                    "weight" not in F.l1_loss.__code__.co_varnames,
                    reason="this PyTorch's l1_loss, mse_loss and huber_loss take no weight")
@pytest.mark.parametrize("tf,sf,kw", [(F.l1_loss, SF.l1_loss, {}), (F.mse_loss, SF.mse_loss, {}),
                                      (F.huber_loss, SF.huber_loss, {"delta": 0.5})])
def test_weighted_regression_losses(tf, sf, kw):
    w = torch.rand(6, 5) + 0.5
    for reduction in ("none", "mean", "sum"):
        xa, xb = X.clone().requires_grad_(), X.clone().requires_grad_()
        want, got = tf(xa, T, reduction=reduction, weight=w, **kw), sf(xb, T, reduction=reduction,
                                                                        weight=w, **kw)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
        want.sum().backward()
        got.sum().backward()
        assert torch.allclose(xb.grad, xa.grad, rtol=1e-5, atol=1e-6)


def test_kl_batchmean():
    t = torch.softmax(T, 1)
    got = SF.kl_div(LOGP, t, reduction="batchmean")
    assert torch.allclose(got, F.kl_div(LOGP, t, reduction="batchmean"), rtol=1e-5)


@pytest.mark.parametrize("name,tf,sf,x,t,kw", _cases(), ids=[c[0] for c in _cases()])
def test_same_bits_at_any_thread_count(name, tf, sf, x, t, kw):
    def run():
        xx = x.clone().requires_grad_()
        loss = sf(xx, t, reduction="sum", **kw)
        loss.backward()
        return loss.detach().clone(), xx.grad.clone()
    old = samebits.get_num_threads()
    try:
        samebits.set_num_threads(1)
        a = run()
        samebits.set_num_threads(3)
        b = run()
    finally:
        samebits.set_num_threads(old)
    assert torch.equal(a[0].view(torch.int32), b[0].view(torch.int32))
    assert torch.equal(a[1].view(torch.int32), b[1].view(torch.int32))


def test_modules_convert():
    pairs = [(torch.nn.L1Loss(), X, T), (torch.nn.SmoothL1Loss(beta=0.3), X, T),
             (torch.nn.HuberLoss(delta=2.0), X, T), (torch.nn.BCELoss(weight=W), P, TP),
             (torch.nn.BCEWithLogitsLoss(pos_weight=PW), X, TP),
             (torch.nn.KLDivLoss(reduction="batchmean"), LOGP, torch.softmax(T, 1))]
    for m, x, t in pairs:
        sb = samebits.from_torch_module(m)
        assert type(sb).__module__.startswith("samebits"), type(sb)
        assert torch.allclose(sb(x, t), m(x, t), rtol=1e-5, atol=1e-6), type(m)


class _Heads(torch.nn.Module):
    """A model whose forward computes its losses with torch.nn.functional."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(5, 5)

    def forward(self, x, t):
        y = self.lin(x)
        return (F.smooth_l1_loss(y, t) + F.huber_loss(y, t, delta=0.5)
                + F.binary_cross_entropy_with_logits(y, torch.sigmoid(t))
                + F.l1_loss(y, t, reduction="sum")
                + F.kl_div(F.log_softmax(y, dim=1), F.softmax(t, dim=1),
                           reduction="batchmean"))


def test_strict_routes_losses_without_pytorch_arithmetic():
    samebits.manual_seed(0)
    m = _Heads()
    sb = samebits.from_torch_module(m, strict=True)
    with torch.autograd.profiler.profile() as fwd:
        loss = sb(X, T)
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []
    assert torch.allclose(loss, m(X, T), rtol=1e-5, atol=1e-5)


def test_refusals():
    with pytest.raises(samebits.SamebitsError, match=r"BCE needs every element of x in \[0, 1\]"):
        SF.binary_cross_entropy(X, TP)
    with pytest.raises(samebits.SamebitsError, match="delta"):
        SF.huber_loss(X, T, delta=0.0)
    with pytest.raises(samebits.SamebitsError, match="beta"):
        SF.smooth_l1_loss(X, T, beta=-1.0)
    t = TP.clone().requires_grad_()
    loss = SF.binary_cross_entropy_with_logits(X, t)
    with pytest.raises(NotImplementedError, match="target gradient"):
        loss.backward()
