"""Recurrent layers (contract section 7, "Recurrent layers"): nn.RNN (tanh,
relu), nn.LSTM (proj_size too), nn.GRU and their cells, as a fixed sequence
of samebits ops (linear, add, sub, mul, sigmoid, tanh, relu, dropout and
their backward ops); no kernel of their own. Each direction's time loop is
one C call (sb_rnn_forward / sb_rnn_backward) that runs those ops step by
step.

One torch.autograd.Function runs a whole stack (every layer and direction):
its backward walks time in reverse itself and forms each parameter's
gradient as ONE linear backward over all time steps, so no gradient is left
to PyTorch's engine to add up in an order samebits does not fix.

Sequences are held time-major and packed: `x` is (R, I), rows (t, n) for
t = 0..T-1 and n = 0..batch_sizes[t]-1 (PyTorch's PackedSequence.data
layout); an unpacked (T, N, I) input is the packed form with every batch
size N. batch_sizes never increase, so step t updates rows 0..b_t-1 of the
(N, .) state and the other rows keep theirs.
"""
import numpy as np
import torch
from torch.autograd.function import once_differentiable
from torch.nn.utils.rnn import PackedSequence

from .. import ops as _ops
from .. import random as _random
from .._convert import (to_np, to_torch, dense, empty, zeros, full, concat, take, put, op_scope,
                        zeros_like_place)

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_c = dense   # a C-contiguous array of a's values (a itself when it already is one)


class _Spec:
    """What one stack call computes: mode, sizes, the packed layout and the
    inter-layer dropout (seed, stream, offset: section 11's elements)."""

    def __init__(self, mode, layers, directions, hidden, proj, bias, batch_sizes, dropout,
                 training, seed, stream, offset, fn):
        self.mode, self.layers, self.directions = mode, layers, directions
        self.hidden, self.proj, self.bias = hidden, proj, bias
        self.out = proj if proj else hidden
        self.batch_sizes = [int(b) for b in batch_sizes]
        self.dropout, self.training = float(dropout), bool(training)
        self.seed, self.stream, self.offset = seed, stream, offset
        self.fn = fn
        # made in the module's forward, where grad mode still says whether
        # a backward can follow (inside the autograd function it is off)
        self.grad_enabled = torch.is_grad_enabled()

    def per_direction(self):
        return 2 + (2 if self.bias else 0) + (1 if self.proj else 0)

    def weights(self, flat, layer, d):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of (layer, direction) from the
        flat list in PyTorch's _flat_weights order."""
        k = self.per_direction() * (layer * self.directions + d)
        w = flat[k:k + self.per_direction()]
        b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
        w_hr = w[-1] if self.proj else None
        return w[0], w[1], b_ih, b_hh, w_hr

    def drops(self, layer):
        return self.training and self.dropout != 0.0 and layer < self.layers - 1


# ---- one direction of one layer over the whole sequence -------------------
# The time loop is sb_rnn_forward / sb_rnn_backward (src/ops/recurrent.c):
# the contract's sequence of ops, step after step, in one C call.

def _direction_forward(spec, x, h0, c0, w, reverse, keep):
    """x (R, I), h0 (N, out), c0 (N, hidden) or None. Returns y (R, out),
    h_n, c_n and what the backward needs (h_prev, saved; None unless keep)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    gx = _ops.linear(x, w_ih, b_ih)                     # (R, G*hidden), all steps at once
    y, h, c, h_prev, saved = _ops._rnn_forward(spec.mode, reverse, spec.batch_sizes, gx, h0, c0,
                                               w_hh, b_hh, w_hr, keep)
    return y, h, c, (h_prev, saved)


def _direction_backward(spec, x, w, saved_all, dy, dh_n, dc_n, reverse, need):
    """Backward through time of one direction: t from the last step the
    forward made to its first. Returns dx (or None), dh0, dc0 and the
    parameter gradients (w_ih, w_hh, b_ih, b_hh, w_hr; None where not needed)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = w
    h_prev, saved = saved_all
    want_dw_hr = w_hr is not None and need["w_hr"]
    dgx_all, dgh_all, dh_all, dh0, dc0 = _ops._rnn_backward(
        spec.mode, reverse, spec.batch_sizes, w_hh, w_hr, saved, dy, dh_n, dc_n, want_dw_hr)
    # parameter gradients: one linear backward over every step's rows
    dx, dw_ih, db_ih = _ops._linear_backward(dgx_all, x, w_ih, need["x"], need["w_ih"],
                                             need["b_ih"])
    # b_ih's and b_hh's gradients are the same canonical sums when dgh is
    # dgx (every mode but the GRU): summed once
    shared_db = dgh_all is dgx_all and need["b_ih"] and need["b_hh"]
    _, dw_hh, db_hh = _ops._linear_backward(dgh_all, h_prev, w_hh, False, need["w_hh"],
                                            need["b_hh"] and not shared_db)
    if shared_db:
        db_hh = db_ih.copy()
    dw_hr = None
    if want_dw_hr:   # m = o * tanh(c'), saved's last plane
        dw_hr = _ops._linear_backward(dh_all, saved[-1], w_hr, False, True, False)[1]
    return dx, dh0, dc0, (dw_ih, dw_hh, db_ih, db_hh, dw_hr)


# ---- the whole stack ----------------------------------------------------------

class _Stack(torch.autograd.Function):
    """(spec, x (R, I), h0 (L*D, N, out), c0 (L*D, N, hidden) or None,
    *weights) -> (y (R, D*out), h_n, c_n (an empty tensor unless LSTM))."""

    @staticmethod
    def forward(ctx, spec, x, h0, c0, *weights):
        fn = spec.fn
        flat = [to_np(wt, fn, "weight %d" % k) for k, wt in enumerate(weights)]
        inp = to_np(x, fn, "input")
        h0n = to_np(h0, fn, "hx")
        c0n = None if c0 is None else to_np(c0, fn, "hx[1]")
        L, D = spec.layers, spec.directions
        hn = empty(h0n.shape)
        cn = None if c0n is None else empty(c0n.shape)
        inputs, saved, masks = [], [], []
        keep = spec.grad_enabled and any(ctx.needs_input_grad)   # a backward may follow
        offset = spec.offset
        for layer in range(L):
            outs = []
            for d in range(D):
                k = layer * D + d
                y, h, c, s = _direction_forward(spec, inp, h0n[k], None if c0n is None else c0n[k],
                                                spec.weights(flat, layer, d), d == 1, keep)
                outs.append(y)
                hn[k] = h
                if cn is not None:
                    cn[k] = c
                saved.append(s)
            inputs.append(inp)
            y = outs[0] if D == 1 else concat(outs, axis=1)
            if spec.drops(layer):
                y, mask = _ops._dropout(y, spec.dropout, True, spec.seed, spec.stream, offset)
                offset += y.size
                masks.append(mask)
            else:
                masks.append(None)
            inp = y
        ctx.spec, ctx.flat, ctx.inputs, ctx.saved, ctx.masks = spec, flat, inputs, saved, masks
        ctx.has_c0 = c0 is not None
        # an unused output's gradient is made here, on the operands' device,
        # not by autograd (whose zeros would be host memory for a mirror tensor)
        ctx.set_materialize_grads(False)
        ctx.shapes = (inp.shape, hn.shape, None if cn is None else cn.shape)
        out_c = to_torch(cn) if cn is not None else torch.empty(0)
        if cn is None:
            ctx.mark_non_differentiable(out_c)
        return to_torch(inp), to_torch(hn), out_c

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, dh_n, dc_n):
        spec, flat = ctx.spec, ctx.flat
        fn = spec.fn
        L, D, P = spec.layers, spec.directions, spec.per_direction()
        needs = ctx.needs_input_grad
        given = [None if g is None else to_np(g, fn, name) for g, name in
                 ((dy, "grad"), (dh_n, "grad of h_n"), (dc_n if ctx.has_c0 else None, "grad of c_n"))]
        dyn, dhn, dcn = (zeros(shape) if g is None and shape is not None else g
                         for g, shape in zip(given, ctx.shapes))
        dh0 = empty(dhn.shape)
        dc0 = None if dcn is None else empty(dcn.shape)
        grads = [None] * len(flat)
        names = ("w_ih", "w_hh", "b_ih", "b_hh", "w_hr")
        for layer in reversed(range(L)):
            if ctx.masks[layer] is not None:
                dyn = _ops._dropout_backward(dyn, ctx.masks[layer], spec.dropout, True)
            need_x = layer > 0 or needs[1]
            dx = None
            for d in range(D):
                k = layer * D + d
                base = P * k
                present = [True, True, spec.bias, spec.bias, bool(spec.proj)]
                index, need = {}, {"x": need_x}
                j = 0
                for name, there in zip(names, present):
                    index[name] = base + j if there else None
                    need[name] = there and needs[4 + base + j]
                    j += 1 if there else 0
                dyd = _c(dyn[:, d * spec.out:(d + 1) * spec.out])
                dxd, dh, dc, dws = _direction_backward(
                    spec, ctx.inputs[layer], spec.weights(flat, layer, d), ctx.saved[k], dyd,
                    dhn[k], None if dcn is None else dcn[k], d == 1, need)
                dh0[k] = dh
                if dc0 is not None:
                    dc0[k] = dc
                for name, g in zip(names, dws):
                    if index[name] is not None and g is not None:
                        grads[index[name]] = to_torch(g)
                if need_x:   # reverse direction's dx added to the forward one's
                    dx = dxd if dx is None else _ops.add(dx, dxd)
            dyn = dx
        dx_out = to_torch(dyn) if needs[1] else None
        return (None, dx_out, to_torch(dh0) if needs[2] else None,
                to_torch(dc0) if (needs[3] and dc0 is not None) else None, *grads)


class _Rows(torch.autograd.Function):
    """Rows of dim 1 taken in `order` (a permutation): exact both ways, the
    backward puts each row back where it came from."""

    @staticmethod
    def forward(ctx, x, order):
        ctx.order = order
        return to_torch(take(to_np(x, "rnn", "hx"), order, 1))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        d = to_np(dy, "rnn", "grad")
        dx = empty(d.shape)
        put(dx, ctx.order, 1, d)
        return to_torch(dx), None


def _permuted(x, order):
    return x if order is None else _Rows.apply(x, order)


# ---- packing (exact moves; strict mode routes torch's to these) -----------

def _int_list(t, fn, name):
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int64 or t.dim() != 1 or \
            t.device.type != "cpu":
        raise TypeError("samebits.%s: %s must be a 1-D int64 CPU tensor" % (fn, name))
    return [int(v) for v in t.tolist()]


class _Pack(torch.autograd.Function):
    """padded (T, B, *) -> data (sum(lengths), *): rows (t, b) for b below
    batch_sizes[t]; the backward puts each row back (zeros elsewhere)."""

    @staticmethod
    def forward(ctx, x, batch_sizes):
        a = to_np(x, "pack_padded_sequence", "input")
        ctx.shape, ctx.batch_sizes = a.shape, batch_sizes
        return to_torch(concat([a[t, :b] for t, b in enumerate(batch_sizes)]))

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        d = to_np(dy, "pack_padded_sequence", "grad")
        dx = zeros(ctx.shape)
        r = 0
        for t, b in enumerate(ctx.batch_sizes):
            dx[t, :b] = d[r:r + b]
            r += b
        return to_torch(dx), None


class _Unpack(torch.autograd.Function):
    """data -> padded (total_length, B, *) filled with padding_value; the
    backward gathers the rows back."""

    @staticmethod
    def forward(ctx, data, batch_sizes, padding_value, total_length):
        a = to_np(data, "pad_packed_sequence", "data")
        ctx.batch_sizes = batch_sizes
        out = full((total_length, batch_sizes[0]) + a.shape[1:], padding_value)
        r = 0
        for t, b in enumerate(batch_sizes):
            out[t, :b] = a[r:r + b]
            r += b
        return to_torch(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        d = to_np(dy, "pad_packed_sequence", "grad")
        return (to_torch(concat([d[t, :b] for t, b in enumerate(ctx.batch_sizes)])),
                None, None, None)


def pack_padded(input, lengths, batch_first):
    """torch._pack_padded_sequence's contract as exact row moves: (data,
    batch_sizes). lengths sorted decreasing, each in 1..T."""
    fn = "pack_padded_sequence"
    lens = _int_list(lengths, fn, "lengths")
    x = input.transpose(0, 1) if batch_first else input
    if not lens or lens[-1] <= 0:
        raise ValueError("samebits.%s: every length must be greater than 0" % fn)
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise ValueError("samebits.%s: lengths must be sorted in decreasing order "
                         "(or pass enforce_sorted=False)" % fn)
    if len(lens) != x.shape[1] or lens[0] > x.shape[0]:
        raise ValueError("samebits.%s: %d lengths up to %d for an input of %d sequences of "
                         "length %d" % (fn, len(lens), lens[0], x.shape[1], x.shape[0]))
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    return _Pack.apply(x, batch_sizes), torch.tensor(batch_sizes, dtype=torch.int64)


def pad_packed(data, batch_sizes, batch_first, padding_value, total_length):
    """torch._pad_packed_sequence's contract: (padded, lengths)."""
    fn = "pad_packed_sequence"
    sizes = _int_list(batch_sizes, fn, "batch_sizes")
    total_length = max(int(total_length), len(sizes))
    out = _Unpack.apply(data, sizes, float(padding_value), total_length)
    lengths = [sum(1 for b in sizes if b > n) for n in range(sizes[0])]
    return (out.transpose(0, 1) if batch_first else out), torch.tensor(lengths, dtype=torch.int64)


# ---- modules ---------------------------------------------------------------

def _init_all(module):
    """PyTorch's RNN init, U(-1/sqrt(hidden), 1/sqrt(hidden)) for every
    parameter, from one Philox stream per parameter (samebits.random)."""
    params = list(module.parameters())
    first = _random._next_streams(len(params))
    _random.fan_in_uniform_(params, module.hidden_size, _random.initial_seed(), first)


def give_dropout_stream(module):
    """The inter-layer dropout's Philox (seed, stream, offset), like
    nn.Dropout's: every RNN/LSTM/GRU owns the next Dropout stream, used or
    not."""
    module.seed = _random.initial_seed()
    module.stream = _random._next_dropout_stream()
    module.offset = 0


def _check_state(name, t, shape, fn):
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError("samebits.nn.%s: %s must be a tensor, got %s" % (fn, name, type(t).__name__))
    if tuple(t.shape) != tuple(shape):
        raise ValueError("samebits.nn.%s: %s must have shape %s, got %s"
                         % (fn, name, tuple(shape), tuple(t.shape)))


class _RNNMixin:
    """nn.RNN / nn.LSTM / nn.GRU forward as samebits ops (contract section 7,
    "Recurrent layers")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        give_dropout_stream(self)

    def reset_parameters(self):
        _init_all(self)

    def forward(self, input, hx=None):
        fn = type(self).__name__
        mode = self.mode
        is_lstm = mode == "LSTM"
        D = 2 if self.bidirectional else 1
        L = self.num_layers
        proj = getattr(self, "proj_size", 0)
        out_size = proj if proj else self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in batch_sizes]
            x = data
            N = batch_sizes[0]
            batched = True
            order = None if sorted_indices is None else sorted_indices.cpu().numpy()
            back_order = None if unsorted_indices is None else unsorted_indices.cpu().numpy()
        else:
            if not isinstance(input, torch.Tensor):
                raise TypeError("samebits.nn.%s: input must be a tensor or a PackedSequence, got %s"
                                % (fn, type(input).__name__))
            if input.dim() not in (2, 3):
                raise ValueError("samebits.nn.%s: input must be 2-D (L, H_in) or 3-D, got %d-D"
                                 % (fn, input.dim()))
            batched = input.dim() == 3
            seq = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                seq = seq.transpose(0, 1)
            T, N = seq.shape[0], seq.shape[1]
            if T == 0 or N == 0:
                raise ValueError("samebits.nn.%s: input has an empty sequence or batch (shape %s)"
                                 % (fn, tuple(input.shape)))
            batch_sizes = [N] * T
            x = seq.reshape(T * N, seq.shape[2])
            order = back_order = None
        if x.shape[-1] != self.input_size:
            raise ValueError("samebits.nn.%s: input.size(-1) must be equal to input_size. "
                             "Expected %d, got %d" % (fn, self.input_size, x.shape[-1]))
        h0 = c0 = None
        if hx is not None:
            if is_lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError("samebits.nn.LSTM: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0 = hx
            if not batched:
                if h0.dim() != 2:
                    raise ValueError("samebits.nn.%s: for unbatched 2-D input, hx should also "
                                     "be 2-D but got %d-D" % (fn, h0.dim()))
                h0 = h0.unsqueeze(1)
                c0 = None if c0 is None else c0.unsqueeze(1)
            _check_state("h_0" if is_lstm else "hx", h0, (L * D, N, out_size), fn)
            _check_state("c_0", c0, (L * D, N, self.hidden_size), fn)
            h0, c0 = _permuted(h0, order), None if c0 is None else _permuted(c0, order)
        if h0 is None:
            h0 = zeros_like_place((L * D, N, out_size), x, fn, "input")
        if is_lstm and c0 is None:
            c0 = zeros_like_place((L * D, N, self.hidden_size), x, fn, "input")
        spec = _Spec(mode, L, D, self.hidden_size, proj, self.bias, batch_sizes, self.dropout,
                     self.training, self.seed, self.stream, self.offset, fn)
        if any(spec.drops(layer) for layer in range(L)):
            self.offset += (L - 1) * x.shape[0] * D * out_size
        y, hn, cn = _Stack.apply(spec, x, h0, c0, *self._flat_weights)
        hn = _permuted(hn, back_order)
        cn = _permuted(cn, back_order) if is_lstm else None
        if packed:
            out = PackedSequence(y, input.batch_sizes, input.sorted_indices,
                                 input.unsorted_indices)
        else:
            out = y.view(len(batch_sizes), N, D * out_size)
            if batched and self.batch_first:
                out = out.transpose(0, 1)
            if not batched:
                out, hn = out.squeeze(1), hn.squeeze(1)
                cn = None if cn is None else cn.squeeze(1)
        return (out, (hn, cn)) if is_lstm else (out, hn)

    def extra_repr(self):
        return super().extra_repr() + ", seed=%d, stream=%#x, offset=%d" % (
            self.seed, self.stream, self.offset)


class RNN(_RNNMixin, torch.nn.RNN):
    """Elman RNN: h_t = tanh or relu(x_t W_ih^T + b_ih + h W_hh^T + b_hh)."""


class LSTM(_RNNMixin, torch.nn.LSTM):
    """LSTM (gates i, f, g, o; proj_size: h = (o * tanh(c)) W_hr^T)."""


class GRU(_RNNMixin, torch.nn.GRU):
    """GRU: n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)),
    h = (h_prev - n) * z + n."""


class _CellMixin:
    """The cells are the stack with one layer, one direction, one step."""

    def reset_parameters(self):
        _init_all(self)

    def _mode(self):
        if isinstance(self, torch.nn.LSTMCell):
            return "LSTM"
        if isinstance(self, torch.nn.GRUCell):
            return "GRU"
        return "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input, hx=None):
        fn = type(self).__name__
        mode = self._mode()
        if not isinstance(input, torch.Tensor) or input.dim() not in (1, 2):
            raise ValueError("samebits.nn.%s: expected input to be 1-D or 2-D" % fn)
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise ValueError("samebits.nn.%s: input has %d features, expected input_size %d"
                             % (fn, x.shape[1], self.input_size))
        N = x.shape[0]
        h0 = c0 = None
        if hx is not None:
            if mode == "LSTM":
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError("samebits.nn.LSTMCell: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0 = hx
            if not batched:
                h0 = h0.unsqueeze(0)
                c0 = None if c0 is None else c0.unsqueeze(0)
            _check_state("h_0" if mode == "LSTM" else "hx", h0, (N, self.hidden_size), fn)
            _check_state("c_0", c0, (N, self.hidden_size), fn)
            h0 = h0.unsqueeze(0)
            c0 = None if c0 is None else c0.unsqueeze(0)
        if h0 is None:
            h0 = zeros_like_place((1, N, self.hidden_size), x, fn, "input")
        if mode == "LSTM" and c0 is None:
            c0 = zeros_like_place((1, N, self.hidden_size), x, fn, "input")
        spec = _Spec(mode, 1, 1, self.hidden_size, 0, self.bias, [N], 0.0, False, 0, 0, 0, fn)
        weights = [self.weight_ih, self.weight_hh] + \
            ([self.bias_ih, self.bias_hh] if self.bias else [])
        _, hn, cn = _Stack.apply(spec, x, h0, c0, *weights)
        hn = hn[0] if batched else hn[0, 0]
        if mode != "LSTM":
            return hn
        return hn, (cn[0] if batched else cn[0, 0])


class RNNCell(_CellMixin, torch.nn.RNNCell):
    """One Elman step (tanh or relu)."""


class LSTMCell(_CellMixin, torch.nn.LSTMCell):
    """One LSTM step; returns (h, c)."""


class GRUCell(_CellMixin, torch.nn.GRUCell):
    """One GRU step."""


# Every autograd function's forward and backward is one op scope
# (_convert.op_scope): its operands' device is its results'.
for _cls in (_Stack, _Rows, _Pack, _Unpack):
    _cls.forward = staticmethod(op_scope(_cls.forward))
    _cls.backward = staticmethod(op_scope(_cls.backward))
del _cls
