"""Pooling options of the zoo: max pooling with dilation and average pooling
with divisor_override, through samebits.ops, samebits.nn.functional, module
conversion and strict mode.

Max pooling is compared with PyTorch exactly (values and indices; the inputs
hold no NaN and no ties), its gradient and the averages within a few ulps
(PyTorch adds in another order); every call is repeated at 1/2/3/7 threads
and every ISA level this machine runs, which must not change a bit."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF
from test_strict import _strict_run_like_pytorch
from test_zoo_ops import _same_everywhere

# (x shape, kernel, stride, padding, dilation, ceil_mode)
DILATED = [((2, 3, 9, 11), 3, 1, 1, 2, False),
           ((1, 2, 13, 10), (3, 2), (2, 1), 1, (3, 2), True),
           ((2, 2, 7, 7), 2, 2, 1, 4, True),
           ((2, 1, 6, 17), (4, 3), (3, 2), (2, 0), (1, 5), False),
           ((3, 4, 12, 12), 2, 2, 0, 2, False)]

# (x shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
OVERRIDDEN = [((2, 3, 9, 11), 3, 2, 1, False, True, 5),
              ((2, 3, 8, 7), 3, 3, 1, True, False, 2),
              ((1, 2, 6, 6), 2, 2, 0, False, True, 1),
              ((2, 2, 10, 9), (3, 2), (2, 1), (1, 1), True, True, 7)]


def _x(shape, seed):
    return torch.from_numpy(samebits.random.normal(shape, 11, seed))


@pytest.mark.parametrize("shape,k,s,p,d,ceil", DILATED)
def test_dilated_max_pool_matches_pytorch(shape, k, s, p, d, ceil):
    x = _x(shape, 1).requires_grad_()
    y, i = ops.max_pool2d(x.detach(), k, s, p, ceil, return_indices=True, dilation=d)
    ty, ti = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    assert torch.equal(y, ty.detach()) and torch.equal(i, ti)
    dy = _x(ty.shape, 2)
    ty.backward(dy)
    dx = ops.max_pool2d_backward(dy, i, x.shape, k, s, p, ceil, dilation=d)
    assert torch.allclose(dx, x.grad, rtol=1e-6, atol=1e-7)
    # the autograd path gives the same bits as the ops
    xs = x.detach().clone().requires_grad_()
    ys = SF.max_pool2d(xs, k, s, p, d, ceil)
    ys.backward(dy)
    assert torch.equal(ys.detach(), y) and torch.equal(xs.grad, dx)


@pytest.mark.parametrize("shape,k,s,p,ceil,cip,div", OVERRIDDEN)
def test_divisor_override_matches_pytorch(shape, k, s, p, ceil, cip, div):
    x = _x(shape, 3).requires_grad_()
    y = ops.avg_pool2d(x.detach(), k, s, p, ceil, cip, divisor_override=div)
    ty = F.avg_pool2d(x, k, s, p, ceil, cip, div)
    assert torch.allclose(y, ty.detach(), rtol=1e-6, atol=1e-6)
    dy = _x(ty.shape, 4)
    ty.backward(dy)
    dx = ops.avg_pool2d_backward(dy, x.shape, k, s, p, ceil, cip, divisor_override=div)
    assert torch.allclose(dx, x.grad, rtol=1e-6, atol=1e-6)
    xs = x.detach().clone().requires_grad_()
    ys = SF.avg_pool2d(xs, k, s, p, ceil, cip, div)
    ys.backward(dy)
    assert torch.equal(ys.detach(), y) and torch.equal(xs.grad, dx)
    # the override is one division of the canonical sum: y * div is the
    # window sum within one rounding
    plain = ops.avg_pool2d(x.detach(), k, s, p, ceil, cip, divisor_override=1)
    assert torch.allclose(y * div, plain, rtol=2e-7, atol=0)


def test_pooling_options_same_bits_at_every_setting():
    x = _x((2, 3, 17, 15), 5)
    dym = _x(ops.max_pool2d(x, 3, 1, 1, dilation=2).shape, 6)
    dya = _x(ops.avg_pool2d(x, 3, 2, 1, divisor_override=4).shape, 7)

    def run():
        y, i = ops.max_pool2d(x, 3, 1, 1, return_indices=True, dilation=2)
        return (y, i, ops.max_pool2d_backward(dym, i, x.shape, 3, 1, 1, dilation=2),
                ops.avg_pool2d(x, 3, 2, 1, divisor_override=4),
                ops.avg_pool2d_backward(dya, x.shape, 3, 2, 1, divisor_override=4))
    _same_everywhere(run)


def test_pooling_options_refused():
    x = _x((1, 1, 5, 5), 8)
    with pytest.raises(ValueError, match="divisor_override must not be zero"):
        ops.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(TypeError, match="divisor_override"):
        ops.avg_pool2d(x, 2, divisor_override=2.5)
    with pytest.raises(ValueError, match="dilation must be >= 1"):
        ops.max_pool2d(x, 2, dilation=0)
    with pytest.raises(samebits.SamebitsError, match="holds no input element"):
        ops.max_pool2d(torch.zeros(1, 1, 2, 2), 2, 1, 1, dilation=3)
    with pytest.raises(samebits.SamebitsError, match="dilated extent"):
        ops.max_pool2d(x, 3, dilation=3)
    with pytest.raises(samebits.UnsupportedModuleError, match="divisor_override=0"):
        samebits.from_torch_module(torch.nn.AvgPool2d(2, divisor_override=0))


class Pools(torch.nn.Module):
    """Both options as modules and as F calls in forward."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.dmax = torch.nn.MaxPool2d(3, stride=1, padding=1, dilation=2)
        self.oavg = torch.nn.AvgPool2d(2, divisor_override=3)
        self.fc = torch.nn.Linear(4 * 3 * 3 + 4 * 2 * 2, 3)

    def forward(self, x):
        h = self.conv(x)
        a = self.oavg(self.dmax(h))  # (N, 4, 2, 2): 7x7 -> 5x5 -> 2x2
        b = F.avg_pool2d(F.max_pool2d(h, 2, 1, 0, (2, 1)), 2, divisor_override=5, ceil_mode=True)
        return self.fc(torch.cat([a.flatten(1), b.flatten(1)], 1))


def test_pooling_option_modules_convert_and_run_strict():
    torch.manual_seed(9)
    m = Pools()
    sb = samebits.from_torch_module(m, strict=True)
    assert type(sb.dmax).__module__ == "samebits.nn" and type(sb.oavg).__module__ == "samebits.nn"
    x = torch.randn(2, 2, 7, 7, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert ("torch.nn.functional.avg_pool2d", "<root>") in report.covered
    assert ("torch.nn.functional.max_pool2d", "<root>") in report.covered
    # the gradients reach the input and the parameters, and are finite
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    assert all(p.grad is not None for p in sb.parameters())
