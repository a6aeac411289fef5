"""sort, argsort, msort, topk, kthvalue and median from Python (contract
section 18, "Sort, topk, kthvalue and median"): samebits.ops, the
differentiable samebits.nn.functional versions and strict-mode routing.

Selection copies bits, so against PyTorch the values are compared bit for
bit. The indices are compared bit for bit with torch.sort(stable=True),
whose tie rule is the contract's; topk, kthvalue and median in PyTorch do
not promise which of equal values they return, so there the indices are
compared on inputs without ties, and with ties checked to name an element
holding the value. The gradients are copies (and, for the global median,
one division), so they are compared bit for bit too."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch


def _bits(t):
    return torch.as_tensor(np.ascontiguousarray(np.asarray(t, dtype=np.float32))).view(torch.int32)


def _tied(shape, seed):
    """Values from a small set (ties, +-0, +-inf, NaN) mixed with normals."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    pick = rng.random(shape) < 0.5
    x[pick] = rng.choice(pool, size=int(pick.sum()))
    return torch.from_numpy(x)


def _distinct(shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return torch.from_numpy((rng.permutation(n).astype(np.float32) - n / 2).reshape(shape))


@pytest.mark.parametrize("shape,dim", [((9,), 0), ((4, 13), 1), ((4, 13), 0), ((3, 5, 7), -2),
                                       ((2, 0, 3), 1), ((2, 0, 3), 2), ((), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_torch_stable_sort_bit_for_bit(shape, dim, descending):
    x = _tied(shape, len(shape) + dim + 7 * descending)
    v, i = ops.sort(x, dim, descending)
    tv, ti = torch.sort(x, dim=dim, descending=descending, stable=True)
    assert torch.equal(_bits(v), _bits(tv)) and torch.equal(i, ti)
    nv, ni = ops.sort(x.numpy(), dim, descending)
    assert isinstance(nv, np.ndarray) and np.array_equal(ni, ti.numpy())


def test_tie_rule_nan_and_signed_zero():
    x = torch.tensor([1.0, float("nan"), -0.0, 0.0, float("nan"), 1.0, -float("inf")])
    v, i = ops.sort(x)
    assert i.tolist() == [6, 2, 3, 0, 5, 1, 4]
    v, i = ops.sort(x, descending=True)
    assert i.tolist() == [1, 4, 0, 5, 2, 3, 6]
    assert _bits(v)[4].item() == _bits(torch.tensor(-0.0)).item()


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 4, 11])
def test_topk_against_torch(k, largest):
    x = _distinct((5, 11), k)
    v, i = ops.topk(x, k, 1, largest)
    tv, ti = torch.topk(x, k, 1, largest)
    assert torch.equal(_bits(v), _bits(tv)) and torch.equal(i, ti)
    x = _tied((5, 11), k + 1)
    x[x == 0] = 0.0                   # no -0/+0 ties: PyTorch may pick either sign
    v, i = ops.topk(x, k, 1, largest)
    tv, _ = torch.topk(x, k, 1, largest)
    assert torch.equal(_bits(v), _bits(tv))
    assert torch.equal(_bits(torch.gather(x, 1, i)), _bits(v))


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_and_median_against_torch(keepdim):
    x = _distinct((6, 9), 3)
    for k in (1, 5, 9):
        v, i = ops.kthvalue(x, k, 1, keepdim)
        tv, ti = torch.kthvalue(x, k, 1, keepdim)
        assert torch.equal(_bits(v), _bits(tv)) and torch.equal(i, ti)
    for n in (9, 8):   # odd and even counts: the lower middle
        v, i = ops.median(x[:, :n], 1, keepdim)
        tv, ti = torch.median(x[:, :n], 1, keepdim)
        assert torch.equal(_bits(v), _bits(tv)) and torch.equal(i, ti)
    x = _tied((6, 9), 4)
    x[x == 0] = 0.0
    for k in (1, 5, 9):
        v, i = ops.kthvalue(x, k, 1, keepdim)
        assert torch.equal(_bits(v), _bits(torch.kthvalue(x, k, 1, keepdim)[0]))
    v, i = ops.median(x, 1, keepdim)
    tv, ti = torch.median(x, 1, keepdim)
    assert torch.equal(_bits(v), _bits(tv))
    # a row with a NaN: its first NaN, value and index, as PyTorch
    nan_rows = torch.isnan(x).any(1)
    first = torch.isnan(x).float().argmax(1)
    got_i = i.reshape(-1)
    assert torch.equal(got_i[nan_rows], first[nan_rows])
    assert torch.equal(got_i[nan_rows], ti.reshape(-1)[nan_rows])


def test_global_median():
    for n, seed in ((9, 1), (10, 2), (1, 3)):
        x = _distinct((n,), seed)
        assert torch.equal(_bits(SF.median(x)), _bits(torch.median(x)))
    x = torch.tensor([3.0, float("nan"), 1.0])
    assert torch.isnan(SF.median(x)) and torch.isnan(torch.median(x))
    assert torch.isnan(SF.median(torch.zeros(0)))


def _grads(f_ours, f_torch, x, seed):
    torch.manual_seed(seed)
    a = x.clone().requires_grad_(True)
    b = x.clone().requires_grad_(True)
    ya, yb = f_ours(a), f_torch(b)
    dy = torch.randn(ya.shape)
    ya.backward(dy)
    yb.backward(dy)
    return a.grad, b.grad


@pytest.mark.parametrize("which", ["sort", "topk", "kthvalue", "median", "median_keepdim", "msort"])
def test_gradients_are_torch_bits(which):
    x = _distinct((4, 7), 11)
    f = {"sort": (lambda a: SF.sort(a, 1, True)[0], lambda a: torch.sort(a, 1, True)[0]),
         "topk": (lambda a: SF.topk(a, 3, 1)[0], lambda a: torch.topk(a, 3, 1)[0]),
         "kthvalue": (lambda a: SF.kthvalue(a, 2, 0)[0], lambda a: torch.kthvalue(a, 2, 0)[0]),
         "median": (lambda a: SF.median(a, 1)[0], lambda a: torch.median(a, 1)[0]),
         "median_keepdim": (lambda a: SF.median(a, 0, True)[0],
                            lambda a: torch.median(a, 0, True)[0]),
         "msort": (SF.msort, torch.msort)}[which]
    ga, gb = _grads(f[0], f[1], x, 5)
    assert torch.equal(_bits(ga), _bits(gb))


def test_global_median_gradient_is_split_evenly_among_ties():
    x = torch.tensor([2.0, 5.0, 2.0, -0.0, 2.0, 0.0, 7.0])
    ga, gb = _grads(SF.median, torch.median, x, 6)
    assert torch.equal(_bits(ga), _bits(gb))
    assert (ga != 0).sum().item() == 3     # the three 2s share the gradient


def test_sort_backward_copies_bits():
    dy = torch.tensor([[-0.0, float("inf"), 1.5]])
    idx = torch.tensor([[2, 0, 1]])
    dx = ops.sort_backward(dy, 1, idx, (1, 3))
    assert _bits(dx).tolist() == _bits(torch.tensor([[float("inf"), 1.5, -0.0]])).tolist()


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 7])
def test_threads_do_not_change_the_bits(threads):
    x = _tied((300, 64), 9)
    want = torch.sort(x, dim=1, stable=True)
    was = samebits.get_num_threads()
    try:
        samebits.set_num_threads(threads)
        v, i = ops.sort(x, 1)
        mv, mi = ops.median(x, 1)
    finally:
        samebits.set_num_threads(was)
    assert torch.equal(_bits(v), _bits(want[0])) and torch.equal(i, want[1])
    assert torch.equal(_bits(mv), _bits(torch.median(x, 1)[0]))


def test_refusals_name_the_parameter():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(samebits.SamebitsError, match="k=4"):
        ops.topk(x, 4, 1)
    with pytest.raises(samebits.SamebitsError, match="k = 0"):
        ops.kthvalue(x, 0, 1)
    with pytest.raises(samebits.SamebitsError, match="dim"):
        ops.sort(x, 2)
    with pytest.raises(samebits.SamebitsError, match="size 0"):
        ops.median(np.zeros((2, 0), np.float32), 1)
    with pytest.raises(samebits.SamebitsError, match="outside"):
        ops.sort_backward(np.ones((1, 2), np.float32), 1, np.array([[0, 5]]), (1, 3))
    with pytest.raises(TypeError, match="descending"):
        ops.sort(x, 1, "yes")


def test_strict_routes_every_form():
    x = _tied((4, 6), 12)
    x[x == 0] = 0.0
    ar = torch.arange(6).flip(0)
    with samebits.StrictMode():
        s1, s2 = torch.sort(x, 1), x.sort(dim=0, descending=True)
        a1, a2 = torch.argsort(x, 1), x.argsort(descending=True)
        m = torch.msort(x)
        t = torch.topk(x, 2)
        k = x.kthvalue(3, 0, True)
        md, mg = torch.median(x, 1), x.median()
        ints = torch.sort(ar)                         # integer: exact, PyTorch's
    assert torch.equal(s1.indices, torch.sort(x, dim=1, stable=True).indices)
    assert torch.equal(s2.values.view(torch.int32),
                       torch.sort(x, dim=0, descending=True, stable=True).values.view(torch.int32))
    assert torch.equal(a1, s1.indices) and torch.equal(a2, ops.sort(x, -1, True)[1])
    assert torch.equal(_bits(m), _bits(torch.msort(x)))
    assert torch.equal(_bits(t.values), _bits(torch.topk(x, 2).values))
    assert k.values.shape == (1, 6) and md.indices.shape == (4,)
    assert torch.equal(_bits(mg), _bits(torch.median(x)))
    assert ints.values.tolist() == list(range(6))


class RankModel(torch.nn.Module):
    """A model whose forward sorts, takes the top k, a k-th value and medians."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 8)

    def forward(self, x):
        h = self.fc(x)                                   # (2, 8)
        s = torch.sort(h, 1, descending=True).values     # (2, 8)
        t = h.topk(3).values                             # (2, 3)
        k = torch.kthvalue(h, 2, 1, keepdim=True)[0]     # (2, 1)
        m = h.median(1).values.unsqueeze(1) + h.median()  # (2, 1)
        return torch.cat([s[:, :3] + t, k, m], 1)        # (2, 5)


def test_strict_model_runs_no_pytorch_arithmetic():
    samebits.manual_seed(0)
    torch.manual_seed(7)
    m = RankModel()
    sb = samebits.from_torch_module(m)
    x = torch.randn(2, 6, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert any(op == "torch.sort" for op, _ in report.covered)
    assert x.grad is not None and sb.fc.weight.grad is not None
