"""Embedding and EmbeddingBag (contract section 18): samebits.nn.functional
embedding / embedding_bag, the converted nn.Embedding / nn.EmbeddingBag, and
a small model (embedding, embedding bag, linear) converted with strict=True
whose forward and backward run no PyTorch arithmetic.

Expected weight gradients are a float32 restatement written here: dy's rows
added into zeros one at a time in ascending position."""
import numpy as np
import pytest
import torch

import samebits
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing


def _bits(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
    return torch.as_tensor(np.asarray(t, dtype=np.float32)).view(torch.int32)


def _rows_added(shape, index, rows):
    out = np.zeros(shape, dtype=np.float32)
    for i, v in enumerate(np.asarray(index).reshape(-1)):
        out[v] = out[v] + np.asarray(rows, dtype=np.float32)[i]
    return out


def test_embedding_forward_and_ordered_backward():
    torch.manual_seed(0)
    w = torch.randn(7, 5, requires_grad=True)
    idx = torch.tensor([[3, 3, 0], [6, 3, 3]])
    y = SF.embedding(idx, w)
    assert torch.equal(y, torch.nn.functional.embedding(idx, w.detach()))
    dy = torch.randn(2, 3, 5) * 1e4
    dy[0, 1, 0] = 2.0 ** 25
    dy[1, 1, 0], dy[1, 2, 0] = -(2.0 ** 25), 1.0
    y.backward(dy)
    want = _rows_added((7, 5), idx.numpy(), dy.reshape(6, 5).numpy())
    assert torch.equal(_bits(w.grad), _bits(want))
    w64 = w.detach().double().requires_grad_()
    torch.nn.functional.embedding(idx, w64).backward(dy.double())
    # close to float64 except where the 2^25 terms absorb the small ones
    assert torch.allclose(w.grad[:, 1:].double(), w64.grad[:, 1:], rtol=1e-6, atol=1e-2)


def test_padding_idx_and_scale_grad_by_freq():
    torch.manual_seed(1)
    w = torch.randn(6, 4, requires_grad=True)
    idx = torch.tensor([1, 4, 1, 1, -1 % 6, 2])
    dy = torch.randn(6, 4)
    SF.embedding(idx, w, padding_idx=-1, scale_grad_by_freq=True).backward(dy)
    w_t = w.detach().clone().requires_grad_()
    torch.nn.functional.embedding(idx, w_t, padding_idx=5, scale_grad_by_freq=True).backward(dy)
    assert torch.allclose(w.grad, w_t.grad, atol=1e-6)
    assert torch.equal(w.grad[5], torch.zeros(4))
    # row 1 gets dy[0]/3 + dy[2]/3 + dy[3]/3, each one IEEE division, added in order
    third = [np.float32(dy[i, 0].item()) / np.float32(3.0) for i in (0, 2, 3)]
    assert w.grad[1, 0].item() == float(np.float32(np.float32(third[0] + third[1]) + third[2]))


def test_max_norm_renormalises_rows_in_place():
    torch.manual_seed(2)
    w = torch.randn(5, 3) * 3
    w_t = w.clone()
    idx = torch.tensor([0, 2, 2])
    y = SF.embedding(idx, w, max_norm=1.5)
    y_t = torch.nn.functional.embedding(idx, w_t, max_norm=1.5)
    assert torch.allclose(w, w_t, atol=1e-6) and torch.allclose(y, y_t, atol=1e-6)
    assert torch.equal(w[1], w_t[1]) and torch.equal(w[3], w_t[3])  # untouched rows
    norms = w[[0, 2]].norm(dim=1)
    assert (norms <= 1.5 + 1e-6).all()
    with pytest.raises(NotImplementedError, match="norm_type=3"):
        SF.embedding(idx, w, max_norm=1.0, norm_type=3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["2d", "offsets", "last_offset", "padding"])
def test_embedding_bag_close_to_torch_forward_and_backward(mode, layout):
    torch.manual_seed(3)
    w = torch.randn(9, 4, requires_grad=True)
    kw = {}
    if layout == "2d":
        inp = torch.tensor([[1, 2, 2], [8, 0, 2]])
    else:
        inp = torch.tensor([1, 2, 2, 8, 0, 2, 5, 5])
        kw["offsets"] = torch.tensor([0, 3, 3, 6] + ([8] if layout == "last_offset" else []))
        kw["include_last_offset"] = layout == "last_offset"
        if layout == "padding":
            kw["padding_idx"] = 2
    y = SF.embedding_bag(inp, w, mode=mode, **kw)
    w_t = w.detach().clone().requires_grad_()
    y_t = torch.nn.functional.embedding_bag(inp, w_t, mode=mode, **kw)
    assert y.shape == y_t.shape
    if mode == "max":
        assert torch.equal(y, y_t)
    else:
        assert torch.allclose(y, y_t, atol=1e-6)
    dy = torch.randn(*y.shape)
    y.backward(dy)
    y_t.backward(dy)
    assert torch.allclose(w.grad, w_t.grad, atol=1e-6)


def test_embedding_bag_sum_is_ordered_with_per_sample_weights():
    w = torch.zeros(3, 1)
    w[0, 0], w[1, 0], w[2, 0] = 2.0 ** 25, 1.0, -(2.0 ** 25)
    w.requires_grad_()
    psw = torch.tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    inp = torch.tensor([0, 1, 2, 1])
    y = SF.embedding_bag(inp, w, torch.tensor([0]), mode="sum", per_sample_weights=psw)
    # ((2^25 + 1) - 2^25) + 1 in float32, added in position order: 1
    assert y.item() == 1.0
    y.backward(torch.tensor([[3.0]]))
    assert w.grad[:, 0].tolist() == [3.0, 6.0, 3.0]
    assert psw.grad.tolist() == [3.0 * 2 ** 25, 3.0, -3.0 * 2 ** 25, 3.0]
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        SF.embedding_bag(inp, w, torch.tensor([0]), mode="mean", per_sample_weights=psw)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        SF.embedding_bag(inp, w, torch.tensor([1, 3]), mode="sum")
    with pytest.raises(samebits.SamebitsError, match="index element 1 is 3"):
        SF.embedding(torch.tensor([0, 3]), w)


def test_max_bag_gradient_goes_to_the_first_winner():
    w = torch.tensor([[1.0, 5.0], [1.0, 2.0], [0.5, 5.0]], requires_grad=True)
    y = SF.embedding_bag(torch.tensor([0, 1, 2]), w, torch.tensor([0, 3]), mode="max")
    assert y.tolist() == [[1.0, 5.0], [0.0, 0.0]]  # an empty bag gives 0
    y.backward(torch.tensor([[7.0, 9.0], [11.0, 13.0]]))
    assert w.grad.tolist() == [[7.0, 9.0], [0.0, 0.0], [0.0, 0.0]]


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(20, 8, padding_idx=0)
        self.bag = torch.nn.EmbeddingBag(20, 8, mode="mean")
        self.head = torch.nn.Linear(8, 5)

    def forward(self, tokens, offsets):
        h = self.tok(tokens).mean(1) + self.bag(tokens.reshape(-1), offsets)
        return self.head(torch.relu(h))


def _tiny_run(threads):
    samebits.manual_seed(5)
    torch.manual_seed(5)
    model = samebits.from_torch_module(Tiny(), strict=True)
    tokens = torch.tensor([[3, 3, 0, 19], [7, 1, 1, 1], [0, 0, 4, 3]])
    offsets = torch.tensor([0, 4, 8])
    was = samebits.get_num_threads()
    samebits.set_num_threads(threads)
    try:
        with torch.autograd.profiler.profile() as fwd:
            out = model(tokens, offsets)
            loss = SF.cross_entropy(out, torch.tensor([1, 4, 0]))
        with torch.autograd.profiler.profile() as bwd:
            loss.backward()
    finally:
        samebits.set_num_threads(was)
    return model, out, fwd, bwd


def test_tiny_model_converted_strict_runs_no_pytorch_arithmetic():
    model, out, fwd, bwd = _tiny_run(1)
    assert isinstance(model.tok, samebits.nn.Embedding)
    assert isinstance(model.bag, samebits.nn.EmbeddingBag)
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []
    assert torch.equal(model.tok.weight.grad[0], torch.zeros(8))  # the padding row
    model3, out3, _, _ = _tiny_run(3)
    assert torch.equal(_bits(out), _bits(out3))
    for (n, p), p3 in zip(model.named_parameters(), model3.parameters()):
        assert torch.equal(_bits(p.grad), _bits(p3.grad)), n


def test_conversion_refuses_sparse():
    with pytest.raises(samebits.UnsupportedModuleError, match="sparse=True"):
        samebits.from_torch_module(torch.nn.Embedding(4, 2, sparse=True))
    with pytest.raises(samebits.UnsupportedModuleError, match="norm_type"):
        samebits.from_torch_module(torch.nn.EmbeddingBag(4, 2, max_norm=1.0, norm_type=3.0))
