"""The CTC loss (sb_ctc_loss_*): samebits.nn.functional.ctc_loss against
PyTorch (forward and log_probs gradient; padded and concatenated targets,
every reduction, zero_infinity, another blank, unbatched input), the same
bits at 1 and 3 threads, samebits.ops on numpy, nn.CTCLoss and its
conversion, strict routing inside a model's forward with no PyTorch
computing kernel in the profile, and the refusals."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch


def _data(T=12, N=4, C=6, S=5, blank=0, seed=0):
    g = torch.Generator().manual_seed(seed)
    lp = torch.log_softmax(torch.randn(T, N, C, generator=g) * 2, 2)
    labels = [c for c in range(C) if c != blank]
    tl = torch.randint(0, S + 1, (N,), generator=g)
    il = torch.full((N,), T, dtype=torch.int64) - torch.randint(0, 3, (N,), generator=g)
    pad = torch.tensor(labels)[torch.randint(0, len(labels), (N, S), generator=g)]
    cat = torch.cat([pad[b, :tl[b]] for b in range(N)])
    return lp, pad, cat, il, tl


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("blank", [0, 3])
def test_close_to_torch(reduction, padded, blank):
    lp, pad, cat, il, tl = _data(blank=blank, seed=1)
    tg = pad if padded else cat
    a, b = lp.clone().requires_grad_(), lp.clone().requires_grad_()
    got = SF.ctc_loss(a, tg, il, tl, blank=blank, reduction=reduction)
    want = F.ctc_loss(b, tg, il, tl, blank=blank, reduction=reduction)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    dy = torch.rand(want.shape) + 0.5
    (got * dy).sum().backward()
    (want * dy).sum().backward()
    assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignments(zero_infinity):
    # 4 labels with a repeat need 5 steps; item 0 has 3
    lp = torch.log_softmax(torch.randn(6, 2, 4), 2)
    tg = torch.tensor([[1, 1, 2, 3], [2, 3, 0, 0]])
    il, tl = torch.tensor([3, 6]), torch.tensor([4, 2])
    a, b = lp.clone().requires_grad_(), lp.clone().requires_grad_()
    got = SF.ctc_loss(a, tg, il, tl, reduction="none", zero_infinity=zero_infinity)
    want = F.ctc_loss(b, tg, il, tl, reduction="none", zero_infinity=zero_infinity)
    assert torch.allclose(got, want, rtol=1e-5) and got[0].item() == want[0].item()
    if zero_infinity:
        got.sum().backward()
        want.sum().backward()
        assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-5)
        assert not a.grad[:, 0].any()


def test_unbatched_and_list_lengths():
    lp, pad, cat, il, tl = _data(N=1, seed=2)
    got = SF.ctc_loss(lp[:, 0], pad[0], il[0], tl[0], reduction="none")
    try:
        want = F.ctc_loss(lp[:, 0], pad[0], il[0], tl[0], reduction="none")
    except (RuntimeError, ValueError, IndexError):  # an older torch without unbatched input
        want = F.ctc_loss(lp, pad, il, tl, reduction="none")[0]
    assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-5)
    lp, pad, cat, il, tl = _data(seed=3)
    got = SF.ctc_loss(lp, cat, il.tolist(), tuple(tl.tolist()))
    assert torch.allclose(got, F.ctc_loss(lp, cat, il, tl), rtol=1e-5)


def test_bits_equal_at_1_and_3_threads_and_ops():
    lp, pad, cat, il, tl = _data(T=40, N=9, C=12, S=10, seed=4)
    old = samebits.get_num_threads()
    try:
        got = []
        for n in (1, 3):
            samebits.set_num_threads(n)
            x = lp.clone().requires_grad_()
            loss = SF.ctc_loss(x, pad, il, tl)
            loss.backward()
            got.append((loss.detach().numpy().tobytes(), x.grad.numpy().tobytes()))
    finally:
        samebits.set_num_threads(old)
    assert got[0] == got[1]
    # samebits.ops on numpy: the same bits, padded or concatenated
    a = ops.ctc_loss(lp.numpy(), pad.numpy(), il.numpy(), tl.numpy())
    b = ops.ctc_loss(lp.numpy(), cat.numpy(), il.numpy(), tl.numpy())
    assert isinstance(a, np.ndarray) and a.tobytes() == got[0][0] == b.tobytes()
    d = ops.ctc_loss_backward(lp.numpy(), pad.numpy(), il.numpy(), tl.numpy(),
                              np.float32(1.0).reshape(()))
    assert d.tobytes() == got[0][1]


def test_module_and_conversion():
    lp, pad, cat, il, tl = _data(seed=5)
    for tm in (torch.nn.CTCLoss(), torch.nn.CTCLoss(blank=2, reduction="sum", zero_infinity=True)):
        sb = samebits.from_torch_module(tm)
        assert isinstance(sb, samebits.nn.CTCLoss)
        lp2, pad2, _, il2, tl2 = _data(blank=tm.blank, seed=6)
        assert torch.allclose(sb(lp2, pad2, il2, tl2), tm(lp2, pad2, il2, tl2), rtol=1e-5)


class CtcHead(torch.nn.Module):
    """A CTC loss per item inside the forward, functional and module."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(5, 3)
        self.proj = torch.nn.Linear(5, 7 * 4)
        self.ctc = torch.nn.CTCLoss(reduction="none", zero_infinity=True)
        self.register_buffer("tgt", torch.tensor([[1, 2, 2], [3, 1, 0]]))
        self.register_buffer("tl", torch.tensor([3, 2]))
        self.register_buffer("il", torch.tensor([7, 6]))

    def forward(self, x):
        lp = F.log_softmax(self.proj(x).view(2, 7, 4).transpose(0, 1), 2)
        a = F.ctc_loss(lp, self.tgt, self.il, self.tl, reduction="none")
        b = self.ctc(lp, self.tgt, self.il, self.tl)
        return self.lin(x) + (a + b).unsqueeze(1)


def test_strict_model_with_ctc():
    samebits.manual_seed(6)
    torch.manual_seed(6)
    m = CtcHead()
    sb = samebits.from_torch_module(CtcHead())
    sb.load_state_dict(m.state_dict())
    assert type(sb.ctc) is samebits.nn.CTCLoss
    x = torch.randn(2, 5, requires_grad=True)
    _strict_run_like_pytorch(sb, m, x)
    assert sb.proj.weight.grad is not None


def test_refusals_name_the_parameter():
    lp, pad, cat, il, tl = _data(seed=7)
    with pytest.raises(samebits.SamebitsError, match="input_lengths.*is longer than the input"):
        SF.ctc_loss(lp, pad, il + 5, tl)
    with pytest.raises(samebits.SamebitsError, match="target_lengths.*is negative"):
        SF.ctc_loss(lp, pad, il, tl - 10)
    with pytest.raises(samebits.SamebitsError, match="longer than the padded targets"):
        SF.ctc_loss(lp, pad, il, tl + 10)
    with pytest.raises(samebits.SamebitsError, match="blank = 6 is outside"):
        SF.ctc_loss(lp, pad, il, tl, blank=6)
    with pytest.raises(samebits.SamebitsError, match="is the blank label"):
        SF.ctc_loss(lp, torch.zeros_like(pad), il, torch.ones_like(tl))
    with pytest.raises(TypeError, match="input_lengths"):
        SF.ctc_loss(lp, pad, 3.5, tl)
