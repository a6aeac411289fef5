"""The pre-norm transformer block of tests/test_autograd_transformer.c,
written in PyTorch and converted with from_torch_module: it runs forward
and backward under strict mode with no PyTorch computing kernel (embedding,
RMS norm on torch >= 2.4 else layer norm, q/k/v/o projections, causal
attention as q k^T * scale + a float mask and softmax, a GELU MLP, residual
adds, a head tied to the embedding, cross-entropy), and gives PyTorch's
loss and gradients closely."""
import math

import pytest
import torch

import samebits
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing

V, T, D, H, FF = 11, 5, 8, 2, 16
HD = D // H


def _norm():
    return torch.nn.RMSNorm(D, eps=1e-5) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(D)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.pos = torch.nn.Parameter(torch.randn(T, D) * 0.5)
        self.n1 = _norm()
        self.q = torch.nn.Linear(D, D, bias=False)
        self.k = torch.nn.Linear(D, D, bias=False)
        self.v = torch.nn.Linear(D, D, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)
        self.n2 = torch.nn.LayerNorm(D)
        self.fc1 = torch.nn.Linear(D, FF)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(FF, D)
        self.nf = _norm()
        self.register_buffer("mask", torch.full((T, T), -math.inf).triu(1))

    def forward(self, tokens):
        b = tokens.shape[0]

        def heads(t):
            return t.reshape(b, T, H, HD).transpose(1, 2).reshape(b * H, T, HD)

        x = self.emb(tokens) + self.pos
        h = self.n1(x)
        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        s = q @ k.transpose(1, 2) * (1.0 / math.sqrt(HD)) + self.mask
        a = (torch.softmax(s, -1) @ v).reshape(b, H, T, HD).transpose(1, 2).reshape(b, T, D)
        x = x + self.o(a)
        x = x + self.fc2(self.act(self.fc1(self.n2(x))))
        return self.nf(x) @ self.emb.weight.t()


def _loss(model, tokens, targets, ce):
    logits = model(tokens)
    return ce(logits.reshape(-1, V), targets.reshape(-1))


def test_transformer_block_converts_runs_strict_and_matches_pytorch():
    torch.manual_seed(14)
    m = Block()
    samebits.manual_seed(0)
    sb = samebits.from_torch_module(Block())
    sb.load_state_dict(m.state_dict())
    for name in ("emb", "n1", "q", "n2", "fc1", "act", "nf"):
        assert type(getattr(sb, name)).__module__ == "samebits.nn", name
    tokens = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    targets = torch.tensor([[1, 4, 1, 5, 9], [2, 6, 5, 3, 5]])

    with torch.autograd.profiler.profile() as fwd:
        loss = _loss(sb, tokens, targets, SF.cross_entropy)
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    assert _computing(_aten_ops(fwd), False) == []
    # AccumulateGrad may allocate a parameter's .grad with the parameter's
    # strides (new_empty_strided) before copying into it: allocation only
    assert [op for op in _computing(_aten_ops(bwd), True)
            if op != ("aten::new_empty_strided", "torch::autograd::AccumulateGrad")] == []

    want = _loss(m, tokens, targets, torch.nn.functional.cross_entropy)
    want.backward()
    assert torch.allclose(loss, want, rtol=1e-5, atol=1e-6)
    grads = dict(m.named_parameters())
    for name, p in sb.named_parameters():
        assert p.grad is not None, name
        assert torch.allclose(p.grad, grads[name].grad, rtol=1e-3, atol=1e-5), name

    report = samebits.audit(m, tokens, print_report=False)
    assert not report.missing
    covered = {op for op, _ in report.covered}
    assert {"torch.softmax", "Tensor.matmul", "Tensor.add", "Tensor.mul",
            "samebits.nn.Embedding (module)", "samebits.nn.GELU (module)"} <= covered


def test_transformer_block_same_bits_on_a_second_run():
    torch.manual_seed(15)
    samebits.manual_seed(0)
    sb = samebits.from_torch_module(Block())
    tokens = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    targets = torch.tensor([[1, 4, 1, 5, 9], [2, 6, 5, 3, 5]])
    runs = []
    for _ in range(2):
        sb.zero_grad()
        loss = _loss(sb, tokens, targets, SF.cross_entropy)
        loss.backward()
        runs.append([loss.detach().clone()] + [p.grad.clone() for p in sb.parameters()])
    for a, b in zip(*runs):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
