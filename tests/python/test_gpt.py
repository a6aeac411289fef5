"""The small GPT of `samebits train --model gpt` (include/samebits/gpt.h),
written as a PyTorch user would write it - nn.Embedding, nn.RMSNorm,
rotary embeddings computed in forward with `**`, cos and sin, rotate_half
by slicing and torch.cat, F.scaled_dot_product_attention(is_causal=True),
bias-free nn.Linear, exact GELU - and converted with from_torch_module: with
the C model's initialisation (N(0, 0.02^2) from Philox stream k for matrix
k, norm weights 1), the command's windows (sb_rng_bounded keyed by step and
row) and samebits' AdamW, three training steps in Python give the four hash
lines of `samebits train --model gpt --steps 3`: the same initial model,
trained model and held-out logits, bit for bit (contract section 19, "A
small GPT"); and the weights of the C command's checkpoint give its logits. Needs torch >= 2.4 (nn.RMSNorm and
F.rms_norm; tests/check_python_pypi.sh runs it under the pinned torch 2.x)
and the corpus of Debian's fortunes-min."""
import ctypes
import hashlib
import json
import os
import struct
import subprocess

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import _lib
from samebits.nn import functional as SF

from conftest import cli_path

CORPUS = os.environ.get("SB_TEST_CORPUS", "/usr/share/games/fortunes/literature")
T, D, H, L = 64, 64, 4, 2  # the defaults of train --model gpt
E = D // H

pytestmark = [
    pytest.mark.skipif(not hasattr(torch.nn, "RMSNorm"),
                       reason="nn.RMSNorm arrived in torch 2.4; torch %s lacks it" % torch.__version__),
    pytest.mark.skipif(not os.path.exists(CORPUS), reason="no corpus at %s (fortunes-min)" % CORPUS),
]


def rotate_half(x):
    return torch.cat((-x[..., E // 2:], x[..., :E // 2]), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (torch.nn.Linear(D, D, bias=False) for _ in range(4))

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = (m(x).view(b, t, H, E).transpose(1, 2) for m in (self.q, self.k, self.v))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(o.transpose(1, 2).reshape(b, t, D))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(D, 4 * D, bias=False)
        self.proj = torch.nn.Linear(4 * D, D, bias=False)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.attn = torch.nn.RMSNorm(D, eps=1e-5), Attention()
        self.ln2, self.mlp = torch.nn.RMSNorm(D, eps=1e-5), MLP()

    def forward(self, x, cos, sin):
        x = x + self.attn(self.ln1(x), cos, sin)
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(vocab, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
        self.ln_f = torch.nn.RMSNorm(D, eps=1e-5)
        self.head = torch.nn.Linear(D, vocab, bias=False)
        # integers, exact in float32; the tables are computed in forward,
        # where strict mode runs cos and sin correctly rounded
        self.register_buffer("even", torch.arange(0, E, 2).float(), persistent=False)
        self.register_buffer("position", torch.arange(T).float(), persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        inv_freq = 1.0 / (10000.0 ** (self.even / E))
        freqs = self.position[:t, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.tok_emb(idx)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        return self.head(self.ln_f(x))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(
            np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(info["shape"]).copy())
    return out


WINDOWS_STREAM = 0x475054574E440000  # gpt_train.c: SB_STREAM_GPT_WINDOWS


def lines_of(out):
    return dict(l.split(": ", 1) for l in out.splitlines() if l.startswith("Hash of"))


def corpus_tokens():
    with open(CORPUS, "rb") as f:
        data = f.read()
    symbols = sorted(set(data))
    token = {b: i for i, b in enumerate(symbols)}
    return np.array([token[b] for b in data], dtype=np.int64), len(symbols)


def windows(ids, starts):
    x = np.stack([ids[s:s + T] for s in starts])
    y = np.stack([ids[s + 1:s + T + 1] for s in starts])
    return torch.from_numpy(x), torch.from_numpy(y.reshape(-1))


def held_out(ids):
    n_train = len(ids) - len(ids) // 10
    return windows(ids, [n_train + w * T for w in range(8)])[0]


def sha(t):
    return hashlib.sha256(t.detach().contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def converted(vocab):
    samebits.manual_seed(0)
    model = samebits.from_torch_module(GPT(vocab))
    with torch.no_grad():  # sb_module_init of sb_model_gpt, seed 0
        for k, (_, p) in enumerate(model.named_parameters()):
            if p.dim() == 2:
                p.copy_(torch.from_numpy(samebits.random.normal(tuple(p.shape), 0, k, 0.0, 0.02)))
            else:
                p.fill_(1.0)
    return model


def test_pytorch_gpt_trains_to_the_c_commands_hash_lines(tmp_path):
    steps, batch = 3, 8
    ck = str(tmp_path / "gpt.safetensors")
    out = subprocess.run([cli_path(), "train", "--model", "gpt", "--corpus", CORPUS, "--steps", str(steps),
                          "--save", ck], check=True, capture_output=True, text=True).stdout
    want = lines_of(out)
    assert len(want) == 3, out
    ids, vocab = corpus_tokens()
    n_train = len(ids) - len(ids) // 10
    model = converted(vocab)
    assert samebits.get_hash(model) == want["Hash of the initial model"]
    opt = samebits.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for s in range(steps):
        rng = _lib.Rng(0, WINDOWS_STREAM + s, 0)
        starts = np.empty(batch, dtype=np.uint32)
        _lib.call("sb_rng_bounded", ctypes.byref(rng), 0, n_train - T, ctypes.c_void_p(starts.ctypes.data), batch)
        x, y = windows(ids, starts.astype(np.int64))
        loss = SF.cross_entropy(model(x).reshape(-1, vocab), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert samebits.get_hash(model) == want["Hash of the trained model"]
    model.eval()
    with torch.no_grad():
        assert sha(model(held_out(ids))) == want["Hash of the logits"]

    # the checkpoint's weights in a fresh module give the same logits
    saved = read_safetensors(ck)
    fresh = converted(vocab)
    weights = {k: v for k, v in saved.items() if k in fresh.state_dict()}
    assert sorted(weights) == sorted(fresh.state_dict()), "the C model's names are the module's state_dict"
    fresh.load_state_dict(weights)
    fresh.eval()
    with torch.no_grad():
        assert sha(fresh(held_out(ids))) == want["Hash of the logits"]
        # the comparison can fail: one changed weight bit changes the logits
        w = fresh.ln_f.weight
        w[0] = torch.nextafter(w[0], torch.tensor(2.0))
        assert sha(fresh(held_out(ids))) != want["Hash of the logits"]
