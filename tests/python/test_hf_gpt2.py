"""Hugging Face's GPT-2 (transformers' GPT2LMHeadModel, unmodified) under
strict mode: built from a small GPT2Config (random init, no downloads, no
tokenizer: token ids made here), converted with from_torch_module, and run
forward and backward with the LM loss (labels) in training mode, with the
"eager" and the "sdpa" attention and with dropout on and off.

What samebits routes for it (samebits/strict.py): Conv1D's torch.addmm
(mm's chains, then the bias added once: linear's bits), the eager
attention's 4-D torch.matmul (one batched product over the leading dims),
its functional dropout (Philox keyed by the attention module), the causal
mask's integer arange, comparisons and where (exact, no gradient), and
Tensor.type to the same dtype; the embeddings, layer norms, GELU (tanh form,
by pow and tanh), softmax, SDPA and the cross-entropy were routed before.

Checks: PyTorch's profiler sees no aten computing kernel in forward or
backward; logits, loss and every gradient have the same bits at 1 and 3
threads and at two ISA levels; they are close to the unconverted model run
in float64 (tolerance below); three AdamW steps give the same parameters at
1 and 3 threads; samebits.audit finds nothing missing.

transformers is in the pinned PyPI environment (python/requirements-test.txt);
under Debian's PyTorch 1.13, which has no transformers, the module skips."""
import hashlib

import pytest
import torch

import samebits
from samebits import utils

from test_strict import ALLOWED, _aten_ops, _computing

transformers = pytest.importorskip("transformers")

VOCAB, POSITIONS, BATCH, LENGTH = 97, 32, 2, 16

# aten calls of the strict forward that compute no float: the causal mask
# and positions (integer arange, add, le) and the labels' padding
# (constant_pad_nd of int64) are integer work, recognised by their input
# dtypes; where selects one of two float constants (the mask's 0 and
# float32's lowest) without rounding.
FLOATS = {"float", "double", "c10::Half", "c10::BFloat16"}
SELECTION = {"aten::where"}


def forward_computing(prof):
    """Forward aten ops that may round: not in test_strict's ALLOWED (views,
    copies, allocation), not a selection, and with a float input."""
    bad = []
    for e in prof.function_events:
        if not e.name.startswith("aten::") or e.name in ALLOWED or e.name in SELECTION:
            continue
        if not set(e.input_dtypes or ["?"]) & (FLOATS | {"?"}):
            continue
        bad.append((e.name, e.cpu_parent.name if e.cpu_parent is not None else ""))
    return bad


# Closeness to PyTorch's float64 run: max |samebits - float64| over a
# tensor, divided by the tensor's largest magnitude. Differences are float32
# rounding (about 6e-8 per operation) through two blocks; the largest
# measured is 6.4e-7 (a layer-norm weight's gradient), the logits 2.1e-7.
TOL = 1e-5


def config(impl, dropout):
    return transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=POSITIONS, n_embd=64, n_layer=2, n_head=4,
        resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
        bos_token_id=0, eos_token_id=0, loss_type="ForCausalLM", attn_implementation=impl)


def model(impl, dropout):
    torch.manual_seed(0)
    m = transformers.GPT2LMHeadModel(config(impl, dropout))
    m.config._attn_implementation = impl
    m.train()
    return m


def tokens(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g)


def converted(m):
    samebits.manual_seed(0)
    return samebits.from_torch_module(m)


def run(sb, ids):
    """(logits, loss, {name: grad}) of one forward and backward."""
    for p in sb.parameters():
        p.grad = None
    out = sb(input_ids=ids, labels=ids)
    out.loss.backward()
    return out.logits.detach(), out.loss.detach(), {n: p.grad for n, p in sb.named_parameters()}


def sha(tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def isas():
    out = []
    was = utils.isa()
    for name in ("scalar", "sse2", "avx2", "avx512", "neon"):
        try:
            utils.set_isa(name)
            out.append(name)
        except samebits.SamebitsError:
            pass
    utils.set_isa(was)
    return out


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_no_pytorch_arithmetic_forward_or_backward(impl, dropout):
    sb = converted(model(impl, dropout))
    ids = tokens()
    with torch.autograd.profiler.profile(record_shapes=True) as fwd:
        loss = sb(input_ids=ids, labels=ids).loss
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    seen_b = _aten_ops(bwd)
    assert seen_b, "the profiler saw no aten op in backward: it is not measuring"
    assert forward_computing(fwd) == []
    # the engine's adds of a tensor's gradients from its consumers (the
    # residual stream, the tied embedding and head, the tanh-GELU's three
    # uses of x) are allowed, as in test_strict: README "Gradient accumulation order"
    assert _computing(seen_b, True) == []
    assert all(p.grad is not None for p in sb.parameters())
    assert torch.isfinite(loss)


def test_the_profiler_check_can_fail():
    """Unconverted, the same forward shows PyTorch's addmm, matmul and softmax."""
    m = model("eager", 0.0)
    ids = tokens()
    with torch.autograd.profiler.profile(record_shapes=True) as fwd:
        m(input_ids=ids, labels=ids)
    names = {n for n, _ in forward_computing(fwd)}
    assert {"aten::addmm", "aten::matmul", "aten::_softmax"} <= names, names


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_same_bits_at_every_thread_count_and_isa(impl, dropout):
    m = model(impl, dropout)
    ids = tokens()
    levels = isas()
    settings = [(levels[-1], 1), (levels[-1], 3)] + [(isa, 1) for isa in levels[-2:-1]]
    assert len(settings) == 3, "this machine runs only one ISA level: %s" % levels
    was_isa, was_threads = utils.isa(), samebits.get_num_threads()
    runs = {}
    try:
        for isa, threads in settings:
            utils.set_isa(isa)
            samebits.set_num_threads(threads)
            logits, loss, grads = run(converted(m), ids)
            runs[(isa, threads)] = sha([logits, loss] + list(grads.values()))
    finally:
        utils.set_isa(was_isa)
        samebits.set_num_threads(was_threads)
    assert len(set(runs.values())) == 1, runs


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_close_to_pytorch_in_float64(impl):
    m = model(impl, 0.0)
    ids = tokens()
    logits, loss, grads = run(converted(m), ids)
    ref = model(impl, 0.0).double()
    out = ref(input_ids=ids, labels=ids)
    out.loss.backward()
    want = {n: p.grad for n, p in ref.named_parameters()}
    assert sorted(want) == sorted(grads)
    worst = {}
    for name, got, exp in [("logits", logits, out.logits), ("loss", loss, out.loss)] + \
            [(n, grads[n], want[n]) for n in want]:
        exp = exp.detach()
        scale = exp.abs().max().item()
        assert scale > 0, name
        worst[name] = (got.double() - exp).abs().max().item() / scale
    assert max(worst.values()) < TOL, sorted(worst.items(), key=lambda kv: -kv[1])[:5]
    # the comparison measures float32 against float64: it sees the rounding
    assert worst["logits"] > 0


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_adamw_steps_same_bits_at_1_and_3_threads(impl):
    m = model(impl, 0.1)
    was = samebits.get_num_threads()
    hashes = []
    try:
        for threads in (1, 3):
            samebits.set_num_threads(threads)
            sb = converted(m)
            opt = samebits.optim.AdamW(sb.parameters(), lr=1e-3, weight_decay=0.01)
            losses = []
            for step in range(3):
                ids = tokens(10 + step)
                loss = sb(input_ids=ids, labels=ids).loss
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.detach())
            hashes.append((samebits.get_hash(sb), sha(losses)))
    finally:
        samebits.set_num_threads(was)
    assert hashes[0] == hashes[1]
    # the steps changed the model
    assert hashes[0][0] != samebits.get_hash(converted(m))


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_audit_finds_nothing_missing(impl, dropout):
    m = model(impl, dropout)
    ids = tokens()
    report = samebits.audit(m, input_ids=ids, labels=ids, print_report=False)
    assert not report.missing, report
    covered = {op for op, _ in report.covered}
    assert "torch.addmm" in covered
    if impl == "eager":
        assert "torch.matmul" in covered
        if dropout:
            assert "torch.nn.functional.dropout" in covered
    else:
        assert "torch.nn.functional.scaled_dot_product_attention" in covered
