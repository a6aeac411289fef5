"""Recurrent layers (contract section 7, "Recurrent layers"): samebits.nn.RNN,
LSTM, GRU and their cells, converted from PyTorch's.

* outputs, final states and every gradient (input, h_0/c_0, parameters)
  close to PyTorch's float64 run of the same module: |a - b| <= 2e-5 +
  1e-4 |b| (float32 against float64 over a few steps);
* bits equal to a restatement written here from samebits.ops, step by step,
  of the contract's sequence (forward of each cell, backward of RNN and
  LSTM with the parameter gradients as one linear backward over all steps);
* bits identical at 1, 2, 3, 4 and 7 threads and at every ISA level this
  machine runs (odd sizes, training mode with dropout), also with batches
  large enough that each step runs as row slices on the thread pool
  (src/ops/recurrent.c), packed ones with slices of uneven sizes;
* packed sequences (enforce_sorted both ways) against PyTorch, and each
  sequence of a packed batch bit-identical to the sequence run alone;
* inter-layer dropout: the (seed, stream, offset) elements of section 11;
* an embedding -> LSTM -> linear model under strict mode runs no PyTorch
  computing kernel forward or backward (_strict_run_like_pytorch), also
  with pack_padded_sequence / pad_packed_sequence in its forward (routed to
  exact row moves), also with enforce_sorted=False (the lengths sorted in
  the contract's stable order, ties in ascending position), bits equal at
  1 and 3 threads;
* bad arguments raise naming the parameter."""
import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch


def _bits(t):
    if isinstance(t, torch.Tensor):
        t = t.detach().numpy()
    return np.ascontiguousarray(t, dtype=np.float32).view(np.uint32)


def _close(got, want, what):
    got, want = got.detach().double(), want.detach().double()
    assert got.shape == want.shape, what
    assert torch.allclose(got, want, rtol=1e-4, atol=2e-5), \
        "%s: max |diff| %g" % (what, (got - want).abs().max().item())


def _flat(out):
    """A module's outputs as a list of tensors (PackedSequence -> data)."""
    res = []
    for o in (out if isinstance(out, tuple) else (out,)):
        if isinstance(o, tuple):
            res += _flat(o)
        elif isinstance(o, torch.nn.utils.rnn.PackedSequence):
            res.append(o.data)
        elif o is not None:
            res.append(o)
    return res


def _loss(outs):
    """A loss that weighs every output element differently."""
    total = 0
    for o in outs:
        w = torch.linspace(-1.0, 1.5, o.numel(), dtype=o.dtype).view(o.shape)
        total = total + (o * w).sum()
    return total


CONFIGS = {
    "rnn_tanh": (torch.nn.RNN, dict(input_size=5, hidden_size=7)),
    "rnn_relu_2l_bi": (torch.nn.RNN, dict(input_size=5, hidden_size=6, num_layers=2,
                                          nonlinearity="relu", bidirectional=True)),
    "lstm": (torch.nn.LSTM, dict(input_size=5, hidden_size=7)),
    "lstm_2l_bi_proj": (torch.nn.LSTM, dict(input_size=5, hidden_size=7, num_layers=2,
                                            bidirectional=True, proj_size=3)),
    "lstm_nobias_batch_first": (torch.nn.LSTM, dict(input_size=5, hidden_size=4, bias=False,
                                                    batch_first=True)),
    "gru_3l_bi_nobias": (torch.nn.GRU, dict(input_size=5, hidden_size=6, num_layers=3,
                                            bidirectional=True, bias=False)),
    "gru_batch_first": (torch.nn.GRU, dict(input_size=5, hidden_size=9, batch_first=True,
                                           num_layers=2)),
}


def _states(m, n, gen, batched=True):
    d = (2 if m.bidirectional else 1) * m.num_layers
    out = getattr(m, "proj_size", 0) or m.hidden_size
    lead = (d, n) if batched else (d,)
    h0 = torch.randn(*lead, out, generator=gen)
    if isinstance(m, torch.nn.LSTM):
        return (h0, torch.randn(*lead, m.hidden_size, generator=gen))
    return h0


def _run(module, x, hx):
    """Forward, the weighted loss, backward; returns outputs and gradients."""
    x = x.detach().clone().requires_grad_()
    if hx is not None:
        hx = tuple(h.detach().clone().requires_grad_() for h in hx) \
            if isinstance(hx, tuple) else hx.detach().clone().requires_grad_()
    module.zero_grad(set_to_none=True)
    outs = _flat(module(x) if hx is None else module(x, hx))
    _loss(outs).backward()
    grads = [x.grad] + ([h.grad for h in hx] if isinstance(hx, tuple) else
                        [] if hx is None else [hx.grad])
    return outs, grads + [p.grad for p in module.parameters()]


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("with_state", [False, True])
def test_close_to_torch_float64(name, with_state):
    cls, kw = CONFIGS[name]
    torch.manual_seed(3)
    m = cls(**kw)
    samebits.manual_seed(0)
    sb = samebits.from_torch_module(m)
    g = torch.Generator().manual_seed(5)
    T, N = 6, 3
    shape = (N, T, kw["input_size"]) if kw.get("batch_first") else (T, N, kw["input_size"])
    x = torch.randn(*shape, generator=g)
    hx = _states(m, N, g) if with_state else None
    outs, grads = _run(sb, x, hx)
    m64 = m.double()
    hx64 = None if hx is None else (tuple(h.double() for h in hx) if isinstance(hx, tuple)
                                    else hx.double())
    outs64, grads64 = _run(m64, x.double(), hx64)
    assert len(outs) == len(outs64) and len(grads) == len(grads64)
    for k, (a, b) in enumerate(zip(outs, outs64)):
        _close(a, b, "output %d" % k)
    for k, (a, b) in enumerate(zip(grads, grads64)):
        _close(a, b, "gradient %d" % k)


@pytest.mark.parametrize("cls", [torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU])
def test_unbatched_input_is_the_batch_of_one(cls):
    torch.manual_seed(4)
    sb = samebits.from_torch_module(cls(3, 5, num_layers=2))
    x = torch.randn(4, 3)
    hx = _states(sb, 1, torch.Generator().manual_seed(1), batched=False)
    one = _flat(sb(x, hx))
    hx3 = tuple(h.unsqueeze(1) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(1)
    batched = _flat(sb(x.unsqueeze(1), hx3))
    assert [o.shape for o in one] == [o.squeeze(1).shape for o in batched]
    for a, b in zip(one, batched):
        assert np.array_equal(_bits(a), _bits(b.squeeze(1)))


@pytest.mark.parametrize("cls", [torch.nn.RNNCell, torch.nn.LSTMCell, torch.nn.GRUCell])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_cells_close_to_torch_float64(cls, with_state, batched):
    torch.manual_seed(6)
    kw = {"nonlinearity": "relu"} if cls is torch.nn.RNNCell and with_state else {}
    m = cls(4, 6, bias=not batched, **kw)
    sb = samebits.from_torch_module(m)
    g = torch.Generator().manual_seed(2)
    lead = (3,) if batched else ()
    x = torch.randn(*lead, 4, generator=g)
    hx = None
    if with_state:
        hx = torch.randn(*lead, 6, generator=g)
        if cls is torch.nn.LSTMCell:
            hx = (hx, torch.randn(*lead, 6, generator=g))
    outs, grads = _run(sb, x, hx)
    hx64 = None if hx is None else (tuple(h.double() for h in hx) if isinstance(hx, tuple)
                                    else hx.double())
    outs64, grads64 = _run(m.double(), x.double(), hx64)
    for k, (a, b) in enumerate(zip(outs + grads, outs64 + grads64)):
        _close(a, b, "result %d" % k)


# ---- the contract's sequence, restated step by step ----

def _np(t):
    return t.detach().numpy()


def _restated_forward(mode, x, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """One layer, forward direction, x (T, N, I): the contract's step with
    x's own linear per step (the same chains as one linear over all rows)."""
    T, N = x.shape[:2]
    G = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    H = w_hh.shape[0] // G
    h = np.zeros((N, w_hh.shape[1]), np.float32)
    c = np.zeros((N, H), np.float32)
    ys = []
    for t in range(T):
        gx = ops.linear(x[t], w_ih, b_ih)
        gh = ops.linear(h, w_hh, b_hh)
        if mode == "LSTM":
            a = ops.add(gx, gh)
            i, f = ops.sigmoid(a[:, :H]), ops.sigmoid(a[:, H:2 * H])
            gg, o = ops.tanh(a[:, 2 * H:3 * H]), ops.sigmoid(a[:, 3 * H:])
            c = ops.add(ops.mul(f, c), ops.mul(i, gg))
            h = ops.mul(o, ops.tanh(c))
            if w_hr is not None:
                h = ops.linear(h, w_hr)
        elif mode == "GRU":
            r = ops.sigmoid(ops.add(gx[:, :H], gh[:, :H]))
            z = ops.sigmoid(ops.add(gx[:, H:2 * H], gh[:, H:2 * H]))
            n = ops.tanh(ops.add(gx[:, 2 * H:], ops.mul(r, gh[:, 2 * H:])))
            h = ops.add(ops.mul(ops.sub(h, n), z), n)
        else:
            h = ops.tanh(ops.add(gx, gh)) if mode == "RNN_TANH" else ops.relu(ops.add(gx, gh))
        ys.append(h)
    return np.stack(ys), h, c


@pytest.mark.parametrize("cls,kw,mode", [
    (torch.nn.RNN, {}, "RNN_TANH"), (torch.nn.RNN, {"nonlinearity": "relu"}, "RNN_RELU"),
    (torch.nn.LSTM, {}, "LSTM"), (torch.nn.LSTM, {"proj_size": 3}, "LSTM"),
    (torch.nn.GRU, {}, "GRU")])
def test_forward_bits_are_the_stated_sequence(cls, kw, mode):
    torch.manual_seed(8)
    sb = samebits.from_torch_module(cls(5, 7, **kw))
    x = torch.randn(6, 4, 5) * 2
    out = _flat(sb(x))
    w = [_np(p) for p in sb.parameters()]
    y, h, c = _restated_forward(mode, x.numpy(), w[0], w[1], w[2], w[3],
                                w[4] if len(w) > 4 else None)
    assert np.array_equal(_bits(out[0]), _bits(y))
    assert np.array_equal(_bits(out[1][0]), _bits(h))
    if mode == "LSTM":
        assert np.array_equal(_bits(out[2][0]), _bits(c))


def test_rnn_and_lstm_backward_bits_are_the_stated_sequence():
    """Backward through time as the contract states it: t descending,
    dh = dy_t + carried, the weight gradients ONE linear backward over all
    steps' rows (t ascending). A per-step sum of weight gradients would give
    other bits; the check below shows it does here."""
    torch.manual_seed(9)
    T, N, I, H = 7, 3, 4, 5
    x = torch.randn(T, N, I)
    dy = torch.randn(T, N, H)
    for mode in ("RNN_TANH", "LSTM"):
        m = samebits.from_torch_module(torch.nn.RNN(I, H) if mode == "RNN_TANH"
                                       else torch.nn.LSTM(I, H))
        xg = x.clone().requires_grad_()
        y = m(xg)[0]
        y.backward(dy)
        w_ih, w_hh, b_ih, b_hh = [_np(p) for p in m.parameters()]
        # forward, keeping what the backward reads
        xs = x.numpy()
        h = np.zeros((N, H), np.float32)
        c = np.zeros((N, H), np.float32)
        keep = []
        for t in range(T):
            a = ops.add(ops.linear(xs[t], w_ih, b_ih), ops.linear(h, w_hh, b_hh))
            if mode == "LSTM":
                i, f = ops.sigmoid(a[:, :H]), ops.sigmoid(a[:, H:2 * H])
                gg, o = ops.tanh(a[:, 2 * H:3 * H]), ops.sigmoid(a[:, 3 * H:])
                c_new = ops.add(ops.mul(f, c), ops.mul(i, gg))
                tc = ops.tanh(c_new)
                keep.append((h, c, i, f, gg, o, tc))
                h, c = ops.mul(o, tc), c_new
            else:
                keep.append((h, ops.tanh(a)))
                h = keep[-1][1]
        dgates = [None] * T
        dh_s = np.zeros((N, H), np.float32)
        dc_s = np.zeros((N, H), np.float32)
        for t in reversed(range(T)):
            dh = ops.add(dy[t].numpy(), dh_s)
            if mode == "LSTM":
                hp, cp, i, f, gg, o, tc = keep[t]
                d_o = ops.sigmoid_backward(o, ops.mul(dh, tc))
                dc = ops.add(ops.tanh_backward(tc, ops.mul(dh, o)), dc_s)
                dg = np.concatenate([ops.sigmoid_backward(i, ops.mul(dc, gg)),
                                     ops.sigmoid_backward(f, ops.mul(dc, cp)),
                                     ops.tanh_backward(gg, ops.mul(dc, i)), d_o], axis=1)
                dc_s = ops.mul(dc, f)
            else:
                hp, hn = keep[t]
                dg = ops.tanh_backward(hn, dh)
            dgates[t] = dg
            dh_s = ops.linear_backward(dg, hp, w_hh)[0]
        dG = np.concatenate(dgates)
        hprev = np.concatenate([k[0] for k in keep])
        dx, dw_ih, db_ih = ops.linear_backward(dG, xs.reshape(T * N, I), w_ih)
        _, dw_hh, db_hh = ops.linear_backward(dG, hprev, w_hh)
        assert np.array_equal(_bits(xg.grad), _bits(dx.reshape(T, N, I)))
        for p, want in zip(m.parameters(), (dw_ih, dw_hh, db_ih, db_hh)):
            assert np.array_equal(_bits(p.grad), _bits(want)), mode
        # the summation order is not a detail: summing per-step gradients
        # differs in some bit
        per_step = ops.linear_backward(dgates[0], keep[0][0], w_hh)[1]
        for t in range(1, T):
            per_step = ops.add(per_step, ops.linear_backward(dgates[t], keep[t][0], w_hh)[1])
        assert np.allclose(per_step, dw_hh, rtol=1e-5, atol=1e-6)
        if mode == "LSTM":
            assert not np.array_equal(_bits(per_step), _bits(dw_hh))


@pytest.mark.parametrize("mode", ["GRU", "LSTM_PROJ", "RNN_RELU"])
def test_gru_projection_and_relu_backward_bits_are_the_stated_sequence(mode):
    """The GRU's backward (dgh differs from dgx in its n chunk: dn * r), the
    LSTM projection's (dm = dh . W_hr, dW_hr from every step's dh and m) and
    the relu RNN's, restated step by step from samebits.ops, against the
    layer's own gradients (sb_rnn_backward's walk), with nonzero dh_n/dc_n."""
    torch.manual_seed(12)
    T, N, I, H, P = 6, 3, 4, 5, 3
    module = {"GRU": lambda: torch.nn.GRU(I, H), "RNN_RELU": lambda: torch.nn.RNN(I, H, nonlinearity="relu"),
              "LSTM_PROJ": lambda: torch.nn.LSTM(I, H, proj_size=P)}[mode]()
    m = samebits.from_torch_module(module)
    out_w = P if mode == "LSTM_PROJ" else H
    x = torch.randn(T, N, I)
    dy = torch.randn(T, N, out_w)
    dh_n = torch.randn(1, N, out_w)
    dc_n = torch.randn(1, N, H)
    xg = x.clone().requires_grad_()
    y, state = m(xg)
    outs = [y, state[0], state[1]] if mode == "LSTM_PROJ" else [y, state]
    grads = [dy, dh_n, dc_n] if mode == "LSTM_PROJ" else [dy, dh_n]
    torch.autograd.backward(outs, grads)
    w = [_np(p) for p in m.parameters()]
    w_ih, w_hh, b_ih, b_hh = w[:4]
    w_hr = w[4] if mode == "LSTM_PROJ" else None
    xs = x.numpy()
    h = np.zeros((N, out_w), np.float32)
    c = np.zeros((N, H), np.float32)
    keep = []
    for t in range(T):
        gx, gh = ops.linear(xs[t], w_ih, b_ih), ops.linear(h, w_hh, b_hh)
        if mode == "GRU":
            r = ops.sigmoid(ops.add(gx[:, :H], gh[:, :H]))
            z = ops.sigmoid(ops.add(gx[:, H:2 * H], gh[:, H:2 * H]))
            ghn = np.ascontiguousarray(gh[:, 2 * H:])
            n = ops.tanh(ops.add(gx[:, 2 * H:], ops.mul(r, ghn)))
            a = ops.sub(h, n)
            keep.append((h, r, z, n, ghn, a))
            h = ops.add(ops.mul(a, z), n)
        elif mode == "RNN_RELU":
            pre = ops.add(gx, gh)
            keep.append((h, pre))
            h = ops.relu(pre)
        else:
            a = ops.add(gx, gh)
            i, f = ops.sigmoid(a[:, :H]), ops.sigmoid(a[:, H:2 * H])
            gg, o = ops.tanh(a[:, 2 * H:3 * H]), ops.sigmoid(a[:, 3 * H:])
            c_new = ops.add(ops.mul(f, c), ops.mul(i, gg))
            tc = ops.tanh(c_new)
            mm = ops.mul(o, tc)
            keep.append((h, c, i, f, gg, o, tc, mm))
            h, c = ops.linear(mm, w_hr), c_new
    dgx_all, dgh_all, dh_all = [None] * T, [None] * T, [None] * T
    dh_s, dc_s = dh_n[0].numpy(), dc_n[0].numpy()
    for t in reversed(range(T)):
        dh = ops.add(dy[t].numpy(), dh_s)
        dh_all[t] = dh
        if mode == "GRU":
            hp, r, z, n, ghn, a = keep[t]
            dd = ops.mul(dh, z)
            dn = ops.tanh_backward(n, ops.sub(dh, dd))
            d_r = ops.sigmoid_backward(r, ops.mul(dn, ghn))
            d_z = ops.sigmoid_backward(z, ops.mul(dh, a))
            dgx_all[t] = np.concatenate([d_r, d_z, dn], axis=1)
            dgh_all[t] = np.concatenate([d_r, d_z, ops.mul(dn, r)], axis=1)
            dh_s = ops.add(dd, ops.linear_backward(dgh_all[t], hp, w_hh)[0])
            continue
        if mode == "RNN_RELU":
            hp, pre = keep[t]
            dgx_all[t] = dgh_all[t] = ops.relu_backward(pre, dh)
        else:
            hp, cp, i, f, gg, o, tc, mm = keep[t]
            dm = ops.linear_backward(dh, mm, w_hr)[0]
            d_o = ops.sigmoid_backward(o, ops.mul(dm, tc))
            dc = ops.add(ops.tanh_backward(tc, ops.mul(dm, o)), dc_s)
            dgx_all[t] = dgh_all[t] = np.concatenate(
                [ops.sigmoid_backward(i, ops.mul(dc, gg)), ops.sigmoid_backward(f, ops.mul(dc, cp)),
                 ops.tanh_backward(gg, ops.mul(dc, i)), d_o], axis=1)
            dc_s = ops.mul(dc, f)
        dh_s = ops.linear_backward(dgh_all[t], hp, w_hh)[0]
    hprev = np.concatenate([k[0] for k in keep])
    dx, dw_ih, db_ih = ops.linear_backward(np.concatenate(dgx_all), xs.reshape(T * N, I), w_ih)
    _, dw_hh, db_hh = ops.linear_backward(np.concatenate(dgh_all), hprev, w_hh)
    want = [dw_ih, dw_hh, db_ih, db_hh]
    if mode == "LSTM_PROJ":
        want.append(ops.linear_backward(np.concatenate(dh_all), np.concatenate([k[7] for k in keep]),
                                        w_hr)[1])
    assert np.array_equal(_bits(xg.grad), _bits(dx.reshape(T, N, I))), mode
    for p, g in zip(m.parameters(), want):
        assert np.array_equal(_bits(p.grad), _bits(g)), (mode, p.shape)


# ---- threads and ISA levels ----

def _training_step_hashes(m, x, hx):
    m.zero_grad(set_to_none=True)
    out = _flat(m(x, hx))
    _loss(out).backward()
    return [samebits.get_hash(o.detach()) for o in out] + \
        [samebits.get_hash([p.grad for p in m.parameters()])]


def test_bits_identical_at_thread_counts_and_isa_levels():
    torch.manual_seed(10)
    torch_m = torch.nn.LSTM(24, 40, num_layers=2, bidirectional=True, dropout=0.25,
                            proj_size=17)
    x = torch.randn(9, 13, 24)
    hx = _states(torch_m, 13, torch.Generator().manual_seed(3))
    results = {}
    isas = [i for i in ("scalar", "sse2", "avx2", "avx512") if _can_set_isa(i)]
    was_threads, was_isa = samebits.get_num_threads(), samebits.utils.isa()
    try:
        for threads in (1, 2, 3, 4, 7):
            for isa in isas:
                samebits.set_num_threads(threads)
                samebits.utils.set_isa(isa)
                samebits.manual_seed(21)
                m = samebits.from_torch_module(torch_m)
                results[(threads, isa)] = _training_step_hashes(m, x, hx)
    finally:
        samebits.set_num_threads(was_threads)
        samebits.utils.set_isa(was_isa)
    first = results[(1, isas[0])]
    assert len(isas) >= 1 and all(r == first for r in results.values()), results


@pytest.mark.parametrize("make", [
    lambda: torch.nn.LSTM(8, 24, num_layers=2, proj_size=11),
    lambda: torch.nn.GRU(8, 48, bidirectional=True),
    lambda: torch.nn.RNN(8, 160, nonlinearity="relu")])
@pytest.mark.parametrize("packed", [False, True])
def test_bits_identical_when_steps_run_in_row_slices(make, packed):
    """A batch of 90 rows: from 2 threads on, every step of these modules
    runs as slices of its rows over the pool (a slice has at least 4096 /
    (gates x hidden) rows: 43, 29 and 26 here), at 1 thread as one piece;
    packed, the batch shrinks from 90 to 37 rows over the steps, so slices
    differ in size from step to step and the last steps run whole."""
    torch.manual_seed(12)
    torch_m = make()
    T, N = 5, 90
    x = torch.randn(T, N, 8)
    if packed:
        lengths = torch.tensor(sorted(np.random.default_rng(4).integers(1, T + 1, N).tolist(),
                                      reverse=True))
        lengths[:37] = T
        x = pack_padded_sequence(x, lengths)
    hx = _states(torch_m, N, torch.Generator().manual_seed(5))
    was = samebits.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3, 7):
            samebits.set_num_threads(threads)
            m = samebits.from_torch_module(torch_m)
            results.append(_training_step_hashes(m, x, hx))
    finally:
        samebits.set_num_threads(was)
    assert all(r == results[0] for r in results), results


def _can_set_isa(name):
    was = samebits.utils.isa()
    try:
        samebits.utils.set_isa(name)
    except Exception:
        return False
    finally:
        samebits.utils.set_isa(was)
    return True


# ---- packed sequences ----

@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_packed_sequences_close_to_torch_float64(enforce_sorted, cls):
    torch.manual_seed(11)
    m = cls(4, 6, num_layers=2, bidirectional=True)
    sb = samebits.from_torch_module(m)
    lengths = torch.tensor([6, 5, 3, 3, 1]) if enforce_sorted else torch.tensor([3, 6, 1, 5, 3])
    g = torch.Generator().manual_seed(4)
    x = torch.randn(6, 5, 4, generator=g)
    hx = _states(m, 5, g)

    def run(module, dtype):
        xx = x.detach().to(dtype).clone().requires_grad_()
        h = tuple(v.detach().to(dtype).clone().requires_grad_() for v in hx) \
            if isinstance(hx, tuple) else hx.detach().to(dtype).clone().requires_grad_()
        module.zero_grad(set_to_none=True)
        packed = pack_padded_sequence(xx, lengths, enforce_sorted=enforce_sorted)
        outs = _flat(module(packed, h))
        _loss(outs).backward()
        hs = h if isinstance(h, tuple) else (h,)
        return outs + [xx.grad] + [v.grad for v in hs] + [p.grad for p in module.parameters()]

    got, want = run(sb, torch.float32), run(m.double(), torch.float64)
    for k, (a, b) in enumerate(zip(got, want)):
        _close(a, b, "result %d" % k)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU])
def test_each_packed_sequence_is_the_sequence_alone(cls):
    """Rows never mix: a sequence's outputs and final states in a packed
    batch are the bits it gets alone (batch invariance, both directions)."""
    torch.manual_seed(12)
    sb = samebits.from_torch_module(cls(4, 5, num_layers=2, bidirectional=True))
    lengths = [2, 5, 4]
    x = torch.randn(5, 3, 4)
    hx = _states(sb, 3, torch.Generator().manual_seed(6))
    out, hn = sb(pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=False), hx)
    padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out)
    for n, L in enumerate(lengths):
        h1 = tuple(h[:, n:n + 1] for h in hx) if isinstance(hx, tuple) else hx[:, n:n + 1]
        alone, hn1 = sb(x[:L, n:n + 1], h1)
        assert np.array_equal(_bits(padded[:L, n:n + 1]), _bits(alone))
        for a, b in zip(_flat(hn), _flat(hn1)):
            assert np.array_equal(_bits(a[:, n:n + 1]), _bits(b))


# ---- inter-layer dropout ----

def test_inter_layer_dropout_is_philox_between_layers():
    """A 2-layer LSTM in training mode equals layer 0, samebits dropout with
    the module's (seed, stream, offset), then layer 1; offset advances."""
    torch.manual_seed(13)
    samebits.manual_seed(5)
    two = samebits.from_torch_module(torch.nn.LSTM(4, 6, num_layers=2, dropout=0.4))
    l0 = samebits.nn.LSTM(4, 6)
    l1 = samebits.nn.LSTM(6, 6)
    with torch.no_grad():
        for name, p in two.named_parameters():
            layer, base = (l0, name[:-1] + "0") if name.endswith("l0") else (l1, name[:-1] + "0")
            getattr(layer, base).copy_(p)
    x = torch.randn(5, 3, 4)
    assert two.offset == 0
    out, _ = two(x)
    assert two.offset == 5 * 3 * 6
    mid, _ = l0(x)
    dropped = SF.dropout(mid, 0.4, True, two.seed, two.stream, 0)
    assert not torch.equal(dropped, mid)
    want, _ = l1(dropped)
    assert np.array_equal(_bits(out), _bits(want))
    again, _ = two(x)      # the next call uses the next elements
    assert not torch.equal(again, out)
    two.eval()
    ev, _ = two(x)
    assert two.offset == 2 * 5 * 3 * 6
    assert np.array_equal(_bits(ev), _bits(l1(l0(x)[0])[0]))


def test_dropout_streams_follow_manual_seed():
    m = torch.nn.GRU(3, 4, num_layers=3, dropout=0.5)
    x = torch.randn(4, 2, 3)
    runs = []
    for _ in range(2):
        samebits.manual_seed(7)
        sb = samebits.from_torch_module(m)
        out, h = sb(x)
        _loss([out, h]).backward()
        runs.append([_bits(out), _bits(h)] + [_bits(p.grad) for p in sb.parameters()])
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


# ---- construction ----

def test_samebits_construction_is_philox_and_matches_init_module():
    samebits.manual_seed(3)
    a = samebits.nn.LSTM(4, 5, num_layers=2, proj_size=2)
    samebits.manual_seed(3)
    b = samebits.nn.LSTM(4, 5, num_layers=2, proj_size=2)
    for p, q in zip(a.parameters(), b.parameters()):
        assert np.array_equal(_bits(p), _bits(q))
    bound = np.float32(1) / np.sqrt(np.float32(5))
    assert all(float(p.detach().abs().max()) <= bound for p in a.parameters())
    c = samebits.init_module(torch.nn.LSTM(4, 5, num_layers=2, proj_size=2), 3)
    for p, q in zip(a.parameters(), c.parameters()):
        assert np.array_equal(_bits(p), _bits(q))


# ---- strict mode: a sequence model ----

class SequenceModel(torch.nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM -> linear on the
    last step."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 6)
        self.lstm = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.emb(tokens))
        return self.head(out[:, -1])


class GRUModel(torch.nn.Module):
    """A GRU, then an LSTMCell stepped over its outputs (the cell's weights
    are used once per step: their gradients are added by PyTorch's engine,
    the accumulation test_strict allows), the head on both final states."""
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 6)
        self.gru = torch.nn.GRU(6, 5, batch_first=True)
        self.cell = torch.nn.LSTMCell(5, 4)
        self.head = torch.nn.Linear(9, 3)

    def forward(self, tokens):
        out, h = self.gru(self.emb(tokens))
        hc = None
        for t in range(out.shape[1]):
            hc = self.cell(out[:, t], hc)
        return self.head(torch.cat([hc[0], h[0]], dim=1))


@pytest.mark.parametrize("make", [SequenceModel, GRUModel])
def test_strict_sequence_model_runs_no_pytorch_kernel(make):
    torch.manual_seed(14)
    m = make()
    sb = samebits.from_torch_module(m)
    tokens = torch.tensor([[1, 4, 4, 9, 0, 2, 10], [3, 3, 8, 1, 7, 6, 5]])
    _strict_run_like_pytorch(sb, m, tokens)
    assert all(p.grad is not None for p in sb.parameters())


class PackedModel(torch.nn.Module):
    """pack_padded_sequence (sorted lengths) -> LSTM -> pad_packed_sequence
    inside the forward: strict mode routes the packing to exact moves."""

    def __init__(self, batch_first):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 6)
        self.lstm = torch.nn.LSTM(6, 5, batch_first=batch_first, bidirectional=True)
        self.head = torch.nn.Linear(10, 3)
        self.batch_first = batch_first
        self.lengths = torch.tensor([7, 4])

    def forward(self, tokens):
        x = self.emb(tokens if self.batch_first else tokens.t())
        packed = pack_padded_sequence(x, self.lengths, batch_first=self.batch_first)
        out, _ = self.lstm(packed)
        padded, lengths = torch.nn.utils.rnn.pad_packed_sequence(
            out, batch_first=self.batch_first, padding_value=0.25, total_length=9)
        assert lengths.tolist() == [7, 4] and padded.shape[1 if self.batch_first else 0] == 9
        last = padded[:, 3] if self.batch_first else padded[3]
        return self.head(last)


@pytest.mark.parametrize("batch_first", [False, True])
def test_strict_packed_model_runs_no_pytorch_kernel(batch_first):
    torch.manual_seed(15)
    m = PackedModel(batch_first)
    sb = samebits.from_torch_module(m)
    tokens = torch.tensor([[1, 4, 4, 9, 0, 2, 10], [3, 3, 8, 1, 0, 0, 0]])
    _strict_run_like_pytorch(sb, m, tokens)


class UnsortedPackedModel(torch.nn.Module):
    """pack_padded_sequence(enforce_sorted=False) -> LSTM -> pad_packed_sequence:
    PyTorch sorts the lengths (torch.sort, descending; strict mode: the
    contract's stable order, equal lengths in ascending position), reorders
    the batch with index_select and inverts the permutation (an int64
    arange scattered to distinct positions: exact, passed through)."""

    def __init__(self, lengths):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 5, batch_first=True)
        self.head = torch.nn.Linear(5, 2)
        self.lengths = lengths
        self.order = None

    def forward(self, x):
        packed = pack_padded_sequence(x, self.lengths, batch_first=True, enforce_sorted=False)
        self.order = (packed.sorted_indices.tolist(), packed.unsorted_indices.tolist())
        out, _ = self.lstm(packed)
        padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return self.head(padded.sum(1))


# int64 work of pack_padded_sequence(enforce_sorted=False) and
# pad_packed_sequence: the inverse permutation (an arange scattered to
# distinct positions) and the lengths put back in batch order
# (lengths[unsorted_indices]); no float tensor reaches them in this model
INTEGER_MOVES = {"aten::arange", "aten::scatter_", "aten::index"}


def test_strict_unsorted_packed_lstm_runs_no_pytorch_kernel():
    from test_strict import _aten_ops, _computing
    lengths = torch.tensor([4, 6, 4, 2, 6])   # ties: 6 at 1 and 4, 4 at 0 and 2
    torch.manual_seed(16)
    m = UnsortedPackedModel(lengths)
    samebits.manual_seed(0)
    sb = samebits.from_torch_module(m)
    x = torch.randn(5, 6, 3, requires_grad=True)
    with torch.autograd.profiler.profile() as fwd:
        out = sb(x)
        loss = SF.cross_entropy(out, torch.tensor([0, 1, 1, 0, 1]))
    with torch.autograd.profiler.profile() as bwd:
        loss.backward()
    assert [op for op in _computing(_aten_ops(fwd), False) if op[0] not in INTEGER_MOVES] == []
    seen_b = _aten_ops(bwd)
    assert seen_b and _computing(seen_b, True) == []
    assert x.grad is not None and all(p.grad is not None for p in sb.parameters())
    # the stable order: longest first, equal lengths in ascending position
    assert sb.order == ([1, 4, 0, 2, 3], [2, 0, 3, 4, 1])
    assert torch.allclose(out, m(x), rtol=1e-4, atol=1e-5)
    report = samebits.audit(m, x, print_report=False)
    assert not report.missing, report
    assert ("torch.sort", "<root>") in report.covered


def test_unsorted_packed_lstm_same_bits_at_1_and_3_threads():
    lengths = torch.tensor([3, 6, 3, 5, 6, 1])
    torch.manual_seed(17)
    m = UnsortedPackedModel(lengths)
    x = torch.randn(6, 6, 3)
    was = samebits.get_num_threads()
    runs = []
    try:
        for threads in (1, 3):
            samebits.set_num_threads(threads)
            samebits.manual_seed(0)
            sb = samebits.from_torch_module(m)
            xx = x.clone().requires_grad_()
            out = sb(xx)
            SF.cross_entropy(out, torch.tensor([0, 1, 1, 0, 1, 0])).backward()
            runs.append([_bits(t) for t in [out, xx.grad] + [p.grad for p in sb.parameters()]])
    finally:
        samebits.set_num_threads(was)
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


def test_strict_integer_sort_is_the_stable_order():
    """torch.sort / argsort of an integer tensor in strict model code: the
    contract's order (ties in ascending position, both directions), what
    PyTorch's stable sort gives."""

    class Sorter(torch.nn.Module):
        def forward(self, v):
            return torch.sort(v, descending=True), v.argsort(), torch.sort(v, dim=0)

    v = torch.tensor([[3, 1, 3, 2, 1, 3], [0, 0, -5, 7, 7, 0]])
    with samebits.StrictMode(Sorter()):
        (dv, di), ai, (v0, i0) = Sorter()(v)
    want_dv, want_di = torch.sort(v, descending=True, stable=True)
    assert torch.equal(dv, want_dv) and torch.equal(di, want_di)
    assert torch.equal(ai, torch.sort(v, stable=True).indices)
    assert torch.equal(v0, torch.sort(v, dim=0, stable=True).values)
    assert torch.equal(i0, torch.sort(v, dim=0, stable=True).indices)
    assert dv.dtype == torch.int64 and di.dtype == torch.int64


@pytest.mark.parametrize("batch_first", [False, True])
def test_routed_packing_moves_bits_like_torch(batch_first):
    from samebits.nn import recurrent
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*((3, 5) if batch_first else (5, 3)), 2, generator=g)
    lengths = torch.tensor([5, 3, 2])
    for pack in (recurrent.pack_padded, torch._VF._pack_padded_sequence):
        xx = x.clone().requires_grad_()
        data, sizes = pack(xx, lengths, batch_first)
        padded, lens = (recurrent.pad_packed if pack is recurrent.pack_padded else
                        torch._VF._pad_packed_sequence)(data, sizes, batch_first, -1.5, 6)
        (padded * torch.arange(padded.numel(), dtype=torch.float32).view(padded.shape)).sum() \
            .backward()
        if pack is recurrent.pack_padded:
            got = (data, sizes, padded, lens, xx.grad)
        else:
            want = (data, sizes, padded, lens, xx.grad)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    with pytest.raises(ValueError, match="decreasing"):
        recurrent.pack_padded(x, torch.tensor([2, 3, 1]), batch_first)
    with pytest.raises(ValueError, match="greater than 0"):
        recurrent.pack_padded(x, torch.tensor([3, 2, 0]), batch_first)
    with pytest.raises(TypeError, match="lengths"):
        recurrent.pack_padded(x, [3, 2, 1], batch_first)


# ---- refusals ----# ---- refusals ----

@pytest.mark.parametrize("call,match", [
    (lambda m: m(torch.randn(3, 2, 5)), "input_size"),
    (lambda m: m(torch.randn(2, 3, 4, 4)), "input must be 2-D"),
    (lambda m: m(torch.randn(0, 2, 4)), "empty"),
    (lambda m: m(torch.randn(3, 2, 4), torch.randn(2, 2, 6)), "h_0"),
    (lambda m: m(torch.randn(3, 2, 4), (torch.randn(1, 2, 6), torch.randn(1, 3, 6))), "c_0"),
    (lambda m: m(torch.randn(3, 2, 4), torch.randn(1, 2, 6)), "tuple"),
    (lambda m: m(torch.randn(3, 2, 4).double()), "float32"),
])
def test_bad_arguments_are_named(call, match):
    m = samebits.from_torch_module(torch.nn.LSTM(4, 6))
    with pytest.raises((ValueError, TypeError), match=match):
        call(m)
