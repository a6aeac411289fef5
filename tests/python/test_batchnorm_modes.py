"""Batch norm without running statistics (track_running_stats=False) and with
the cumulative average (momentum=None), and ReLU's inplace=True: converted
models against PyTorch, the same bits at every thread count and ISA level,
and the running statistics of the cumulative average against the contract's
float32 formula."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits.nn import functional as SF
from test_strict import _aten_ops, _computing, _run_profiled
from test_zoo_ops import _same_everywhere


def _net(**bn):
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, **bn),
                               torch.nn.ReLU(inplace=True), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 3))


def _train_and_eval(model, steps=3):
    """(train outputs, eval output, gradients, buffers) of a few batches."""
    gen = torch.Generator().manual_seed(1)
    outs = []
    model.train()
    for _ in range(steps):
        x = torch.randn(4, 3, 8, 8, generator=gen)
        model.zero_grad(set_to_none=True)
        y = model(x)
        y.square().sum().backward()
        outs.append(y.detach())
    model.eval()
    with torch.no_grad():
        outs.append(model(torch.randn(4, 3, 8, 8, generator=gen)))
    grads = [p.grad for p in model.parameters()]
    bufs = [b.clone() for b in model.buffers()]
    return outs, grads, bufs


@pytest.mark.parametrize("bn", [dict(track_running_stats=False), dict(momentum=None),
                                dict(track_running_stats=False, affine=False)],
                         ids=["no-running-stats", "cumulative", "no-stats-no-affine"])
def test_batch_norm_modes_match_pytorch(bn):
    torch.manual_seed(0)
    ref = _net(**bn)
    samebits.manual_seed(0)
    conv = samebits.from_torch_module(_net(**bn), strict=True)
    conv.load_state_dict(ref.state_dict())
    (so, sg, sb), (to, tg, tb) = _train_and_eval(conv), _train_and_eval(ref)
    for a, b in zip(so + sg + sb, to + tg + tb):
        assert a.shape == b.shape
        assert torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-4)
    if not bn.get("track_running_stats", True):
        assert len(sb) == 0 or all(b is None for b in sb)


def test_cumulative_average_is_the_contract_formula():
    """momentum=None: after batch n the factor is float32(1)/float32(n), and
    the running mean is updated as with that momentum (same op, same bits)."""
    samebits.manual_seed(0)
    cum = samebits.from_torch_module(torch.nn.BatchNorm2d(3, momentum=None), strict=True)
    gen = torch.Generator().manual_seed(2)
    xs = [torch.randn(2, 3, 4, 4, generator=gen) for _ in range(4)]
    rm, rv = torch.zeros(3), torch.ones(3)
    for n, x in enumerate(xs, start=1):
        cum(x)
        m = float(np.float32(1.0) / np.float32(n))
        SF.batch_norm(x, rm, rv, training=True, momentum=m)
        assert int(cum.num_batches_tracked) == n
        assert torch.equal(cum.running_mean, rm) and torch.equal(cum.running_var, rv)


def test_batch_norm_modes_same_bits_everywhere():
    def run():
        out = []
        for bn in (dict(track_running_stats=False), dict(momentum=None)):
            samebits.manual_seed(0)
            torch.manual_seed(0)
            conv = samebits.from_torch_module(_net(**bn), strict=True)
            o, g, b = _train_and_eval(conv)
            out += [t.numpy() for t in o + g + b]
        return out
    _same_everywhere(run)


def test_no_pytorch_arithmetic_in_the_new_modes():
    torch.manual_seed(0)
    samebits.manual_seed(0)
    conv = samebits.from_torch_module(_net(momentum=None), strict=True)
    conv.train()
    out, fwd, bwd = _run_profiled(conv, torch.randn(4, 3, 8, 8), torch.tensor([0, 2, 1, 0]))
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []


def test_relu_inplace_is_honoured():
    a = torch.randn(50, requires_grad=True)
    b = a.detach().clone().requires_grad_()
    hs, ht = a * 1.0, b * 1.0
    out_s = SF.relu(hs, inplace=True)
    out_t = torch.nn.functional.relu(ht, inplace=True)
    assert out_s is hs and torch.equal(hs.detach(), ht.detach().clamp_min(0.0) + 0.0)
    dy = torch.randn(50)
    out_s.backward(dy)
    out_t.backward(dy)
    assert torch.equal(a.grad, b.grad)
    module = samebits.nn.ReLU(inplace=True)
    x = torch.randn(20)
    y = module(x)
    assert y is x and bool((x >= 0).all())
    with pytest.raises(RuntimeError):  # PyTorch's rule for leaves, kept
        SF.relu(torch.randn(3, requires_grad=True), inplace=True)


class _Block(torch.nn.Module):
    """Batch norm called from a model's own forward (as torchvision's
    ResNet calls self.bn1): strict mode is active around the module."""

    def __init__(self, **bn):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4, **bn)

    def forward(self, x):
        return self.bn(self.conv(x)) + 1.0


@pytest.mark.parametrize("bn", [dict(), dict(momentum=None), dict(track_running_stats=False)],
                         ids=["momentum", "cumulative", "no-running-stats"])
def test_batch_norm_inside_model_code_runs_strict(bn):
    torch.manual_seed(0)
    ref = _Block(**bn)
    samebits.manual_seed(0)
    conv = samebits.from_torch_module(_Block(**bn), strict=True)
    conv.load_state_dict(ref.state_dict())
    x = torch.randn(4, 3, 8, 8)
    for _ in range(2):
        assert torch.allclose(conv(x), ref(x), rtol=1e-4, atol=1e-4)
    for a, b in zip(conv.buffers(), ref.buffers()):
        assert torch.allclose(a.float(), b.float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn, args", [(SF.relu, ()), (SF.hardtanh, (-0.5, 0.5)),
                                      (SF.leaky_relu, (0.2,)), (SF.silu, ())])
def test_inplace_without_grad_writes_the_input(fn, args):
    """Under no_grad an inplace activation overwrites its (dense CPU) input
    with the out-of-place result's bits, bumps its version counter, and a
    graph that saved the tensor then refuses to run backward (PyTorch's
    rule for in-place writes)."""
    x = torch.randn(1000)
    x[:4] = torch.tensor([-0.0, 0.0, float("nan"), float("inf")])
    want = fn(x.clone(), *args)
    y = x.clone()
    with torch.no_grad():
        got = fn(y, *args, inplace=True)
    assert got is y
    assert torch.equal(y.view(torch.int32), want.view(torch.int32))
    w = torch.randn(1000, requires_grad=True)
    z = torch.randn(1000)
    out = w * z  # saves z for w's gradient
    v0 = z._version
    with torch.no_grad():
        fn(z, *args, inplace=True)
    assert z._version > v0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("fn, args", [(SF.relu, ()), (SF.hardtanh, (-0.5, 0.5)),
                                      (SF.relu6, ()), (SF.hardswish, ()), (SF.silu, ()),
                                      (SF.leaky_relu, (0.1,))])
def test_inplace_under_autograd_matches_out_of_place(fn, args):
    """In place under autograd the input is overwritten (relu's backward
    reads it, y in x's place; hardtanh's a copy of x taken first): output
    and input gradient have the out-of-place bits, on -0, +-0.5, 0, 6, NaN
    and +-inf inputs and NaN/-0 gradients too."""
    base = torch.randn(997) * 4
    base[:10] = torch.tensor([-0.0, 0.0, float("nan"), float("inf"), -float("inf"),
                              0.5, -0.5, 6.0, -6.0, 1e-45])
    dy = torch.randn(997)
    dy[:4] = torch.tensor([float("nan"), -0.0, 0.0, float("inf")])
    bits = lambda t: t.detach().contiguous().view(torch.int32)  # noqa: E731
    a = base.clone().requires_grad_()
    y_ref = fn(a * 1.0, *args)
    y_ref.backward(dy)
    b = base.clone().requires_grad_()
    h = b * 1.0
    y = fn(h, *args, inplace=True)
    assert y is h and h._version > 0
    assert torch.equal(bits(y), bits(y_ref))
    y.backward(dy)
    assert torch.equal(bits(b.grad), bits(a.grad))


def test_inplace_after_inplace_follows_pytorch():
    """relu_ saves its result, so modifying it in place afterwards is
    refused at backward (as PyTorch's relu_); relu6_ (hardtanh_) does not,
    and Hardswish(inplace=True) may follow it (as in PyTorch)."""
    for f_sb, f_pt, ok in ((SF.relu, F.relu, False), (SF.relu6, F.relu6, True)):
        for fn, hs in ((f_sb, SF.hardswish), (f_pt, F.hardswish)):
            x = torch.randn(6, requires_grad=True)
            out = hs(fn(x * 1.0, inplace=True), inplace=True).sum()
            if ok:
                out.backward()
            else:
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    out.backward()
