"""ELU, SELU, CELU, Mish, LogSigmoid, Hardshrink, Softshrink, Threshold,
Softsign and Tanhshrink through samebits.ops, samebits.nn.functional,
module conversion and strict mode.

Values are compared with PyTorch (the piecewise ones bit for bit, the
others within a few ulps: PyTorch's exp/expm1/log1p/tanh are not correctly
rounded), and the same calls are repeated at 1/2/3/7 threads and every ISA
level this machine runs, which must not change a bit."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF
from test_strict import _strict_run_like_pytorch
from test_zoo_ops import _bits_equal, _same_everywhere

# name, samebits function, PyTorch function, exact (bit-equal to PyTorch)
ACTS = [("elu", lambda v, **k: SF.elu(v, 1.5, **k), lambda v, **k: F.elu(v, 1.5, **k), False),
        ("selu", SF.selu, F.selu, False),
        ("celu", lambda v, **k: SF.celu(v, 1.7, **k), lambda v, **k: F.celu(v, 1.7, **k), False),
        ("mish", SF.mish, F.mish, False),
        ("logsigmoid", SF.logsigmoid, F.logsigmoid, False),
        ("hardshrink", lambda v: SF.hardshrink(v, 0.75), lambda v: F.hardshrink(v, 0.75), True),
        ("softshrink", lambda v: SF.softshrink(v, 0.75), lambda v: F.softshrink(v, 0.75), False),
        ("threshold", lambda v, **k: SF.threshold(v, 0.25, -3.0, **k),
         lambda v, **k: F.threshold(v, 0.25, -3.0, **k), True),
        ("softsign", SF.softsign, F.softsign, False),
        ("tanhshrink", SF.tanhshrink, F.tanhshrink, False)]
INPLACE = [a for a in ACTS if a[0] in ("elu", "selu", "celu", "mish", "threshold")]


def _input():
    torch.manual_seed(7)
    special = torch.tensor([-0.0, 0.0, 0.25, 0.75, -0.75, 1e-40, -1e-40, 30.0, -30.0, 100.0,
                            -100.0, float("inf"), -float("inf"), float("nan")])
    return torch.cat([special, torch.randn(4096) * 4])


def _close(a, b, rtol, atol):
    """Equal NaN positions and closeness elsewhere."""
    assert torch.equal(a.isnan(), b.isnan())
    keep = ~a.isnan()
    assert torch.allclose(a[keep], b[keep], rtol=rtol, atol=atol, equal_nan=False)


@pytest.mark.parametrize("name,sb_fn,t_fn,exact", ACTS, ids=[a[0] for a in ACTS])
def test_matches_pytorch(name, sb_fn, t_fn, exact):
    x = _input()
    xs, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
    ys, yt = sb_fn(xs), t_fn(xt)
    dy = torch.randn(x.shape)
    ys.backward(dy)
    yt.backward(dy)
    if exact:
        assert _bits_equal(ys.detach(), yt.detach())
        assert _bits_equal(xs.grad, xt.grad)
    elif name == "softshrink" and torch.__version__ < "2":
        # 1.13's masks turn NaN into +0; samebits keeps it, as PyTorch 2.x
        keep = ~x.isnan()
        assert bool(ys.detach()[~keep].isnan().all())
        assert _bits_equal(ys.detach()[keep], yt.detach()[keep])
    else:
        _close(ys.detach(), yt.detach(), 4e-6, 1e-6)
        finite = x.isfinite()
        _close(xs.grad[finite], xt.grad[finite], 1e-5, 1e-6)


@pytest.mark.parametrize("name,sb_fn,t_fn,exact", INPLACE, ids=[a[0] for a in INPLACE])
def test_inplace_is_honoured(name, sb_fn, t_fn, exact):
    x = _input()
    a = torch.randn(x.shape, requires_grad=True)
    b = a.detach().clone().requires_grad_()
    hs, ht = a * 1.0, b * 1.0
    out_s, out_t = sb_fn(hs, inplace=True), t_fn(ht, inplace=True)
    assert out_s is hs
    _close(hs.detach(), ht.detach(), 4e-6, 1e-6)
    out_s.backward(torch.ones(x.shape))
    assert a.grad is not None and bool(a.grad.isfinite().all())
    with pytest.raises(RuntimeError):  # PyTorch's rule for leaves, kept
        sb_fn(torch.randn(3, requires_grad=True), inplace=True)


def test_selu_and_celu_are_elu_with_their_coefficients():
    x = _input()
    assert _bits_equal(ops.selu(x), ops.elu(x, np.float32(ops.SELU_ALPHA),
                                            np.float32(ops.SELU_SCALE)))
    assert _bits_equal(ops.celu(x, 1.7), ops.elu(x, 1.7, 1.0, np.float32(1.0 / 1.7)))
    # PyTorch's own celu is its elu with those coefficients
    assert _bits_equal(F.celu(x, 1.7), torch.ops.aten.elu(x, 1.7, 1.0, 1.0 / 1.7))


def test_same_bits_at_every_setting():
    x, dy = _input(), torch.randn(4110)

    def run():
        return [ops.elu(x, 1.5), ops.elu_backward(x, dy, 1.5), ops.selu(x), ops.celu(x, 0.5),
                ops.elu_backward(x, dy, 2.0, 1.0, 0.5), ops.mish(x), ops.mish_backward(x, dy),
                ops.logsigmoid(x), ops.logsigmoid_backward(x, dy), ops.hardshrink(x),
                ops.hardshrink_backward(x, dy), ops.softshrink(x, 0.3),
                ops.softshrink_backward(x, dy, 0.3), ops.threshold(x, 0.1, 2.0),
                ops.threshold_backward(x, dy, 0.1)]
    _same_everywhere(run)


def test_arguments_are_checked():
    with pytest.raises(samebits.SamebitsError, match="lambd"):
        ops.softshrink(torch.zeros(3), -0.5)
    with pytest.raises(samebits.SamebitsError, match="finite"):
        ops.elu(torch.zeros(3), float("inf"))
    with pytest.raises(samebits.SamebitsError, match="threshold is NaN"):
        ops.threshold(torch.zeros(3), float("nan"), 0.0)
    with pytest.raises(ValueError, match="alpha = 0"):
        SF.celu(torch.zeros(3), 0.0)


class SmoothBlock(torch.nn.Module):
    """Every new activation as a module and as an F call in forward code."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.mods = torch.nn.ModuleList([
            torch.nn.ELU(0.7), torch.nn.SELU(), torch.nn.CELU(1.3), torch.nn.Mish(),
            torch.nn.LogSigmoid(), torch.nn.Hardshrink(0.2), torch.nn.Softshrink(0.1),
            torch.nn.Threshold(-0.5, 0.25), torch.nn.Softsign(), torch.nn.Tanhshrink()])
        self.elu_ip = torch.nn.ELU(inplace=True)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc1(x)
        acc = h
        for m in self.mods:
            acc = acc + m(h)
        acc = acc + F.elu(h, 0.5) + F.selu(h) + F.celu(h) + F.mish(h) + F.logsigmoid(h)
        acc = acc + F.hardshrink(h, 0.3) + F.softshrink(h, 0.3) + F.threshold(h, 0.1, -1.0)
        acc = acc + F.softsign(h) + F.tanhshrink(h)
        acc = self.elu_ip(acc * 1.0)
        return self.fc2(acc)


def test_modules_convert_and_run_strict():
    samebits.manual_seed(0)
    torch.manual_seed(3)
    m = SmoothBlock()
    sb = samebits.from_torch_module(m)
    assert all(type(k).__module__ == "samebits.nn" for k in sb.mods)
    x = torch.randn(2, 6, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    covered = {op for op, _ in report.covered}
    # F.hardshrink is torch.hardshrink, F.logsigmoid torch._C._nn.log_sigmoid, ...
    names = {op.rsplit(".", 1)[-1].lstrip("_") for op in covered}
    for f in ("elu", "selu", "celu", "mish", "hardshrink", "softshrink", "threshold",
              "softsign", "tanhshrink"):
        assert f in names, (f, sorted(covered))
    assert "log_sigmoid" in names or "logsigmoid" in names, sorted(covered)
