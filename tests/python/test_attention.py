"""Attention in Python (contract section 19): samebits.ops and
samebits.nn.functional.scaled_dot_product_attention against PyTorch, bit
equality across thread counts, gradients, and strict mode: F.scaled_dot_
product_attention, nn.MultiheadAttention and the Transformer layers run with
no PyTorch computing kernel in forward and backward (the profiler check of
test_strict.py), and the calls samebits cannot serve are refused by name."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _aten_ops, _computing, _run_profiled, _strict_run_like_pytorch

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")  # torch >= 2.0
needs_sdpa = pytest.mark.skipif(not HAS_SDPA, reason="torch %s has no "
                                "F.scaled_dot_product_attention (added in 2.0)" % torch.__version__)


def _bits(t):
    return t.detach().numpy().view(np.uint32)


def _qkv(seed, lead=(2, 3), lq=5, lk=6, e=4, ev=3):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*lead, lq, e, generator=g), torch.randn(*lead, lk, e, generator=g),
            torch.randn(*lead, lk, ev, generator=g))


def _masks(lq, lk):
    g = torch.Generator().manual_seed(7)
    keep = torch.rand(lq, lk, generator=g) > 0.3
    keep[:, 0] = True  # no fully masked row: PyTorch's versions differ there
    return {"none": None, "bool": keep, "float": torch.randn(lq, lk, generator=g)}


# ---- the op ----

@needs_sdpa
@pytest.mark.parametrize("mask", ["none", "bool", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_close_to_torch(mask, causal):
    q, k, v = _qkv(1)
    m = _masks(5, 6)[mask]
    if causal and m is not None:
        pytest.skip("PyTorch refuses attn_mask with is_causal=True")
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)
    got, probs = ops.scaled_dot_product_attention(q, k, v, attn_mask=m, causal=causal)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3, 5), atol=1e-6)


def test_close_to_the_softmax_formula_and_scale():
    """Against the formula written with PyTorch ops (works on torch 1.13
    too), with an explicit scale and the default 1/sqrt(E)."""
    q, k, v = _qkv(2, e=9)
    for scale in (None, 0.3):
        s = 1 / 3.0 if scale is None else scale
        want = torch.softmax(q @ k.transpose(-1, -2) * s, -1) @ v
        got, _ = ops.scaled_dot_product_attention(q, k, v, scale=scale)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert ops.default_scale(64) == 0.125
    assert ops.default_scale(9) == np.float32(1 / 3.0)


@pytest.mark.parametrize("mask", ["none", "bool", "float"])
def test_bits_at_threads_1_and_3(mask):
    q, k, v = _qkv(3, lead=(3, 2), lq=17, lk=23, e=8, ev=5)
    m = _masks(17, 23)[mask]
    was = samebits.get_num_threads()
    outs = []
    try:
        for threads in (1, 3):
            samebits.set_num_threads(threads)
            qq, kk, vv = (t.clone().requires_grad_(True) for t in (q, k, v))
            out = SF.scaled_dot_product_attention(qq, kk, vv, m, 0.2, True, None, 5, 6, 7)
            out.backward(torch.ones_like(out))
            outs.append([out, qq.grad, kk.grad, vv.grad])
    finally:
        samebits.set_num_threads(was)
    for a, b in zip(*outs):
        assert (_bits(a) == _bits(b)).all()


def test_gradients_close_to_torch_autograd():
    q, k, v = _qkv(4, e=5, ev=4)
    m = _masks(5, 6)["float"]
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = SF.scaled_dot_product_attention(*leaves, attn_mask=m)
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    out.backward(dout)
    ref = [t.clone().double().requires_grad_(True) for t in (q, k, v)]
    want = torch.softmax(ref[0] @ ref[1].transpose(-1, -2) * 5 ** -0.5 + m.double(), -1) @ ref[2]
    want.backward(dout.double())
    for got, r in zip(leaves, ref):
        assert torch.allclose(got.grad.double(), r.grad, rtol=1e-4, atol=1e-5)


def test_kv_cache_decode_equals_prefill():
    """Bottom-right alignment: one query against the cache of keys 0..t
    gives row t of the causal prefill bit for bit."""
    q, k, v = _qkv(5, lead=(1, 2), lq=7, lk=7)
    full, _ = ops.scaled_dot_product_attention(q, k, v, causal="top_left")
    for t in range(7):
        one, _ = ops.scaled_dot_product_attention(q[..., t:t + 1, :], k[..., :t + 1, :],
                                                  v[..., :t + 1, :], causal="bottom_right")
        assert (_bits(one) == _bits(full[..., t:t + 1, :])).all()


def test_refusals_name_the_parameter():
    q, k, v = _qkv(6)
    with pytest.raises(samebits.SamebitsError, match="k has"):
        ops.scaled_dot_product_attention(q, k[..., :3], v)
    with pytest.raises(samebits.SamebitsError, match="dropout_p"):
        ops.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(ValueError, match="causal"):
        ops.scaled_dot_product_attention(q, k, v, causal="middle")
    with pytest.raises(ValueError, match="causal_alignment"):
        SF.scaled_dot_product_attention(q, k, v, is_causal=True, causal_alignment="up")
    with pytest.raises(samebits.SamebitsError, match="mask"):
        ops.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(4, 6))


# ---- strict mode ----

class SdpaModel(torch.nn.Module):
    """Projections, F.scaled_dot_product_attention over 2 heads, a head."""

    def __init__(self, mask=None, causal=False, p=0.0):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.head = torch.nn.Linear(8, 3)
        self.mask, self.causal, self.p = mask, causal, p

    def forward(self, x):
        n, l, _ = x.shape
        q, k, v = self.qkv(x).view(n, l, 3, 2, 4).permute(2, 0, 3, 1, 4).unbind(0)
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, is_causal=self.causal,
                                           dropout_p=self.p if self.training else 0.0)
        return self.head(h.transpose(1, 2).reshape(n, l, 8).mean(1))


@needs_sdpa
@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_strict_sdpa_model(mask):
    torch.manual_seed(0)
    m = SdpaModel(None if mask == "causal" else _masks(5, 5)[mask], mask == "causal")
    sb = samebits.from_torch_module(m)
    _strict_run_like_pytorch(sb, m, torch.randn(2, 5, 8, requires_grad=True))


@needs_sdpa
def test_strict_sdpa_dropout_is_philox_and_repeatable():
    torch.manual_seed(0)
    m = SdpaModel(p=0.3)
    outs = []
    for _ in range(2):
        samebits.manual_seed(11)
        sb = samebits.from_torch_module(m)
        x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1), requires_grad=True)
        out, fwd, bwd = _run_profiled(sb, x, torch.tensor([0, 2]))
        assert _computing(_aten_ops(fwd), False) == []
        assert _computing(_aten_ops(bwd), True) == []
        outs.append((out, x.grad))
        assert not torch.allclose(out, m.eval()(x)) and m.train()
    assert (_bits(outs[0][0]) == _bits(outs[1][0])).all()
    assert (_bits(outs[0][1]) == _bits(outs[1][1])).all()


@needs_sdpa
def test_strict_sdpa_refusals():
    q, k, v = _qkv(8)

    class Gqa(torch.nn.Module):
        def __init__(self, **kw):
            super().__init__()
            self.kw = kw

        def forward(self, q):
            return F.scaled_dot_product_attention(q, k, v, **self.kw)

    with pytest.raises(NotImplementedError, match="enable_gqa"):
        samebits.from_torch_module(Gqa(enable_gqa=True))(q)
    with pytest.raises(samebits.NotReproducibleError, match="is_causal"):
        samebits.from_torch_module(Gqa(attn_mask=torch.ones(5, 6, dtype=torch.bool),
                                       is_causal=True))(q)


class MhaModel(torch.nn.Module):
    """nn.MultiheadAttention (self- or cross-attention), averaged over the
    sequence, then a head of 3 classes."""

    def __init__(self, batch_first=True, kdim=None, vdim=None, dropout=0.0, masks=None,
                 need_weights=True, average=True):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, dropout=dropout, batch_first=batch_first,
                                                kdim=kdim, vdim=vdim)
        self.head = torch.nn.Linear(8, 3)
        self.kproj = torch.nn.Linear(8, kdim or 8)
        self.vproj = torch.nn.Linear(8, vdim or 8)
        self.batch_first, self.masks = batch_first, masks or {}
        self.need_weights, self.average = need_weights, average

    def forward(self, x):
        if not self.batch_first:
            x = x.transpose(0, 1)
        out, w = self.attn(x, self.kproj(x), self.vproj(x), need_weights=self.need_weights,
                           average_attn_weights=self.average, **self.masks)
        if self.need_weights:
            assert w.shape[-1] == 5
        if not self.batch_first:
            out = out.transpose(0, 1)
        return self.head(out.mean(1))


def _mha_masks(kind):
    g = torch.Generator().manual_seed(3)
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True  # the second sequence is 3 long
    if kind == "key_padding":
        return {"key_padding_mask": pad}
    if kind == "bool":
        m = torch.rand(5, 5, generator=g) > 0.7
        m[:, 0] = False
        return {"attn_mask": m}
    if kind == "float":
        return {"attn_mask": torch.randn(5, 5, generator=g)}
    if kind == "float+padding":
        return {"attn_mask": torch.randn(5, 5, generator=g), "key_padding_mask": pad}
    if kind == "per-head":
        return {"attn_mask": torch.randn(4, 5, 5, generator=g)}
    return {}


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masks", ["none", "key_padding", "bool", "float", "float+padding",
                                   "per-head"])
def test_strict_multihead_attention(batch_first, masks):
    torch.manual_seed(0)
    m = MhaModel(batch_first, masks=_mha_masks(masks))
    sb = samebits.from_torch_module(m)
    _strict_run_like_pytorch(sb, m, torch.randn(2, 5, 8, requires_grad=True))


@pytest.mark.parametrize("need_weights,average", [(False, True), (True, False)])
def test_strict_multihead_attention_weights_and_dims(need_weights, average):
    torch.manual_seed(1)
    m = MhaModel(kdim=6, vdim=7, need_weights=need_weights, average=average,
                 masks=_mha_masks("key_padding"))
    sb = samebits.from_torch_module(m)
    _strict_run_like_pytorch(sb, m, torch.randn(2, 5, 8, requires_grad=True))
    x = torch.randn(2, 5, 8)
    got = sb.attn(x, sb.kproj(x), sb.vproj(x), need_weights=True, average_attn_weights=average)[1]
    want = m.attn(x, m.kproj(x), m.vproj(x), need_weights=True, average_attn_weights=average)[1]
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_strict_multihead_attention_dropout_training():
    torch.manual_seed(2)
    m = MhaModel(dropout=0.25, masks=_mha_masks("key_padding"))
    outs = []
    for _ in range(2):
        samebits.manual_seed(5)
        sb = samebits.from_torch_module(m)
        x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(2), requires_grad=True)
        out, fwd, bwd = _run_profiled(sb, x, torch.tensor([0, 2]))
        assert _computing(_aten_ops(fwd), False) == []
        assert _computing(_aten_ops(bwd), True) == []
        outs.append((out, x.grad, sb.attn.in_proj_weight.grad))
    for a, b in zip(*outs):
        assert (_bits(a) == _bits(b)).all()
    # the returned weights are the dropped probabilities, as PyTorch returns them
    sb.train()
    x = torch.randn(2, 5, 8)
    _, w = sb.attn(x, x, x, average_attn_weights=False)
    assert (w == 0).any() and not torch.allclose(w.sum(-1), torch.ones(2, 2, 5))


def test_multihead_attention_refusals():
    for kw, what in (({"add_bias_kv": True}, "add_bias_kv"),
                     ({"add_zero_attn": True}, "add_zero_attn")):
        m = torch.nn.MultiheadAttention(8, 2, **kw)
        sb = samebits.from_torch_module(m)
        x = torch.randn(5, 2, 8)
        with pytest.raises(samebits.NotReproducibleError, match=what):
            sb(x, x, x)


class EncoderModel(torch.nn.Module):
    def __init__(self, norm_first, activation, dropout, decoder=False, full=False):
        super().__init__()
        kw = dict(dim_feedforward=16, dropout=dropout, activation=activation, batch_first=True,
                  norm_first=norm_first)
        self.full = full
        if full:
            self.body = torch.nn.Transformer(8, 2, 1, 1, **kw)
        elif decoder:
            self.body = torch.nn.TransformerDecoderLayer(8, 2, **kw)
        else:
            self.body = torch.nn.TransformerEncoderLayer(8, 2, **kw)
        self.decoder = decoder
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        if self.full:
            h = self.body(x, x[:, :4])
        elif self.decoder:
            h = self.body(x[:, :4], x)
        else:
            h = self.body(x)
        return self.head(h.mean(1))


@pytest.mark.parametrize("kind", ["encoder", "decoder", "transformer"])
@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_strict_transformer_layers_training(kind, norm_first, activation):
    torch.manual_seed(4)
    m = EncoderModel(norm_first, activation, 0.0, kind == "decoder", kind == "transformer")
    m.train()
    sb = samebits.from_torch_module(m)
    _strict_run_like_pytorch(sb, m, torch.randn(2, 5, 8, requires_grad=True))


def test_strict_transformer_with_dropout_runs_samebits():
    torch.manual_seed(5)
    m = EncoderModel(False, "relu", 0.1, full=True)
    samebits.manual_seed(3)
    sb = samebits.from_torch_module(m)
    out, fwd, bwd = _run_profiled(sb, torch.randn(2, 5, 8, requires_grad=True),
                                  torch.tensor([0, 2]))
    assert _computing(_aten_ops(fwd), False) == []
    assert _computing(_aten_ops(bwd), True) == []


def test_transformer_eval_mode():
    """In eval mode without gradients PyTorch would take its fused path
    (torch._transformer_encoder_layer_fwd); under strict mode it does not:
    the layer runs the routed ops (a TorchFunctionMode is active, which
    PyTorch's fast-path checks exclude), or, where a PyTorch version still
    takes it, strict mode refuses it by name."""
    torch.manual_seed(6)
    m = EncoderModel(False, "relu", 0.1).eval()
    sb = samebits.from_torch_module(m).eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        try:
            got = sb(x)
        except samebits.NotReproducibleError as e:
            assert "_transformer_encoder_layer_fwd" in str(e) or \
                "_native_multi_head_attention" in str(e)
            return
        assert torch.allclose(got, m(x), rtol=1e-4, atol=1e-5)
    report = samebits.audit(m, x, print_report=False)
    assert not report.missing
