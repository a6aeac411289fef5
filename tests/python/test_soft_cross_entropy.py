"""Cross-entropy with probability targets (contract section 11,
"Probability targets"): samebits.nn.functional.cross_entropy with a float32
target of the input's shape, label smoothing and class weights as PyTorch
defines them, composed of samebits ops.

* bits equal to the contract's sequence restated here with samebits.ops
  (log-softmax, multiply, add, canonical sums, one division);
* loss and the gradients of input and target close to PyTorch's float64
  run: |samebits - float64| <= 1e-5 * max(1, largest |float64|) per tensor
  (float32 rounding through a handful of ops; measured below 3e-6);
* bits identical at 1, 2 and 3 threads (forward and backward, K-dimensional
  input large enough to be split);
* strict mode: F.cross_entropy and a converted nn.CrossEntropyLoss with
  probability targets run no PyTorch computing kernel forward or backward,
  and audit finds nothing missing;
* bad arguments raise naming the parameter."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing

SHAPES = [(5, 7), (3, 4, 2, 3), (6,)]


def _data(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * 2
    k = 0 if len(shape) == 1 else 1
    t = torch.softmax(torch.randn(*shape, generator=g), dim=k)
    w = torch.rand(shape[k], generator=g) + 0.25
    return x, t, w


def _bits(t):
    return np.ascontiguousarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t,
                                dtype=np.float32).view(np.uint32)


def _stated(x, t, w, reduction, eps):
    """The contract's sequence, op by op, with samebits.ops on numpy arrays."""
    x, t = x.numpy(), t.numpy()
    k = 0 if x.ndim == 1 else 1
    c = x.shape[k]
    lp = ops.log_softmax(x, k)
    if eps > 0:
        t = ops.add(ops.mul(t, np.float32(1.0 - eps)), np.float32(eps / c))
    e = ops.mul(lp, t)
    if w is not None:
        shape = [1] * x.ndim
        shape[k] = c
        e = ops.mul(e, w.numpy().reshape(shape))
    if reduction == "none":
        return -ops.sum(e, k)
    total = -ops.sum(e)
    if reduction == "sum":
        return total
    return ops.div(total, np.float32(x.size // c))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("eps", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_bits_are_the_stated_sequence_and_close_to_torch(shape, reduction, eps, weighted):
    x, t, w = _data(shape)
    w = w if weighted else None
    xs, ts = x.clone().requires_grad_(), t.clone().requires_grad_()
    got = SF.cross_entropy(xs, ts, weight=w, reduction=reduction, label_smoothing=eps)
    assert np.array_equal(_bits(got), _bits(_stated(x, t, w, reduction, eps)))
    (got.sum() if reduction == "none" else got).backward()

    xd, td = x.double().requires_grad_(), t.double().requires_grad_()
    want = F.cross_entropy(xd, td, weight=None if w is None else w.double(),
                           reduction=reduction, label_smoothing=eps)
    (want.sum() if reduction == "none" else want).backward()
    assert got.shape == want.shape and got.dtype == torch.float32
    for a, b, what in ((got, want, "loss"), (xs.grad, xd.grad, "input grad"),
                       (ts.grad, td.grad, "target grad")):
        err = (a.double() - b.detach()).abs().max().item()
        assert err <= 1e-5 * max(1.0, b.abs().max().item()), (what, err)


def test_smoothing_and_weights_change_the_result():
    """The options reach the computation (a test that ignored them passes
    the closeness check only by accident)."""
    x, t, w = _data((4, 5))
    plain = SF.cross_entropy(x, t)
    assert SF.cross_entropy(x, t, label_smoothing=0.3).item() != plain.item()
    assert SF.cross_entropy(x, t, weight=w).item() != plain.item()
    # a one-hot probability target gives the class-index loss (to rounding)
    idx = torch.tensor([0, 3, 1, 4])
    onehot = F.one_hot(idx, 5).float()
    assert abs(SF.cross_entropy(x, onehot).item() - SF.cross_entropy(x, idx).item()) < 1e-6


def test_bits_identical_at_thread_counts():
    x, t, w = _data((48, 33, 5, 7), seed=3)
    was = samebits.get_num_threads()
    runs = []
    try:
        for threads in (1, 2, 3):
            samebits.set_num_threads(threads)
            xs, ts = x.clone().requires_grad_(), t.clone().requires_grad_()
            out = []
            for red in ("mean", "none"):
                loss = SF.cross_entropy(xs, ts, weight=w, reduction=red, label_smoothing=0.1)
                (loss.sum() if red == "none" else loss).backward()
                out += [_bits(loss), _bits(xs.grad), _bits(ts.grad)]
            runs.append(out)
    finally:
        samebits.set_num_threads(was)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


class SoftTargetModel(torch.nn.Module):
    def __init__(self, weight=None, label_smoothing=0.0):
        super().__init__()
        self.fc = torch.nn.Linear(6, 5)
        self.loss = torch.nn.CrossEntropyLoss(weight=weight, label_smoothing=label_smoothing)

    def forward(self, x, probs):
        logits = self.fc(x)
        return self.loss(logits, probs) + F.cross_entropy(logits, probs, reduction="sum")


def test_strict_mode_runs_no_pytorch_kernel():
    torch.manual_seed(4)
    x, probs = torch.randn(3, 6), torch.softmax(torch.randn(3, 5), 1)
    m = SoftTargetModel(weight=torch.rand(5) + 0.5, label_smoothing=0.1)
    samebits.manual_seed(0)
    sb = samebits.from_torch_module(m)
    with torch.autograd.profiler.profile() as fwd:
        loss = sb(x, probs)
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    assert _computing(_aten_ops(fwd), False) == []
    seen_b = _aten_ops(bwd)
    assert seen_b and _computing(seen_b, True) == []
    assert abs(loss.item() - m(x, probs).item()) <= 1e-5 * max(1.0, abs(loss.item()))
    report = samebits.audit(m, x, probs, print_report=False)
    assert not report.missing, report
    assert ("torch.nn.functional.cross_entropy", "<root>") in report.covered


@pytest.mark.parametrize("call,err,match", [
    (lambda x, t: SF.cross_entropy(x, t[:, :4]), ValueError, "input's shape"),
    (lambda x, t: SF.cross_entropy(x, t.double()), TypeError, "float32"),
    (lambda x, t: SF.cross_entropy(x, t, label_smoothing=1.5), ValueError, "label_smoothing"),
    (lambda x, t: SF.cross_entropy(x, t, weight=torch.ones(4)), ValueError, "weight"),
    (lambda x, t: SF.cross_entropy(x, t, reduction="avg"), ValueError, "reduction"),
])
def test_bad_arguments_are_named(call, err, match):
    x, t, _ = _data((3, 5))
    with pytest.raises(err, match=match):
        call(x, t)
