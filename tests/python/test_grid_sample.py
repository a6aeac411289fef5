"""Grid sampling (contract section 8, "Grid sampling"): F.grid_sample and
F.affine_grid through samebits.ops, samebits.nn.functional and strict mode.

The forward is PyTorch's CPU formula without fused multiply-adds, so it is
compared with PyTorch within a few ulps; the backward gathers dx and sums
dgrid over channels with the canonical sum, compared with PyTorch and
float64; every call is repeated at 1/2/3/7 threads and every ISA level,
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

SETTINGS = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
            for a in (False, True)]


def _x(shape, seed, scale=1.0):
    return torch.from_numpy(samebits.random.normal(shape, 17, seed) * np.float32(scale))


def _grid(shape, seed, spread):
    return torch.from_numpy(samebits.random.uniform(shape, 19, seed, -spread, spread))


@pytest.mark.parametrize("mode,padding,align", SETTINGS)
def test_close_to_pytorch_forward_and_backward(mode, padding, align):
    x = _x((2, 3, 7, 6), 1).requires_grad_()
    grid = _grid((2, 5, 4, 2), 2, 1.6 if padding != "reflection" else 3.5).requires_grad_()
    y = SF.grid_sample(x, grid, mode, padding, align)
    xt, gt = x.detach().clone().requires_grad_(), grid.detach().clone().requires_grad_()
    t = F.grid_sample(xt, gt, mode, padding, align)
    assert torch.allclose(y, t, rtol=1e-5, atol=1e-5)
    if mode == "nearest":
        assert torch.equal(y, t)  # a copy of the same element
    dy = _x(tuple(y.shape), 3)
    y.backward(dy)
    t.backward(dy)
    assert torch.allclose(x.grad, xt.grad, rtol=1e-5, atol=1e-5)
    # dgrid jumps where a corner crosses the border; compare away from it
    assert torch.allclose(grid.grad, gt.grad, rtol=1e-4, atol=1e-4)
    x64, g64 = x.detach().double().requires_grad_(), grid.detach().double()
    F.grid_sample(x64, g64, mode, padding, align).backward(dy.double())
    assert np.allclose(x.grad.numpy(), x64.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,padding,align", SETTINGS[::3])
def test_bits_do_not_depend_on_threads_or_isa(mode, padding, align):
    x, grid = _x((2, 4, 9, 8), 4), _grid((2, 11, 12, 2), 5, 1.3)

    def run():
        xs, gs = x.clone().requires_grad_(), grid.clone().requires_grad_()
        y = SF.grid_sample(xs, gs, mode, padding, align)
        y.backward(_x(tuple(y.shape), 6))
        return [y.detach().numpy(), xs.grad.numpy(), gs.grad.numpy()]

    _same_everywhere(run)


def test_ops_match_functional():
    x, grid = _x((1, 2, 5, 5), 7), _grid((1, 3, 3, 2), 8, 1.0)
    y = ops.grid_sample(x, grid, "bilinear", "border", True)
    assert torch.equal(y, SF.grid_sample(x, grid, "bilinear", "border", True))
    dx, dgrid = ops.grid_sample_backward(torch.ones_like(y), x, grid, "bilinear", "border", True)
    assert dx.shape == x.shape and dgrid.shape == grid.shape


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_close_to_pytorch(align):
    theta = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.05]],
                          [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], requires_grad=True)
    g = SF.affine_grid(theta, (2, 3, 5, 7), align)
    tt = theta.detach().clone().requires_grad_()
    t = F.affine_grid(tt, (2, 3, 5, 7), align)
    assert torch.allclose(g, t, rtol=1e-6, atol=1e-6)
    dg = _x(tuple(g.shape), 9)
    g.backward(dg)
    t.backward(dg)
    assert torch.allclose(theta.grad, tt.grad, rtol=1e-5, atol=1e-5)


def test_refusals_name_the_problem():
    x, grid = _x((1, 2, 4, 4), 10), _grid((1, 3, 3, 2), 11, 1.0)
    with pytest.raises(NotImplementedError, match="mode 'bicubic'"):
        SF.grid_sample(x, grid, "bicubic")
    with pytest.raises(NotImplementedError, match="only 4-D input"):
        SF.grid_sample(x[None], grid)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        SF.grid_sample(x, grid, padding_mode="wrap")
    with pytest.raises(NotImplementedError, match="4-D"):
        SF.affine_grid(torch.zeros(1, 3, 4), (1, 1, 2, 2, 2))


class SpatialTransformer(torch.nn.Module):
    """A localisation net predicts theta; the image is resampled through
    affine_grid and grid_sample, then classified."""

    def __init__(self):
        super().__init__()
        self.loc = torch.nn.Linear(2 * 8 * 8, 6)
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.head = torch.nn.Linear(3 * 6 * 6, 3)
        with torch.no_grad():
            self.loc.weight.mul_(0.05)
            self.loc.bias.copy_(torch.tensor([1.0, 0.1, 0.0, -0.1, 0.9, 0.05]))

    def forward(self, x):  # x (N, 2, 8, 8)
        theta = self.loc(x.flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, (x.shape[0], 2, 6, 6), align_corners=False)
        h = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        return self.head(torch.relu(self.conv(h)).flatten(1))


def test_spatial_transformer_runs_strict():
    samebits.manual_seed(0)
    torch.manual_seed(12)
    m = SpatialTransformer()
    sb = samebits.from_torch_module(m, strict=True)
    x = torch.randn(2, 2, 8, 8, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert ("torch.nn.functional.grid_sample", "<root>") in report.covered
    assert ("torch.nn.functional.affine_grid", "<root>") in report.covered
    assert x.grad is not None and torch.isfinite(x.grad).all()
