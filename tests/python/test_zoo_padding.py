"""Padding of the zoo: F.pad's constant, reflect, replicate and circular
modes, the padding modules, Conv2d's padding_mode and padding='same', through
samebits.ops, samebits.nn.functional, module conversion and strict mode.

The forward only copies, so it must equal PyTorch's exactly; the backward
sums an input's copies with the canonical sum in output order, so it is
compared with PyTorch within a few ulps and with a float64 scatter; every
call is repeated at 1/2/3/7 threads and every ISA level this machine runs,
which must not change a bit."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF
from test_strict import _strict_run_like_pytorch
from test_zoo_ops import _same_everywhere

# (x shape, (left, right, top, bottom), mode)
CASES = [((2, 3, 5, 7), (3, 2, 1, 4), "reflect"),
         ((1, 2, 4, 6), (5, 5, 3, 3), "reflect"),
         ((2, 2, 3, 4), (4, 6, 5, 2), "replicate"),
         ((2, 3, 1, 1), (2, 2, 3, 1), "replicate"),
         ((1, 2, 4, 6), (6, 5, 4, 4), "circular"),
         ((2, 3, 6, 5), (1, 1, 1, 1), "circular"),
         ((2, 2, 5, 7), (2, 1, 0, 3), "constant")]


def _x(shape, seed):
    return torch.from_numpy(samebits.random.normal(shape, 13, seed))


def _scatter64(dy, x_shape, pad, mode):
    """dx in float64: every output's gradient added to the input it copies."""
    ident = torch.arange(int(np.prod(x_shape)), dtype=torch.float64).reshape(x_shape)
    src = F.pad(ident, pad, mode).long().numpy().ravel() if mode != "constant" else \
        F.pad(ident + 1, pad, mode, 0.0).long().numpy().ravel() - 1
    dx = np.zeros(int(np.prod(x_shape)))
    d = dy.double().numpy().ravel()
    keep = src >= 0
    np.add.at(dx, src[keep], d[keep])
    return dx.reshape(x_shape)


@pytest.mark.parametrize("shape,pad,mode", CASES)
def test_pad_matches_pytorch(shape, pad, mode):
    x = _x(shape, 1).requires_grad_()
    y = ops.pad2d(x.detach(), pad, mode)
    ty = F.pad(x, pad, mode)
    assert torch.equal(y, ty.detach())
    dy = _x(ty.shape, 2)
    ty.backward(dy)
    dx = ops.pad2d_backward(dy, x.shape, pad, mode)
    assert torch.allclose(dx, x.grad, rtol=1e-6, atol=1e-6)
    assert np.allclose(dx.double().numpy(), _scatter64(dy, shape, pad, mode), rtol=1e-6,
                       atol=1e-6)
    xs = x.detach().clone().requires_grad_()
    ys = SF.pad(xs, pad, mode)
    ys.backward(dy)
    assert torch.equal(ys.detach(), y) and torch.equal(xs.grad, dx)


def test_pad_one_dim_and_constant_value():
    x = _x((2, 3, 9), 3).requires_grad_()
    for mode in ("reflect", "replicate", "circular"):
        assert torch.equal(SF.pad(x, (3, 2), mode), F.pad(x, (3, 2), mode))
    y = SF.pad(x, (1, 4), "constant", -2.5)
    assert torch.equal(y, F.pad(x, (1, 4), "constant", -2.5))
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    # a padding of the last dim only of a 4-D input, and a 5-D input
    x4 = _x((2, 2, 3, 5), 4)
    want = F.pad(x4.reshape(4, 3, 5), (2, 2), "reflect").reshape(2, 2, 3, 9)  # torch: 2-D/3-D only
    assert torch.equal(SF.pad(x4, (2, 2), "reflect"), want)
    x5 = _x((2, 2, 2, 3, 5), 5)
    assert torch.equal(SF.pad(x5, (1, 2, 2, 1)), F.pad(x5, (1, 2, 2, 1)))


def test_pad_same_bits_at_every_setting():
    x = _x((3, 5, 17, 13), 6)
    dys = {m: _x(ops.pad2d(x, (4, 3, 2, 5), m).shape, 7) for m in ("reflect", "replicate",
                                                                  "circular", "constant")}

    def run():
        out = []
        for mode, dy in dys.items():
            out += [ops.pad2d(x, (4, 3, 2, 5), mode),
                    ops.pad2d_backward(dy, x.shape, (4, 3, 2, 5), mode)]
        return out
    _same_everywhere(run)


def test_pad_refused():
    x = _x((1, 1, 3, 3), 8)
    with pytest.raises(samebits.SamebitsError, match="less than the input"):
        ops.pad2d(x, (3, 0, 0, 0), "reflect")
    with pytest.raises(samebits.SamebitsError, match="at most the input"):
        ops.pad2d(x, (4, 0, 0, 0), "circular")
    with pytest.raises(NotImplementedError, match="negative padding"):
        SF.pad(x, (-1, 0))
    with pytest.raises(NotImplementedError, match="last one or two dims"):
        SF.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="doesn't take in value"):
        SF.pad(x, (1, 1), "reflect", 2.0)
    with pytest.raises(ValueError, match="mode must be one of"):
        SF.pad(x, (1, 1), "symmetric")
    with pytest.raises(ValueError, match="stride 1"):
        SF.conv2d(x, torch.zeros(1, 1, 2, 2), stride=2, padding="same")


@pytest.mark.parametrize("kernel,dilation", [(3, 1), (4, 1), ((2, 5), (3, 1)), (3, 2)])
def test_conv_padding_same(kernel, dilation):
    torch.manual_seed(4)
    m = torch.nn.Conv2d(3, 4, kernel, padding="same", dilation=dilation)
    x = torch.randn(2, 3, 9, 8, requires_grad=True)
    sb = samebits.from_torch_module(m)
    y = sb(x)
    assert y.shape == m(x).shape == (2, 4, 9, 8)
    assert torch.allclose(y, m(x), rtol=1e-5, atol=1e-5)
    y.sum().backward()
    assert x.grad.shape == x.shape and torch.isfinite(x.grad).all()
    # the asymmetric case: explicit zeros then the symmetric rest, the same
    # bits as padding the whole way explicitly (zero taps are +0 terms)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    th, tw = dh * (kh - 1), dw * (kw - 1)
    xp = SF.pad(x.detach(), (tw // 2, tw - tw // 2, th // 2, th - th // 2))
    z = SF.conv2d(xp, sb.weight.detach(), sb.bias.detach(), dilation=dilation)
    assert torch.equal(z, y.detach())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes(mode):
    torch.manual_seed(5)
    m = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode)
    x = torch.randn(2, 2, 6, 7, requires_grad=True)
    sb = samebits.from_torch_module(m)
    y = sb(x)
    assert torch.allclose(y, m(x), rtol=1e-5, atol=1e-5)
    y.sum().backward()
    xs = x.detach().clone().requires_grad_()
    m(xs).sum().backward()
    assert torch.allclose(x.grad, xs.grad, rtol=1e-4, atol=1e-5)


class Padded(torch.nn.Module):
    """The padding modules, a reflect-padded 'same' conv and F.pad in forward."""

    def __init__(self):
        super().__init__()
        self.refl = torch.nn.ReflectionPad2d((1, 2, 2, 1))
        self.repl = torch.nn.ReplicationPad2d(1)
        self.zero = torch.nn.ZeroPad2d((0, 1, 1, 0))
        self.const = torch.nn.ConstantPad2d(1, 0.5)
        self.conv = torch.nn.Conv2d(2, 3, 4, padding="same", padding_mode="reflect")
        self.line = torch.nn.ReflectionPad1d(2)
        self.fc = torch.nn.Linear(3 * 12 * 12 + 2 * 14, 3)

    def forward(self, x):  # x (N, 2, 6, 6)
        h = self.const(self.zero(self.repl(self.refl(x))))  # 9x9 -> 11x11 -> 12x12 -> 14x14
        h = self.conv(F.pad(h, (0, 0, 0, 0))[:, :, 1:-1, 1:-1])  # 12x12
        r = self.line(x[:, :, 0, :])  # (N, 2, 10)
        r = F.pad(r, (1, 3), mode="replicate")  # (N, 2, 14)
        return self.fc(torch.cat([h.flatten(1), r.flatten(1)], 1))


def test_padding_modules_convert_and_run_strict():
    torch.manual_seed(6)
    m = Padded()
    sb = samebits.from_torch_module(m, strict=True)
    for name in ("refl", "repl", "zero", "const", "line", "conv"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn", name
    x = torch.randn(2, 2, 6, 6, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert ("torch.nn.functional.pad", "<root>") in report.covered
    assert x.grad is not None and torch.isfinite(x.grad).all()
