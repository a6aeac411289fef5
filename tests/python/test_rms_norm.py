"""RMS norm from Python: samebits.ops.rms_norm and nn.functional.rms_norm
against float64, eps=None as PyTorch, gradients, and (torch >= 2.4, which
has F.rms_norm and nn.RMSNorm) closeness to PyTorch, module conversion and
strict mode (contract section "Normalisation", RMS norm)."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch

HAS_RMS = hasattr(torch.nn, "RMSNorm")
needs_torch_rms = pytest.mark.skipif(
    not HAS_RMS, reason="F.rms_norm and nn.RMSNorm arrived in torch 2.4; torch %s has neither "
    "(tests/check_python_pypi.sh runs these under the pinned torch 2.x)" % torch.__version__)


def _ref64(x, w, eps, nd):
    x64 = np.asarray(x, np.float64)
    axes = tuple(range(x64.ndim - nd, x64.ndim))
    y = x64 / np.sqrt((x64 * x64).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * np.asarray(w, np.float64)


@pytest.mark.parametrize("shape,nd,weighted", [((4, 33), 1, True), ((2, 3, 5), 2, True),
                                               ((7, 6), 1, False), ((5,), 1, True)])
def test_ops_rms_norm_close_to_float64(shape, nd, weighted):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32) + np.float32(0.3)
    w = (1 + 0.5 * rng.standard_normal(shape[len(shape) - nd:])).astype(np.float32) \
        if weighted else None
    y = ops.rms_norm(x, shape[len(shape) - nd:], w, eps=1e-5)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, _ref64(x, w, float(np.float32(1e-5)), nd), rtol=2e-6, atol=1e-6)


def test_eps_none_is_float32_machine_epsilon():
    x = np.random.default_rng(4).standard_normal((3, 8)).astype(np.float32) * 1e-4
    a = ops.rms_norm(x, (8,))
    b = ops.rms_norm(x, (8,), eps=float(np.finfo(np.float32).eps))
    c = ops.rms_norm(x, (8,), eps=1e-5)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
    assert not np.array_equal(a, c)  # small rows: eps matters, so the default is visible
    t = SF.rms_norm(torch.from_numpy(x), (8,))
    assert np.array_equal(t.numpy().view(np.uint32), a.view(np.uint32))


def test_functional_gradients_close_to_float64_and_equal_to_the_c_backward():
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.standard_normal((6, 10)).astype(np.float32)).requires_grad_()
    w = torch.from_numpy((1 + 0.3 * rng.standard_normal(10)).astype(np.float32)).requires_grad_()
    r = torch.from_numpy(rng.standard_normal((6, 10)).astype(np.float32))
    y = SF.rms_norm(x, (10,), w, eps=1e-6)
    (y * r).sum().backward()
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    y64 = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + float(np.float32(1e-6))) * w64
    (y64 * r.double()).sum().backward()
    assert torch.allclose(y.double(), y64, rtol=1e-5, atol=1e-6)
    assert torch.allclose(x.grad.double(), x64.grad, rtol=1e-4, atol=1e-5)
    assert torch.allclose(w.grad.double(), w64.grad, rtol=1e-4, atol=1e-5)
    # the autograd function's gradients are the C backward's bits
    rrms = (1.0 / np.sqrt((x.detach().numpy().astype(np.float64) ** 2).mean(-1))).astype(np.float32)
    _, rr = ops._rms_norm(x.detach().numpy(), 1, w.detach().numpy(), 1e-6)
    assert np.allclose(rr, rrms, rtol=1e-5)
    dx, dw = ops.rms_norm_backward(r, x.detach(), 1, w.detach(), rr)
    assert torch.equal(x.grad, dx) and torch.equal(w.grad, dw)


def test_bad_normalized_shape_and_eps_are_refused():
    x = torch.randn(2, 5)
    with pytest.raises(ValueError, match="normalized_shape"):
        SF.rms_norm(x, (4,))
    with pytest.raises(ValueError, match="eps"):
        ops.rms_norm(x.numpy(), (5,), eps=1e-50)
    with pytest.raises(samebits.SamebitsError, match="eps"):
        ops.rms_norm(x.numpy(), (5,), eps=0.0)
    with pytest.raises(samebits.SamebitsError, match="weight must have shape"):
        SF.rms_norm(x, (5,), torch.ones(4))


@needs_torch_rms
@pytest.mark.parametrize("eps", [None, 1e-6])
def test_close_to_pytorch_rms_norm(eps):
    torch.manual_seed(6)
    x = torch.randn(3, 4, 16, requires_grad=True)
    w = (1 + 0.2 * torch.randn(16)).requires_grad_()
    xs, ws = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    r = torch.randn(3, 4, 16)
    want = torch.nn.functional.rms_norm(x, (16,), w, eps)
    got = SF.rms_norm(xs, (16,), ws, eps)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    (want * r).sum().backward()
    (got * r).sum().backward()
    assert torch.allclose(xs.grad, x.grad, rtol=1e-4, atol=1e-5)
    assert torch.allclose(ws.grad, w.grad, rtol=1e-4, atol=1e-5)


class RMSBlock(torch.nn.Module):
    """A pre-norm residual block: nn.RMSNorm (weighted and not) and F.rms_norm."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.RMSNorm(8, eps=1e-6)
        self.plain = torch.nn.RMSNorm((8,), elementwise_affine=False)
        self.fc = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = x + self.fc(self.norm(x))
        h = self.plain(h)
        return self.head(torch.nn.functional.rms_norm(h, (8,), eps=1e-5))


@needs_torch_rms
def test_rmsnorm_module_converts_and_runs_strict():
    torch.manual_seed(9)
    m = RMSBlock()
    with torch.no_grad():
        m.norm.weight.mul_(1.5)
    sb = samebits.from_torch_module(RMSBlock())
    sb.load_state_dict(m.state_dict())
    for name in ("norm", "plain"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn"
    assert sb.plain.weight is None and sb.norm.eps == 1e-6
    x = torch.randn(2, 8, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    covered = {op for op, _ in report.covered}
    assert "torch.nn.functional.rms_norm" in covered


@needs_torch_rms
def test_init_module_gives_rmsnorm_weight_ones():
    m = torch.nn.RMSNorm(5)
    with torch.no_grad():
        m.weight.fill_(3.0)
    samebits.init_module(m, seed=1)
    assert torch.equal(m.weight, torch.ones(5))
