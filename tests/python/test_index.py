"""The index family from Python: samebits.ops, the differentiable
samebits.nn.functional versions, and strict-mode routing of torch.gather,
index_select, scatter_add(_), index_add(_), index_put_(accumulate=True) and
x[integer tensor] under autograd (contract section 18).

The expected sums are a float32 restatement written here: the terms of each
destination added one at a time in ascending source position."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing


def _bits(t):
    return torch.as_tensor(np.asarray(t, dtype=np.float32)).view(torch.int32)


def _scatter_add_restated(x, dim, index, src):
    """x (float32) with src[p] added at p[dim] = index[p], p row-major."""
    out = np.array(x, dtype=np.float32, copy=True)
    src, index = np.asarray(src, dtype=np.float32), np.asarray(index)
    for p in np.ndindex(*index.shape):
        q = list(p)
        q[dim] = int(index[p])
        out[tuple(q)] = np.float32(out[tuple(q)] + src[p])
    return out


def test_order_is_ascending_source_position():
    terms = torch.tensor([2.0 ** 25, 1.0, -(2.0 ** 25), 1.0])
    zero = torch.zeros(1)
    idx = torch.zeros(4, dtype=torch.int64)
    # ((0 + 2^25) + 1) - 2^25 + 1 = 1 in float32; other orders give 0 or 2
    assert ops.index_add(zero, 0, idx, terms).item() == 1.0
    assert ops.scatter_add(zero, 0, idx, terms).item() == 1.0
    assert ops.gather_backward(terms, 0, idx, (1,)).item() == 1.0
    assert ops.index_select_backward(terms, 0, idx, (1,)).item() == 1.0


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_bits_against_the_restatement_at_every_thread_count(threads):
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((6, 5, 40)).astype(np.float32)
    src = (rng.standard_normal((6, 300, 40)) * 1e4).astype(np.float32)
    src[0, 3, 0], src[1, 7, 2] = np.inf, np.nan
    index = rng.integers(0, 5, size=(6, 300, 40))
    want = _scatter_add_restated(x, 1, index, src)
    was = samebits.get_num_threads()
    try:
        samebits.set_num_threads(threads)
        got = ops.scatter_add(x, 1, index, src)
        got_t = ops.scatter_add(torch.from_numpy(x), 1, torch.from_numpy(index),
                                torch.from_numpy(src))
    finally:
        samebits.set_num_threads(was)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert torch.equal(_bits(got_t), _bits(want))


def test_copies_are_torchs_bits_and_sums_are_close():
    torch.manual_seed(0)
    x = torch.randn(4, 7)
    idx2 = torch.randint(0, 7, (3, 9))
    assert torch.equal(ops.gather(x[:3], 1, idx2), torch.gather(x[:3], 1, idx2))
    # an index smaller than the input in the other dims (PyTorch's rule)
    idx_small = torch.randint(0, 7, (2, 3))
    assert torch.equal(ops.gather(x, 1, idx_small), torch.gather(x, 1, idx_small))
    sel = torch.tensor([6, 0, 6, 2])
    assert torch.equal(ops.index_select(x, 1, sel), torch.index_select(x, 1, sel))
    assert torch.equal(ops.index_select(x, 0, torch.tensor(2)), torch.index_select(x, 0, torch.tensor(2)))
    src = torch.randn(5, 12)
    idx = torch.randint(0, 7, (3, 9))
    got = ops.scatter_add(x, 1, idx, src)
    assert torch.allclose(got, torch.scatter_add(x, 1, idx, src), atol=1e-5)
    assert torch.equal(_bits(got), _bits(_scatter_add_restated(x.numpy(), 1, idx.numpy(),
                                                                 src[:3, :9].numpy())))
    source = torch.randn(4, 5)
    i5 = torch.tensor([1, 1, 6, 0, 1], dtype=torch.int32)
    assert torch.allclose(ops.index_add(x, 1, i5, source, alpha=0.5),
                          x.index_add(1, i5.long(), source, alpha=0.5), atol=1e-6)


def test_refusals_name_the_problem():
    x = torch.zeros(3, 4)
    with pytest.raises(samebits.SamebitsError, match="index element 1 is 4, outside"):
        ops.gather(x, 1, torch.tensor([[0, 4]]))
    with pytest.raises(samebits.SamebitsError, match="index element 0 is -1"):
        ops.index_select(x, 0, torch.tensor([-1]))
    with pytest.raises(samebits.SamebitsError, match="dim=2 is out of range"):
        ops.index_add(x, 2, torch.tensor([0]), torch.zeros(3, 1))
    with pytest.raises(TypeError, match="index has dtype torch.float32"):
        ops.index_select(x, 0, torch.tensor([0.0]))
    with pytest.raises(samebits.SamebitsError, match="more than src's"):
        ops.scatter_add(x, 1, torch.zeros(3, 4, dtype=torch.int64), torch.zeros(3, 2))
    y = torch.ones(3, 4)
    with pytest.raises(samebits.SamebitsError):
        ops.scatter_add(y, 0, torch.tensor([[3]]), torch.ones(1, 1))
    assert torch.equal(y, torch.ones(3, 4))  # nothing written


def _float64_grad(f, *args):
    args64 = [a.detach().double().requires_grad_(a.requires_grad) if a.is_floating_point() else a
              for a in args]
    f(*args64).pow(2).sum().backward()
    return [a.grad for a in args64 if a.is_floating_point() and a.requires_grad]


@pytest.mark.parametrize("name", ["gather", "index_select", "scatter_add", "index_add"])
def test_gradients_close_to_float64(name):
    torch.manual_seed(3)
    x = torch.randn(5, 6, requires_grad=True)
    if name == "gather":
        idx = torch.randint(0, 6, (4, 9))
        fs, ft, args = (lambda a: SF.gather(a, 1, idx)), (lambda a: torch.gather(a, 1, idx)), (x,)
    elif name == "index_select":
        idx = torch.tensor([5, 0, 5, 5, 2])
        fs, ft, args = (lambda a: SF.index_select(a, 1, idx)), \
            (lambda a: torch.index_select(a, 1, idx)), (x,)
    elif name == "scatter_add":
        idx = torch.randint(0, 6, (5, 8))
        s = torch.randn(5, 8, requires_grad=True)
        fs, ft, args = (lambda a, b: SF.scatter_add(a, 1, idx, b)), \
            (lambda a, b: torch.scatter_add(a, 1, idx, b)), (x, s)
    else:
        idx = torch.tensor([1, 1, 4])
        s = torch.randn(5, 3, requires_grad=True)
        fs, ft, args = (lambda a, b: SF.index_add(a, 1, idx, b, alpha=2.0)), \
            (lambda a, b: a.index_add(1, idx, b, alpha=2.0)), (x, s)
    fs(*args).pow(2).sum().backward()
    got = [a.grad for a in args]
    want = _float64_grad(ft, *args)
    for g, w in zip(got, want):
        assert torch.allclose(g.double(), w, rtol=1e-5, atol=1e-5)


def test_gather_backward_is_the_ordered_scatter_add():
    torch.manual_seed(5)
    x = torch.randn(3, 4, requires_grad=True)
    idx = torch.randint(0, 4, (3, 50))
    dy = torch.randn(3, 50) * 1000
    SF.gather(x, 1, idx).backward(dy)
    want = _scatter_add_restated(np.zeros((3, 4), np.float32), 1, idx.numpy(), dy.numpy())
    assert torch.equal(_bits(x.grad), _bits(want))


_GETITEM_REACHES_MODES = int(torch.__version__.split(".")[0]) >= 2


class IndexModel(torch.nn.Module):
    """Forward code calling the index family through torch: every call must
    be samebits' under strict mode, forward and backward."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)
        self.table = torch.nn.Parameter(torch.randn(10, 6))

    def forward(self, x, tokens):
        h = self.fc(x)                                    # (4, 6)
        # x[integer tensor] under autograd: index_select. PyTorch 1.13 does
        # not hand Tensor.__getitem__ to a TorchFunctionMode at all (2.x does)
        e = self.table[tokens] if _GETITEM_REACHES_MODES else torch.index_select(self.table, 0, tokens)
        e = torch.index_select(e, 1, torch.tensor([0, 2, 4, 1, 3, 5]))
        g = torch.gather(h, 1, torch.tensor([[0, 0, 5, 1, 1, 2]] * 4))
        acc = torch.zeros(4, 6).index_add(0, torch.tensor([0, 3, 3, 1]), e)
        acc = acc.scatter_add(1, torch.tensor([[1, 1, 0, 0, 5, 5]] * 4), g)
        z = torch.zeros(4, 6)
        z.index_put_((torch.tensor([-1, 0, 0, 2]),), h, accumulate=True)
        r = h.repeat_interleave(torch.tensor([2, 0, 1, 3, 0, 0]), dim=1)  # (4, 6)
        return acc + z + r


def test_strict_model_runs_no_pytorch_arithmetic():
    samebits.manual_seed(0)
    torch.manual_seed(0)
    model = samebits.from_torch_module(IndexModel())
    x = torch.randn(4, 6, requires_grad=True)
    tokens = torch.tensor([3, 3, 9, 0])
    with torch.autograd.profiler.profile() as fwd:
        out = model(x, tokens)
        loss = SF.cross_entropy(out, torch.tensor([1, 0, 5, 2]))
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []
    assert model.table.grad is not None and x.grad is not None
    # the same model run by PyTorch itself gives close values
    ref = IndexModel()
    ref.load_state_dict(model.state_dict())
    assert torch.allclose(out, ref(x.detach(), tokens), atol=1e-5)


def test_strict_refuses_what_it_cannot_order():
    x = torch.zeros(3, 4, requires_grad=True)
    with samebits.StrictMode():
        with pytest.raises(samebits.NotReproducibleError, match="accumulate"):
            x.clone().index_put_((torch.tensor([0]),), torch.ones(1, 4))
        with pytest.raises(samebits.NotReproducibleError, match="index_put"):
            x.clone().index_put_((torch.tensor([0]), torch.tensor([1])), torch.ones(1),
                                 accumulate=True)
        if _GETITEM_REACHES_MODES:  # a boolean mask: not an index_select
            with pytest.raises(samebits.NotReproducibleError, match="__getitem__"):
                x[torch.tensor([True, False, True])]


def test_repeat_interleave_backward_is_the_ordered_index_add():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    dy = torch.tensor([[2.0 ** 25, 1.0, -(2.0 ** 25), 1.0, 5.0, 7.0]] * 2)
    with samebits.StrictMode():
        y = x.repeat_interleave(torch.tensor([4, 2]), dim=1)
        y2 = torch.repeat_interleave(x, 2)
    assert torch.equal(y, torch.repeat_interleave(x.detach(), torch.tensor([4, 2]), dim=1))
    assert torch.equal(y2, torch.repeat_interleave(x.detach(), 2))
    y.backward(dy)
    # column 0 receives 2^25, 1, -2^25, 1 in that order: 1, not 0 or 2
    assert x.grad[:, 0].tolist() == [1.0, 1.0] and x.grad[:, 1].tolist() == [12.0, 12.0]
