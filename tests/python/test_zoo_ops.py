"""The ops the torchvision zoo needs beyond LeNet: adaptive pooling (and, as
they land, the hard activations and the pooling options), through
samebits.ops, samebits.nn.functional, module conversion and strict mode.

Values are compared with PyTorch (max pooling and the piecewise-linear
activations exactly, averages within a few ulps), and the same call is
repeated at 1/2/3/7 threads and every ISA level this machine runs, which
must not change a bit."""
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops, utils
from samebits.nn import functional as SF
from test_strict import _aten_ops, _computing, _run_profiled, _strict_run_like_pytorch

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
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert ("torch.nn.functional.adaptive_avg_pool2d", "<root>") in report.covered


# ---- the hard activations ----------------------------------------------------

HARD = [("relu6", lambda v, **k: SF.relu6(v, **k), lambda v, **k: F.relu6(v, **k)),
        ("hardtanh", lambda v, **k: SF.hardtanh(v, -2.0, 1.5, **k),
         lambda v, **k: F.hardtanh(v, -2.0, 1.5, **k)),
        ("hardsigmoid", SF.hardsigmoid, F.hardsigmoid),
        ("hardswish", SF.hardswish, F.hardswish)]


def _hard_input():
    torch.manual_seed(5)
    # the kinks, signed zeros and non-finite values first (PyTorch's
    # vectorised loop: its scalar tail treats NaN and x = 3 differently)
    special = torch.tensor([-4.0, -3.0, -0.0, 0.0, 3.0, 4.0, 6.0, float("nan"), -2.0, 1.5,
                            float("inf"), -float("inf"), 5.9999995, -2.9999998, 2.9999998, 6.0000005])
    return torch.cat([special, torch.randn(4096) * 4])


def _bits_equal(a, b):
    same = (a.view(torch.int32) == b.view(torch.int32)) | (a.isnan() & b.isnan())
    return bool(same.all())


@pytest.mark.parametrize("name,sb_fn,t_fn", HARD, ids=[h[0] for h in HARD])
def test_hard_activations_match_pytorch_bit_for_bit(name, sb_fn, t_fn):
    x = _hard_input()
    xs, xt = x.clone().requires_grad_(), x.clone().requires_grad_()
    ys, yt = sb_fn(xs), t_fn(xt)
    dy = torch.randn(x.shape)
    ys.backward(dy)
    yt.backward(dy)
    assert _bits_equal(ys.detach(), yt.detach())
    expect = xt.grad
    if name == "hardswish":
        # PyTorch after 1.13 (2.14 gives +0) changed the gradient at the kink
        # x = -3; the contract keeps 1.13's -0.5 dy there (docs/CONTRACT.md)
        at = x == -3.0
        assert bool(at.any())
        expect = torch.where(at, dy * -0.5, expect)
    assert _bits_equal(xs.grad, expect)


@pytest.mark.parametrize("name,sb_fn,t_fn", HARD, ids=[h[0] for h in HARD])
def test_hard_activations_inplace_is_honoured(name, sb_fn, t_fn):
    x = _hard_input()
    a = torch.randn(x.shape, requires_grad=True)
    b = a.detach().clone().requires_grad_()
    hs = a * 1.0  # not a leaf: in-place is allowed on it
    ht = b * 1.0
    out_s, out_t = sb_fn(hs, inplace=True), t_fn(ht, inplace=True)
    assert out_s is hs and _bits_equal(hs.detach(), ht.detach())
    dy = torch.randn(x.shape)
    out_s.backward(dy)
    out_t.backward(dy)
    assert _bits_equal(a.grad, b.grad)
    with pytest.raises(RuntimeError):  # PyTorch's rule for leaves, kept
        sb_fn(torch.randn(3, requires_grad=True), inplace=True)


def test_hard_activations_same_bits_at_every_setting():
    x, dy = _hard_input(), torch.randn(4112)

    def run():
        return [ops.relu6(x), ops.hardtanh(x, -2.0, 1.5), ops.hardtanh_backward(x, dy, 0.0, 6.0),
                ops.hardsigmoid(x), ops.hardsigmoid_backward(x, dy), ops.hardswish(x),
                ops.hardswish_backward(x, dy)]
    _same_everywhere(run)


def test_hardtanh_arguments_are_checked():
    with pytest.raises(ValueError, match="min_val"):
        ops.hardtanh(torch.zeros(3), 1.0, -1.0)
    with pytest.raises(samebits.SamebitsError, match="NaN"):
        ops.hardtanh(torch.zeros(3), float("nan"), 1.0)


class MobileBlock(torch.nn.Module):
    """The activations as modules (in-place, as torchvision builds them) and
    as F calls in forward code."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.r6 = torch.nn.ReLU6(inplace=True)
        self.hs = torch.nn.Hardswish(inplace=True)
        self.hsig = torch.nn.Hardsigmoid()
        self.ht = torch.nn.Hardtanh(-0.5, 0.5)
        self.fc = torch.nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        h = self.hs(self.r6(self.conv(x)))
        h = self.ht(h) + self.hsig(h) * F.hardswish(h) + F.relu6(h) + F.hardtanh(h, -1.0, 2.0)
        h = F.hardsigmoid(h, inplace=True)
        return self.fc(h.flatten(1))


def test_hard_activation_modules_convert_and_run_strict():
    torch.manual_seed(4)
    m = MobileBlock()
    sb = samebits.from_torch_module(m)
    for name in ("r6", "hs", "hsig", "ht"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn"
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    covered = {op for op, _ in report.covered}
    assert {"torch.nn.functional.relu6", "torch.nn.functional.hardtanh",
            "torch.nn.functional.hardswish", "torch.nn.functional.hardsigmoid"} <= covered


# ---- group norm and instance norm ----------------------------------------------

GN = [((2, 6, 5, 5), 3), ((3, 4, 7), 4), ((2, 8), 2), ((1, 4, 3, 3), 1), ((2, 32, 4, 4), 8)]


@pytest.mark.parametrize("shape,groups", GN)
def test_group_norm_matches_pytorch(shape, groups):
    torch.manual_seed(5)
    c = shape[1]
    x = (torch.randn(*shape) * 3 + 1).requires_grad_()
    w, b = torch.randn(c).requires_grad_(), torch.randn(c).requires_grad_()
    xt, wt, bt = (v.detach().clone().requires_grad_() for v in (x, w, b))
    dy = torch.randn(*shape)
    y = SF.group_norm(x, groups, w, b, 1e-5)
    yt = F.group_norm(xt, groups, wt, bt, 1e-5)
    y.backward(dy)
    yt.backward(dy)
    # float32 statistics in another order: a few ulps of the output's scale
    for got, want in ((y, yt), (x.grad, xt.grad), (w.grad, wt.grad), (b.grad, bt.grad)):
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    # samebits.ops gives the autograd Function's forward bits
    assert _bits_equal(ops.group_norm(x.detach(), groups, w.detach(), b.detach()), y.detach())
    assert not torch.equal(y, SF.group_norm(x, 1 if groups > 1 else c, w, b)), \
        "the grouping must change the result"


def test_group_norm_same_bits_at_every_setting():
    torch.manual_seed(6)
    x, w, b = torch.randn(3, 8, 12, 12) * 5, torch.randn(8), torch.randn(8)
    dy = torch.randn(3, 8, 12, 12)

    def run():
        xs, ws, bs = (v.clone().requires_grad_() for v in (x, w, b))
        y = SF.group_norm(xs, 4, ws, bs, 1e-5)
        y.backward(dy)
        return [y.detach().numpy(), xs.grad.numpy(), ws.grad.numpy(), bs.grad.numpy()]
    _same_everywhere(run)


@pytest.mark.parametrize("norm", [
    lambda x, w, b: SF.group_norm(x, 4, w, b, 1e-5),
    lambda x, w, b: SF.layer_norm(x, (12, 12), None if w is None else w.repeat(18)[:144].view(12, 12),
                                  None if b is None else b.repeat(18)[:144].view(12, 12))])
@pytest.mark.parametrize("affine", [True, False])
def test_row_norms_without_autograd_give_the_autograd_bits(norm, affine):
    """Where no backward can follow (no_grad, or no input requiring grad)
    layer and group norm run their forward without an autograd node and
    without keeping statistics: the same bits, no grad_fn; with an input
    that requires grad, a grad_fn."""
    torch.manual_seed(8)
    x = torch.randn(3, 8, 12, 12) * 5
    w, b = (torch.randn(8), torch.randn(8)) if affine else (None, None)
    xg = x.clone().requires_grad_()
    with_grad = norm(xg, w, b)
    assert with_grad.grad_fn is not None
    plain = norm(x, w, b)
    with torch.no_grad():
        no_grad = norm(xg, w, b)
    assert plain.grad_fn is None and no_grad.grad_fn is None
    assert _bits_equal(plain, with_grad.detach()) and _bits_equal(no_grad, with_grad.detach())
    if affine:
        wg = w.clone().requires_grad_()
        assert norm(x, wg, b).grad_fn is not None


def test_instance_norm_is_group_norm_per_channel():
    torch.manual_seed(7)
    x, w, b = torch.randn(2, 5, 6, 4), torch.randn(5), torch.randn(5)
    assert _bits_equal(SF.instance_norm(x, weight=w, bias=b), SF.group_norm(x, 5, w, b))
    assert torch.allclose(SF.instance_norm(x, weight=w, bias=b),
                          F.instance_norm(x, weight=w, bias=b), rtol=1e-5, atol=1e-5)
    # with running statistics (updated in place) the output is still group norm's
    rm, rv = torch.zeros(5), torch.ones(5)
    assert _bits_equal(SF.instance_norm(x, rm, rv, w, b), SF.group_norm(x, 5, w, b))
    assert not torch.equal(rm, torch.zeros(5))


def test_group_norm_arguments_are_checked():
    x = torch.randn(2, 6, 3)
    with pytest.raises(ValueError, match="num_groups=4"):
        SF.group_norm(x, 4)
    with pytest.raises(ValueError, match="num_groups=0"):
        ops.group_norm(x, 0)
    with pytest.raises(TypeError, match="float64"):
        SF.group_norm(x.double(), 2)
    with pytest.raises(samebits.SamebitsError, match="gamma must have shape"):
        SF.group_norm(x, 2, torch.ones(5))


class NormBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.gn = torch.nn.GroupNorm(4, 8)
        self.inorm = torch.nn.InstanceNorm2d(8, affine=True)
        self.inorm_plain = torch.nn.InstanceNorm2d(8)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.inorm(self.gn(self.conv(x)))
        h = F.group_norm(h, 2) + F.instance_norm(self.inorm_plain(h))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def test_norm_modules_convert_and_run_strict():
    torch.manual_seed(8)
    m = NormBlock()
    sb = samebits.from_torch_module(NormBlock())
    sb.load_state_dict(m.state_dict())
    for name in ("gn", "inorm", "inorm_plain"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn"
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    covered = {op for op, _ in report.covered}
    assert {"torch.nn.functional.group_norm", "torch.nn.functional.instance_norm"} <= covered
    # unbatched input, as PyTorch's InstanceNorm accepts
    one = samebits.from_torch_module(torch.nn.InstanceNorm1d(3))
    assert _bits_equal(one(torch.ones(3, 5) * torch.arange(5.0)),
                       SF.group_norm((torch.ones(3, 5) * torch.arange(5.0))[None], 3)[0])


@pytest.mark.parametrize("kind", ["1d", "2d"])
def test_instance_norm_running_stats_follow_pytorch(kind):
    """track_running_stats=True: training updates the running statistics as
    PyTorch does (batch norm of the (1, N*C, ...) view, then the mean over
    N), evaluation normalises with them; momentum=None counts as 0."""
    torch.manual_seed(4)
    cls, shape = ((torch.nn.InstanceNorm1d, (3, 4, 9)) if kind == "1d"
                  else (torch.nn.InstanceNorm2d, (3, 4, 5, 6)))
    # momentum=None counts as 0 from PyTorch 2.x on (1.13 raises a TypeError)
    for momentum in (0.1, 0.5) + ((None,) if int(torch.__version__.split(".")[0]) >= 2 else ()):
        m = torch.nn.Sequential(torch.nn.Conv1d(4, 4, 1) if kind == "1d" else
                                torch.nn.Conv2d(4, 4, 1),
                                cls(4, affine=True, track_running_stats=True, momentum=momentum),
                                torch.nn.Flatten(), torch.nn.Linear(4 * int(np.prod(shape[2:])), 3))
        sb = samebits.from_torch_module(copy.deepcopy(m))
        assert type(sb[1]).__module__ == "samebits.nn"
        for step in range(3):
            x = torch.randn(*shape) * (step + 1) + step
            want = m(x)
            got = sb(x)
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
            for buf in ("running_mean", "running_var"):
                assert torch.allclose(getattr(sb[1], buf), getattr(m[1], buf), rtol=1e-5,
                                      atol=1e-6), (momentum, step, buf)
        x = torch.randn(2, *shape[1:], requires_grad=True)
        _strict_run_like_pytorch(sb, m, x)  # training: the update runs no PyTorch kernel
        m.eval()
        sb.eval()
        sb.zero_grad(set_to_none=True)
        x.grad = None
        out, report = _strict_run_like_pytorch(sb, m, x)
        assert "torch.nn.functional.instance_norm" in {op for op, _ in report.covered} or \
            any("InstanceNorm" in op for op, _ in report.covered)


def test_instance_norm_running_stats_bits_do_not_depend_on_threads():
    torch.manual_seed(5)
    x = torch.randn(7, 6, 11, 13)
    got = []
    old = samebits.get_num_threads()
    try:
        for t in (1, 3):
            samebits.set_num_threads(t)
            rm, rv = torch.zeros(6), torch.ones(6)
            y = SF.instance_norm(x, rm, rv, None, None, True, 0.3, 1e-5)
            got.append((y, rm.clone(), rv.clone()))
    finally:
        samebits.set_num_threads(old)
    for a, b in zip(*got):
        assert _bits_equal(a, b)
    with pytest.raises(ValueError, match="running_mean and running_var"):
        SF.instance_norm(x, torch.zeros(6), None)
    with pytest.raises(ValueError, match="use_input_stats=False"):
        SF.instance_norm(x, use_input_stats=False)


# ---- SiLU, LeakyReLU, Softplus ---------------------------------------------------

SMOOTH = [("silu", lambda v: SF.silu(v), lambda v: F.silu(v)),
          ("leaky_relu", lambda v: SF.leaky_relu(v, 0.2), lambda v: F.leaky_relu(v, 0.2)),
          ("softplus", lambda v: SF.softplus(v, 2.0, 5.0), lambda v: F.softplus(v, 2.0, 5.0))]


@pytest.mark.parametrize("name,sb_fn,t_fn", SMOOTH, ids=[h[0] for h in SMOOTH])
def test_smooth_activations_match_pytorch(name, sb_fn, t_fn):
    x = _hard_input()[:-4096 + 512]
    x = x[torch.isfinite(x)].clone().requires_grad_()
    xt = x.detach().clone().requires_grad_()
    y, yt = sb_fn(x), t_fn(xt)
    dy = torch.randn(y.shape)
    y.backward(dy)
    yt.backward(dy)
    if name == "leaky_relu":  # one multiplication: PyTorch's bits exactly
        assert _bits_equal(y.detach(), yt.detach()) and _bits_equal(x.grad, xt.grad)
    else:  # PyTorch's exp/log1p are not correctly rounded: a few ulps
        assert torch.allclose(y, yt, rtol=1e-6, atol=1e-7)
        assert torch.allclose(x.grad, xt.grad, rtol=1e-5, atol=1e-6)


def test_smooth_activations_same_bits_at_every_setting():
    x, dy = torch.randn(50000) * 8, torch.randn(50000)

    def run():
        out = []
        for _, sb_fn, _ in SMOOTH:
            xs = x.clone().requires_grad_()
            y = sb_fn(xs)
            y.backward(dy)
            out += [y.detach().numpy(), xs.grad.numpy()]
        return out
    _same_everywhere(run)


def test_silu_and_leaky_relu_inplace_is_honoured():
    x = torch.randn(64)
    for sb_fn in (lambda v: SF.silu(v, inplace=True),
                  lambda v: SF.leaky_relu(v, 0.1, inplace=True)):
        v = x.clone()
        out = sb_fn(v)
        assert out is v and not torch.equal(v, x)
    assert _bits_equal(SF.silu(x.clone(), inplace=True), ops.silu(x))
    with pytest.raises(TypeError, match="negative_slope"):
        SF.leaky_relu(x, "a")
    with pytest.raises(samebits.SamebitsError, match="beta"):
        SF.softplus(x, 0.0)


class SmoothBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3)
        self.silu, self.leaky, self.soft = torch.nn.SiLU(), torch.nn.LeakyReLU(0.1), \
            torch.nn.Softplus(beta=2.0)
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x):
        h = self.soft(self.leaky(self.silu(self.conv(x))))
        h = F.silu(h) + F.leaky_relu(h, 0.3) + F.softplus(h)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def test_smooth_activation_modules_convert_and_run_strict():
    torch.manual_seed(9)
    m = SmoothBlock()
    sb = samebits.from_torch_module(SmoothBlock())
    sb.load_state_dict(m.state_dict())
    for name in ("silu", "leaky", "soft"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn"
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    covered = {op for op, _ in report.covered}
    assert {"torch.nn.functional.silu", "torch.nn.functional.leaky_relu",
            "torch.nn.functional.softplus"} <= covered


# ---- Bernoulli draws and stochastic depth -----------------------------------------

class DepthBlock(torch.nn.Module):
    """A residual branch dropped per sample (torchvision's StochasticDepth
    draws with empty(...).bernoulli_(survival), then div_ and a multiply)."""

    def __init__(self, p=0.5):
        super().__init__()
        from torchvision.ops import StochasticDepth
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.sd = StochasticDepth(p, "row")
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x):
        h = x + self.sd(self.conv(x))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def _sb_depth(p=0.5):
    samebits.manual_seed(11)
    torch.manual_seed(11)
    return samebits.from_torch_module(DepthBlock(p)).train()


def test_stochastic_depth_runs_strict_with_philox_draws():
    pytest.importorskip("torchvision")
    sb = _sb_depth()
    x = torch.randn(6, 3, 5, 5, requires_grad=True)
    out, fwd, bwd = _run_profiled(sb, x, torch.tensor([0, 1, 0, 1, 0, 1]))
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []
    # the draw is dropout's keep mask of the module's own stream, offset 0
    seed, stream, offset = sb.sd._samebits_draws
    assert (seed, stream, offset) == (11, samebits.random.bernoulli_stream("sd"), 6)
    keep = samebits.random.bernoulli((6, 1, 1, 1), 0.5, 11, stream, 0).reshape(6)
    with torch.no_grad():
        branch = sb.conv(x)
    h = x.detach() + branch * torch.from_numpy(keep).reshape(6, 1, 1, 1) / 0.5
    want = sb.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))
    assert 0 < keep.sum() < 6
    assert torch.allclose(out, want, rtol=1e-5, atol=1e-6)
    report = samebits.audit(DepthBlock().train(), x, print_report=False)
    assert not report.missing
    assert ("Tensor.bernoulli_", "sd") in report.covered


def test_stochastic_depth_draws_do_not_depend_on_batch_split_or_threads():
    pytest.importorskip("torchvision")
    x = torch.randn(8, 3, 4, 4)

    def run():
        whole = _sb_depth()(x)
        halves = _sb_depth()
        split = torch.cat([halves(x[:4]), halves(x[4:])])
        assert _bits_equal(whole, split)
        return [whole.detach().numpy()]
    _same_everywhere(run)


def test_stochastic_depth_eval_is_identity_and_draw_rate():
    pytest.importorskip("torchvision")
    sb = _sb_depth().eval()
    x = torch.randn(4, 3, 5, 5)
    with torch.no_grad():
        want = sb.fc(SF.adaptive_avg_pool2d(x + sb.conv(x), 1).flatten(1))
    assert _bits_equal(sb(x), want)
    assert getattr(sb.sd, "_samebits_draws", None) is None
    m = samebits.random.bernoulli((200000,), 0.8, 3, samebits.random.bernoulli_stream("a"), 0)
    assert abs(float(m.mean()) - 0.8) < 0.005
    assert set(np.unique(m).tolist()) == {0.0, 1.0}


class ProbBernoulli(torch.nn.Module):
    def forward(self, x):
        return x * torch.bernoulli(torch.sigmoid(x))


def test_bernoulli_with_tensor_probabilities_is_missing():
    sb = samebits.from_torch_module(ProbBernoulli())
    with pytest.raises(samebits.NotReproducibleError, match="bernoulli"):
        sb(torch.randn(3, 4))
