"""The ops the torchvision zoo needs beyond LeNet: adaptive pooling (and, as
they land, the hard activations and the pooling options), through
samebits.ops, samebits.nn.functional, module conversion and strict mode.

Values are compared with PyTorch (max pooling and the piecewise-linear
activations exactly, averages within a few ulps), and the same call is
repeated at 1/2/3/7 threads and every ISA level this machine runs, which
must not change a bit."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops, utils
from samebits.nn import functional as SF
from test_strict import _aten_ops, _computing, _run_profiled

SHAPES = [((2, 3, 7, 5), (3, 4)), ((2, 4, 10, 9), (4, 3)), ((1, 3, 5, 5), (7, 9)),
          ((2, 2, 8, 8), (2, 2)), ((3, 2, 13, 11), (5, 1)), ((2, 3, 6, 6), (None, 4)),
          ((2, 5, 3, 3), 1)]


def _isas():
    out = []
    for name in ("scalar", "sse2", "avx2", "avx512", "neon"):
        try:
            utils.set_isa(name)
            out.append(name)
        except samebits.SamebitsError:
            pass
    return out


def _every_setting(fn):
    """fn() at threads 1/2/3/7 and every ISA level; each result as bytes.
    Returns the list of results (the caller checks they are all equal)."""
    was_isa, was_threads = utils.isa(), samebits.get_num_threads()
    seen = []
    try:
        for isa in _isas():
            utils.set_isa(isa)
            for t in (1, 2, 3, 7):
                samebits.set_num_threads(t)
                seen.append(((isa, t), [np.ascontiguousarray(r).tobytes() for r in fn()]))
    finally:
        utils.set_isa(was_isa)
        samebits.set_num_threads(was_threads)
    return seen


def _same_everywhere(fn):
    seen = _every_setting(fn)
    assert len(seen) >= 4
    first = seen[0][1]
    for where, got in seen[1:]:
        assert got == first, "results differ at %s" % (where,)


@pytest.mark.parametrize("shape,out", SHAPES)
def test_adaptive_pooling_matches_pytorch(shape, out):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x[0, 0, 0, 0] = float("inf")
    ym, im = ops.adaptive_max_pool2d(x, out, return_indices=True)
    tm, ti = F.adaptive_max_pool2d(x, out, return_indices=True)
    assert torch.equal(ym, tm) and torch.equal(im, ti)
    ya, ta = ops.adaptive_avg_pool2d(x, out), F.adaptive_avg_pool2d(x, out)
    assert ya.shape == ta.shape
    fin = torch.isfinite(ta)
    assert torch.allclose(ya[fin], ta[fin], rtol=1e-6, atol=1e-6)
    assert torch.equal(torch.isinf(ya), torch.isinf(ta))
    # backward through the autograd Functions against PyTorch's
    for sb_fn, t_fn in ((SF.adaptive_max_pool2d, F.adaptive_max_pool2d),
                        (SF.adaptive_avg_pool2d, F.adaptive_avg_pool2d)):
        xs = torch.randn(*shape, requires_grad=True)
        xt = xs.detach().clone().requires_grad_()
        dy = torch.randn(*ta.shape)
        sb_fn(xs, out).backward(dy)
        t_fn(xt, out).backward(dy)
        assert torch.allclose(xs.grad, xt.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,out", SHAPES[:3])
def test_adaptive_pooling_same_bits_at_every_setting(shape, out):
    x = torch.from_numpy(samebits.random.normal(shape, 3, 4))
    dy = torch.from_numpy(samebits.random.normal(ops.adaptive_avg_pool2d(x, out).shape, 3, 5))

    def run():
        ym, im = ops.adaptive_max_pool2d(x, out, return_indices=True)
        return (ym, im, ops.adaptive_max_pool2d_backward(dy, im, x.shape),
                ops.adaptive_avg_pool2d(x, out), ops.adaptive_avg_pool2d_backward(dy, x.shape))
    _same_everywhere(run)


def test_adaptive_pooling_edges():
    x = torch.tensor([[[[1.0, float("nan"), 3.0], [float("nan"), 5.0, 6.0]]]])
    y, i = ops.adaptive_max_pool2d(x, (1, 2), return_indices=True)
    # windows are columns 0..1 and 1..2: the first NaN of each wins
    assert torch.isnan(y).all() and i.tolist() == [[[[1, 1]]]]
    empty = torch.zeros(0, 3, 4, 4)
    assert ops.adaptive_avg_pool2d(empty, 2).shape == (0, 3, 2, 2)
    with pytest.raises(samebits.SamebitsError, match="height is 0"):
        ops.adaptive_avg_pool2d(torch.zeros(1, 1, 0, 4), 2)
    with pytest.raises(ValueError, match="output_size"):
        ops.adaptive_avg_pool2d(x, (1, 2, 3))
    with pytest.raises(ValueError, match="negative"):
        ops.adaptive_max_pool2d(x, -1)
    with pytest.raises(TypeError, match="float32"):
        ops.adaptive_avg_pool2d(x.double(), 1)


class Head(torch.nn.Module):
    """A classifier head like torchvision's: modules and F calls of both
    adaptive poolings."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.avg = torch.nn.AdaptiveAvgPool2d((3, 2))
        self.max = torch.nn.AdaptiveMaxPool2d(2)
        self.fc = torch.nn.Linear(4 * 3 * 2 + 4 * 2 * 2 + 4, 3)

    def forward(self, x):
        h = self.conv(x)
        g = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return self.fc(torch.cat([self.avg(h).flatten(1), self.max(h).flatten(1), g], 1))


def test_adaptive_modules_convert_and_run_strict():
    torch.manual_seed(3)
    m = Head()
    sb = samebits.from_torch_module(m)
    assert type(sb.avg).__name__ == "AdaptiveAvgPool2d" and type(sb.avg).__module__ == "samebits.nn"
    assert type(sb.max).__module__ == "samebits.nn"
    x = torch.randn(2, 3, 9, 7, requires_grad=True)
    out, fwd, bwd = _run_profiled(sb, x, torch.tensor([0, 2]))
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []
    assert torch.allclose(out, m(x), rtol=1e-4, atol=1e-5)
    report = samebits.audit(m, x, print_report=False)
    assert not report.missing
    assert ("torch.nn.functional.adaptive_avg_pool2d", "<root>") in report.covered
