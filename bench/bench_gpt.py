#!/usr/bin/env python3
"""GPTs of `samebits train --model gpt`'s architecture: samebits against
PyTorch's CPU build on the same model, one run.

1. The training step (a batch of windows of `context` tokens: forward,
   cross-entropy, backward, AdamW) at 1 and 2 threads: samebits through
   bench_gpt_step, PyTorch in this process with torch.set_num_threads(T).
   Median ms, ratio.
2. Generation with a KV cache (`context` one-token greedy steps from a
   one-token prompt), tokens per second, at the same thread counts.

    SB_BUILD=build python3 bench/bench_gpt.py [--size small|issue]

Without --size both run (`make bench`). small: the model of `samebits train --model gpt` (vocab 82,
context 64, d_model 64, 4 heads, 2 layers, batch 8); issue: 6
layers, d_model 384, 6 heads, context 256, batch 8 (the performance issue's
GPT). The PyTorch model is the same architecture with the same shapes (RMS
norm, rotary positions, exact GELU, bias-free linears, untied head); its
bits are PyTorch's. The build directory comes from $SB_BUILD (default: build)."""
import argparse, math, os, subprocess, time

import torch
import torch.nn as nn
import torch.nn.functional as F

BUILD = os.environ.get("SB_BUILD", "build")
# (vocab, context, d_model, heads, layers, batch, timed training steps)
SIZES = {"small": (82, 64, 64, 4, 2, 8, 20), "issue": (82, 256, 384, 6, 6, 8, 5)}
V, T, D, H, L, B, STEPS = SIZES["small"]
E = D // H


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    return torch.cat((-x[..., E // 2:], x[..., :E // 2]), dim=-1)


def rotary(start, n):
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, E, 2).float() / E))
    freqs = torch.outer(torch.arange(start, start + n).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def attention(q, k, v, causal):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    s = q @ k.transpose(-2, -1) / math.sqrt(E)
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(-1) @ v


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))

    def forward(self, x, cos, sin, cache):
        b, t, _ = x.shape
        q, k, v = (m(x).view(b, t, H, E).transpose(1, 2) for m in (self.q, self.k, self.v))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            if cache:
                k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
            cache[:] = [k, v]
        o = attention(q, k, v, causal=t > 1)
        return self.o(o.transpose(1, 2).reshape(b, t, D))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.attn, self.ln2 = RMSNorm(D), Attention(), RMSNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D, bias=False), nn.GELU(), nn.Linear(4 * D, D, bias=False))

    def forward(self, x, cos, sin, cache):
        x = x + self.attn(self.ln1(x), cos, sin, cache)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln_f, self.head = RMSNorm(D), nn.Linear(D, V, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, start=0, caches=None):
        cos, sin = rotary(start, idx.shape[1])
        x = self.tok_emb(idx)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cos, sin, None if caches is None else caches[i])
        return self.head(self.ln_f(x))


def torch_step_ms(threads, steps, warmup=3):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    times = []
    for s in range(warmup + steps):
        x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B * T,))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).reshape(-1, V), y).backward()
        opt.step()
        if s >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def torch_tokens_per_s(threads, runs=5):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT().eval()
    rates = []
    with torch.inference_mode():
        for r in range(runs + 1):
            caches = [[] for _ in range(L)]
            tok = torch.ones(1, 1, dtype=torch.long)
            t0 = time.perf_counter()
            for p in range(T):
                tok = model(tok, p, caches)[:, -1].argmax(-1, keepdim=True)
            if r > 0:
                rates.append(T / (time.perf_counter() - t0))
    return sorted(rates)[len(rates) // 2]


def samebits_numbers(threads):
    shape = ["--layers", L, "--d-model", D, "--heads", H, "--context", T, "--batch", B]
    out = subprocess.run([os.path.join(BUILD, "bench", "bench_gpt_step"), "--threads", str(threads),
                          "--steps", str(STEPS)] + [str(a) for a in shape],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[1]), out[out.index("isa") + 1], float(out[out.index("gpt_generate_tokens_per_s") + 1])


def bench(size):
    global V, T, D, H, L, B, STEPS, E
    V, T, D, H, L, B, STEPS = SIZES[size]
    E = D // H
    print(f"GPT (vocab {V}, context {T}, d_model {D}, {H} heads, {L} layers, batch {B}), "
          f"torch {torch.__version__}; median of {STEPS} training steps")
    print(f"{'threads':>8} {'step ms: samebits':>18} {'PyTorch':>8} {'PyTorch/samebits':>17}"
          f" {'tokens/s: samebits':>19} {'PyTorch':>8} {'samebits/PyTorch':>17}  isa")
    for t in (1, 2):
        sb_ms, isa, sb_tps = samebits_numbers(t)
        pt_ms, pt_tps = torch_step_ms(t, STEPS), torch_tokens_per_s(t)
        print(f"{t:>8} {sb_ms:>18.2f} {pt_ms:>8.2f} {pt_ms / sb_ms:>16.2f}x"
              f" {sb_tps:>19.0f} {pt_tps:>8.0f} {sb_tps / pt_tps:>16.2f}x  {isa}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), help="one size (default: both)")
    size = p.parse_args().size
    for s in [size] if size else ["small", "issue"]:
        bench(s)


if __name__ == "__main__":
    main()
