"""Interpolation (contract section 8, "Interpolation"): F.interpolate's
modes through samebits.ops, samebits.nn.functional, the Upsample modules
and strict mode.

The forward follows PyTorch's CPU formula without fused multiply-adds: the
nearest modes (an index and a copy) equal PyTorch's bits on any build; the
others equal PyTorch 2.x's under ATEN_CPU_CAPABILITY=default (its
vectorised builds contract to FMA), checked in a child process. The
backward gathers with the canonical sum, so it is compared with PyTorch
within a few ulps and with float64; every call is repeated at 1/2/3/7
threads and every ISA level, which must not change a bit."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits.nn import functional as SF
from test_strict import _strict_run_like_pytorch
from test_zoo_ops import _same_everywhere

# (mode, input shape, size or scale_factor keywords)
CASES = [("nearest", (2, 3, 7), dict(size=13)),
         ("nearest", (2, 3, 5, 6), dict(scale_factor=2.3)),
         ("nearest", (1, 2, 3, 4, 5), dict(scale_factor=(2.0, 0.6, 1.5))),
         ("nearest-exact", (2, 3, 9, 7), dict(size=(4, 11))),
         ("nearest-exact", (2, 2, 4, 3, 5), dict(scale_factor=1.7)),
         ("linear", (2, 3, 9), dict(size=20)),
         ("linear", (2, 3, 9), dict(scale_factor=0.45)),
         ("bilinear", (2, 3, 5, 6), dict(size=(11, 9))),
         ("bilinear", (1, 2, 40, 30), dict(size=(70, 65))),
         ("bilinear", (2, 3, 8, 7), dict(scale_factor=(2.5, 0.5))),
         ("bicubic", (2, 3, 6, 5), dict(size=(13, 12))),
         ("bicubic", (2, 2, 9, 8), dict(scale_factor=2.3)),
         ("trilinear", (1, 2, 3, 4, 5), dict(size=(7, 6, 9))),
         ("trilinear", (1, 2, 4, 3, 5), dict(scale_factor=2.5, recompute_scale_factor=True))]
INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def _aligns(mode):
    return (None, False, True) if mode in INTERPOLATING else (None,)


def _x(shape, seed):
    return torch.from_numpy(samebits.random.normal(shape, 11, seed))


@pytest.mark.parametrize("mode,shape,kw", CASES)
def test_forward_close_to_pytorch_and_nearest_exact(mode, shape, kw):
    x = _x(shape, 1)
    for align in _aligns(mode):
        y, t = SF.interpolate(x, mode=mode, align_corners=align, **kw), \
            F.interpolate(x, mode=mode, align_corners=align, **kw)
        assert y.shape == t.shape
        if mode.startswith("nearest"):
            assert torch.equal(y, t)  # an index and a copy: PyTorch's bits
        else:
            assert torch.allclose(y, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,shape,kw", CASES)
def test_backward_close_to_pytorch_and_float64(mode, shape, kw):
    for align in _aligns(mode):
        x = _x(shape, 2).requires_grad_()
        xt = x.detach().clone().requires_grad_()
        x64 = x.detach().double().requires_grad_()
        y = SF.interpolate(x, mode=mode, align_corners=align, **kw)
        dy = _x(tuple(y.shape), 3)
        y.backward(dy)
        F.interpolate(xt, mode=mode, align_corners=align, **kw).backward(dy)
        F.interpolate(x64, mode=mode, align_corners=align, **kw).backward(dy.double())
        assert torch.allclose(x.grad, xt.grad, rtol=1e-5, atol=1e-5)
        # float64 weights differ from float32 ones by an ulp of the source index
        assert np.allclose(x.grad.numpy(), x64.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,shape,kw", CASES[::2])
def test_bits_do_not_depend_on_threads_or_isa(mode, shape, kw):
    x = _x(shape, 4)
    align = True if mode in INTERPOLATING else None

    def run():
        xs = x.clone().requires_grad_()
        y = SF.interpolate(xs, mode=mode, align_corners=align, **kw)
        y.backward(_x(tuple(y.shape), 5))
        return [y.detach().numpy(), xs.grad.numpy()]

    _same_everywhere(run)


_CHILD = textwrap.dedent("""
    import sys, torch, numpy as np
    import torch.nn.functional as F
    from samebits.nn import functional as SF
    cases = %r
    bad = []
    for mode, shape, kw in cases:
        aligns = (False, True) if mode in ("linear", "bilinear", "bicubic", "trilinear") else (None,)
        for align in aligns:
            g = torch.Generator().manual_seed(len(bad) + 1)
            x = torch.randn(shape, generator=g)
            y = SF.interpolate(x, mode=mode, align_corners=align, **kw)
            t = F.interpolate(x, mode=mode, align_corners=align, **kw)
            if not torch.equal(y.view(torch.int32), t.view(torch.int32)):
                bad.append((mode, shape, kw, align))
    print(torch.__version__, bad)
    sys.exit(1 if bad else 0)
""")


def test_forward_bits_equal_pytorch_2_without_fma():
    """PyTorch 2.x's default-capability kernels (no contraction) compute the
    contract's formula: the same bits for every mode but small bilinear
    outputs, whose vectorised kernel sums weight products instead."""
    if int(torch.__version__.split(".")[0]) < 2:
        pytest.skip("PyTorch 1.13 computes the linear source index in float64")
    cases = [c for c in CASES if not (c[0] == "bilinear" and c[1][2] < 40)]
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(samebits.__file__)))
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default",
               PYTHONPATH=os.pathsep.join([pkg] + sys.path))
    r = subprocess.run([sys.executable, "-c", _CHILD % (cases,)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_modules_convert_and_keep_their_settings():
    for m in (torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
              torch.nn.Upsample(size=(5, 7), mode="nearest"),
              torch.nn.UpsamplingNearest2d(scale_factor=3),
              torch.nn.UpsamplingBilinear2d(size=9)):
        sb = samebits.from_torch_module(m, strict=False)
        assert type(sb).__module__ == "samebits.nn" and type(sb).__name__ == type(m).__name__
        x = _x((2, 3, 4, 5), 6)
        assert torch.allclose(sb(x), m(x), rtol=1e-6, atol=1e-6)


def test_refusals_name_the_problem():
    x = _x((1, 2, 4, 4), 7)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        SF.interpolate(x, size=8, mode="nearest", align_corners=True)
    with pytest.raises(NotImplementedError, match="antialias"):
        SF.interpolate(x, size=8, mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="mode 'bilinear' takes 4-D"):
        SF.interpolate(x[0], size=8, mode="bilinear")
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        SF.interpolate(x, size=8, scale_factor=2)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful"):
        SF.interpolate(x, size=8, recompute_scale_factor=True)
    with pytest.raises(NotImplementedError, match="mode 'area' takes 3-D or 4-D"):
        SF.interpolate(x[None], size=2, mode="area")


class TinyUNet(torch.nn.Module):
    """Encoder-decoder with skip connections: every upsampling mode a
    segmentation or FPN head uses."""

    def __init__(self):
        super().__init__()
        self.enc1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.enc2 = torch.nn.Conv2d(4, 6, 3, padding=1)
        self.up = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec = torch.nn.Conv2d(10, 4, 3, padding=1)
        self.up2 = torch.nn.UpsamplingNearest2d(scale_factor=2)
        self.head = torch.nn.Linear(4 * 6 * 6 + 4 * 4 * 4, 3)

    def forward(self, x):  # x (N, 2, 12, 12)
        e1 = torch.relu(self.enc1(x))                       # 12x12
        e2 = torch.relu(self.enc2(F.max_pool2d(e1, 2)))     # 6x6
        d = torch.cat([self.up(e2), e1], 1)                 # 12x12
        d = torch.relu(self.dec(d))
        d = F.interpolate(d, size=(6, 6), mode="bicubic", align_corners=True)
        p = F.interpolate(self.up2(F.max_pool2d(d, 2)), scale_factor=0.75, mode="nearest-exact")
        return self.head(torch.cat([d.flatten(1), p.flatten(1)], 1))


def test_unet_converts_and_runs_strict():
    samebits.manual_seed(0)
    torch.manual_seed(8)
    m = TinyUNet()
    sb = samebits.from_torch_module(m, strict=True)
    assert type(sb.up).__module__ == "samebits.nn" and type(sb.up2).__module__ == "samebits.nn"
    x = torch.randn(2, 2, 12, 12, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert ("torch.nn.functional.interpolate", "<root>") in report.covered
    assert x.grad is not None and torch.isfinite(x.grad).all()
