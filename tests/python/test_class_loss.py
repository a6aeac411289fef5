"""Cross-entropy and NLL with class weights, ignore_index, label smoothing
and K-dimensional inputs (sb_class_loss_*): samebits.nn.functional against
PyTorch (forward and input gradient, every reduction), samebits.ops on
numpy, the same bits at 1 and 3 threads, the nn modules and their
conversion, strict routing inside a model's forward with no PyTorch
computing kernel in the profile, and the refusals."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch

SHAPES = [(6, 5), (3, 4, 7), (2, 5, 3, 4)]


def _data(shape, seed, ignore=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * 2
    t = torch.randint(0, shape[1], (shape[0],) + shape[2:], generator=g)
    if ignore:
        t.view(-1)[1::4] = -100
    w = torch.rand(shape[1], generator=g) * 2 + 0.25
    return x, t, w


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_close_to_torch(shape, reduction, smoothing, weighted):
    x, t, w = _data(shape, 1)
    w = w if weighted else None
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    got = SF.cross_entropy(xa, t, weight=w, reduction=reduction, label_smoothing=smoothing)
    want = F.cross_entropy(xb, t, weight=w, reduction=reduction, label_smoothing=smoothing)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    dy = torch.rand(want.shape) + 0.5
    (got * dy).sum().backward()
    (want * dy).sum().backward()
    assert torch.allclose(xa.grad, xb.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_close_to_torch(shape, reduction, weighted):
    x, t, w = _data(shape, 2)
    w = w if weighted else None
    lp = torch.log_softmax(x, 1)
    xa, xb = lp.clone().requires_grad_(), lp.clone().requires_grad_()
    got = SF.nll_loss(xa, t, weight=w, reduction=reduction)
    want = F.nll_loss(xb, t, weight=w, reduction=reduction)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    dy = torch.rand(want.shape) + 0.5
    (got * dy).sum().backward()
    (want * dy).sum().backward()
    assert torch.allclose(xa.grad, xb.grad, rtol=1e-5, atol=1e-7)


def test_weighted_mean_divides_by_the_counted_weights():
    # two rows, one ignored: MEAN is the counted row's weighted loss over its weight
    lp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.25, -4.0]])
    t = torch.tensor([2, -100])
    w = torch.tensor([2.0, 0.5, 3.0])
    assert SF.nll_loss(lp, t, weight=w).item() == 3.0
    assert torch.isnan(SF.nll_loss(lp, torch.tensor([-100, -100]), weight=w))


def test_unbatched_input():
    x, t, w = _data((1, 5), 3, ignore=False)
    for red in ("none", "mean", "sum"):
        got = SF.cross_entropy(x[0], t[0], weight=w, reduction=red)
        want = F.cross_entropy(x[0], t[0], weight=w, reduction=red)
        assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-6)


def test_ops_on_numpy_equal_the_functional_bits():
    x, t, w = _data((3, 4, 7), 4)
    xn, tn, wn = x.numpy(), t.numpy(), w.numpy()
    for red in ("none", "mean", "sum"):
        a = ops.cross_entropy(xn, tn, reduction=red, label_smoothing=0.1, weight=wn)
        b = SF.cross_entropy(x, t, weight=w, reduction=red, label_smoothing=0.1)
        assert isinstance(a, np.ndarray) and a.tobytes() == b.numpy().tobytes()
        dl = np.ones(a.shape, np.float32)
        da = ops.cross_entropy_backward(xn, tn, dl, reduction=red, label_smoothing=0.1, weight=wn)
        xr = x.clone().requires_grad_()
        SF.cross_entropy(xr, t, weight=w, reduction=red, label_smoothing=0.1).backward(
            torch.from_numpy(dl))
        assert da.tobytes() == xr.grad.numpy().tobytes()
        lp = ops.log_softmax(xn, 1)
        c = ops.nll_loss(lp, tn, weight=wn, reduction=red)
        d = SF.nll_loss(torch.from_numpy(lp), t, weight=w, reduction=red)
        assert c.tobytes() == d.numpy().tobytes()
        dc = ops.nll_loss_backward(lp, tn, dl, weight=wn, reduction=red)
        assert dc.shape == lp.shape and np.all((dc == 0) | (tn[:, None, :] >= 0))


def test_unweighted_2d_keeps_the_old_bits():
    # the general entry point and sb_cross_entropy_* agree bit for bit
    x, t, _ = _data((9, 6), 5)
    for red in ("none", "mean", "sum"):
        a = ops.cross_entropy(x.numpy(), t.numpy(), reduction=red, label_smoothing=0.2)
        b = SF.cross_entropy(x, t, reduction=red, label_smoothing=0.2)
        assert a.tobytes() == b.numpy().tobytes()


def test_bits_equal_at_1_and_3_threads():
    x, t, w = _data((4, 7, 50, 30), 6)
    old = samebits.get_num_threads()
    try:
        got = []
        for n in (1, 3):
            samebits.set_num_threads(n)
            xr = x.clone().requires_grad_()
            loss = SF.cross_entropy(xr, t, weight=w, label_smoothing=0.1)
            loss.backward()
            got.append((loss.detach().numpy().tobytes(), xr.grad.numpy().tobytes()))
    finally:
        samebits.set_num_threads(old)
    assert got[0] == got[1]


def test_modules_and_conversion():
    x, t, w = _data((3, 4, 5), 7, ignore=False)
    for tm in (torch.nn.CrossEntropyLoss(weight=w, label_smoothing=0.05),
               torch.nn.CrossEntropyLoss(weight=w, reduction="none", ignore_index=2),
               torch.nn.NLLLoss(weight=w, reduction="sum")):
        sb = samebits.from_torch_module(tm)
        assert type(sb).__module__.startswith("samebits")
        inp = torch.log_softmax(x, 1) if isinstance(tm, torch.nn.NLLLoss) else x
        assert torch.allclose(sb(inp, t), tm(inp, t), rtol=1e-5, atol=1e-6)
    assert torch.allclose(samebits.nn.NLLLoss()(torch.log_softmax(x, 1), t),
                          F.nll_loss(torch.log_softmax(x, 1), t), rtol=1e-6)


class WeightedHead(torch.nn.Module):
    """Per-position weighted losses inside the forward: K-dimensional
    cross-entropy (functional and module) and NLL of a log-softmax."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 12)
        self.register_buffer("w", torch.tensor([0.5, 2.0, 1.25]))
        self.register_buffer("tgt", torch.tensor([[0, 2, 1, -100], [1, 1, 0, 2]]))
        self.ce = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 0.25, 3.0]),
                                            reduction="none", label_smoothing=0.1)
        self.nll = torch.nn.NLLLoss(weight=torch.tensor([2.0, 1.0, 0.5]), reduction="none")

    def forward(self, x):
        z = self.lin(x).view(x.shape[0], 3, 4)
        a = F.cross_entropy(z, self.tgt, weight=self.w, reduction="none")
        b = self.ce(z, self.tgt)
        c = self.nll(F.log_softmax(z, 1), self.tgt)
        d = F.nll_loss(F.log_softmax(z, 1), self.tgt, weight=self.w, reduction="none")
        return a + b + c + d


def test_strict_model_with_weighted_k_dim_losses():
    samebits.manual_seed(5)
    torch.manual_seed(5)
    m = WeightedHead()
    sb = samebits.from_torch_module(WeightedHead())
    sb.load_state_dict(m.state_dict())
    assert type(sb.ce) is samebits.nn.CrossEntropyLoss and type(sb.nll) is samebits.nn.NLLLoss
    x = torch.randn(2, 6, requires_grad=True)
    _strict_run_like_pytorch(sb, m, x)
    assert sb.lin.weight.grad is not None


def test_refusals_name_the_parameter():
    x, t, w = _data((3, 4), 8)
    with pytest.raises(samebits.SamebitsError, match="sb_class_loss_forward: weight has 3 entries"):
        SF.cross_entropy(x, t, weight=w[:3])
    bad = t.clone()
    bad[0] = 4
    with pytest.raises(samebits.SamebitsError, match=r"targets\[0\] = 4 is outside \[0, 4\)"):
        SF.nll_loss(x, bad, weight=w)
    with pytest.raises(samebits.SamebitsError, match="targets has shape"):
        SF.cross_entropy(torch.randn(2, 4, 3), torch.zeros(2, 4, dtype=torch.int64))
    # a float target is a probability target (test_soft_cross_entropy.py): of x's shape
    with pytest.raises(ValueError, match="probability target must have the input's shape"):
        SF.cross_entropy(x, torch.rand(3, 5))
    with pytest.raises(NotImplementedError, match="size_average"):
        SF.nll_loss(x, t, size_average=True)
    wr = w.clone().requires_grad_()
    loss = SF.cross_entropy(x.clone().requires_grad_(), t, weight=wr)
    with pytest.raises(NotImplementedError, match="gradient of weight"):
        loss.backward()
