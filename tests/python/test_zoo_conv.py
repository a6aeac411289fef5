"""Conv1d, ConvTranspose2d and ConvTranspose1d (contract section 7, conv1d and
conv_transpose2d): F.conv1d / F.conv_transpose{1,2}d through
samebits.nn.functional and strict mode, the modules through conversion
(stride, padding incl. 'same' and padding_mode, output_padding, output_size,
dilation, groups, bias), close to PyTorch, conv1d bitwise equal to the conv2d
it is defined as, conv_transpose1d bitwise equal to conv_transpose2d at
height 1, the same bits at threads 1/2/3/7 and every ISA level, and two small
models (a conv1d encoder with a transposed-conv decoder, a 2-D autoencoder)
converted with strict=True passing the profiler check."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import samebits
from samebits.nn import functional as SF
from test_strict import _strict_run_like_pytorch
from test_zoo_ops import _same_everywhere


def _x(shape, seed):
    return torch.from_numpy(samebits.random.normal(shape, 17, seed))


def _grads(fn, tensors, dy):
    """fn(*leaves) and the leaves' gradients for the output gradient dy."""
    leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in tensors]
    y = fn(*leaves)
    y.backward(dy)
    return [y.detach()] + [v.grad for v in leaves if v is not None]


def _close(got, want, tol=1e-5):
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert torch.allclose(g, w, rtol=tol, atol=tol), (g - w).abs().max()


CONV1D = [dict(stride=1, padding=0, dilation=1, groups=1),
          dict(stride=2, padding=3, dilation=2, groups=2),
          dict(stride=3, padding=1, dilation=1, groups=4),
          dict(stride=1, padding="same", dilation=3, groups=2),
          dict(stride=1, padding="same", dilation=1, groups=1),   # k = 4: an odd total
          dict(stride=2, padding="valid", dilation=1, groups=1)]


@pytest.mark.parametrize("kw", CONV1D)
def test_conv1d_like_pytorch_and_bitwise_the_conv2d(kw):
    g = kw["groups"]
    x, w, b = _x((3, 4, 13), 1), _x((8, 4 // g, 4), 2), _x((8,), 3)
    fn_sb = lambda x, w, b: SF.conv1d(x, w, b, **kw)  # noqa: E731
    fn_t = lambda x, w, b: F.conv1d(x, w, b, **kw)  # noqa: E731
    y = F.conv1d(x, w, b, **kw)
    dy = _x(tuple(y.shape), 4)
    got = _grads(fn_sb, (x, w, b), dy)
    _close(got, _grads(fn_t, (x, w, b), dy))
    # the definition: conv2d at height 1, bit for bit, gradients too
    pad = kw["padding"] if isinstance(kw["padding"], str) else (0, kw["padding"])

    def as_2d(x, w, b):
        return SF.conv2d(x.unsqueeze(2), w.unsqueeze(2), b, (1, kw["stride"]), pad,
                         (1, kw["dilation"]), g).squeeze(2)
    for a, c in zip(got, _grads(as_2d, (x, w, b), dy)):
        assert torch.equal(a, c)
    # unbatched input
    assert torch.equal(SF.conv1d(x[0], w, b, **kw), got[0][0])


TRANSPOSED = [dict(stride=1, padding=0, output_padding=0, groups=1, dilation=1),
              dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1),
              dict(stride=(3, 2), padding=(2, 0), output_padding=(2, 1), groups=1,
                   dilation=(1, 2)),
              dict(stride=1, padding=1, output_padding=(1, 0), groups=4, dilation=(2, 1))]


@pytest.mark.parametrize("kw", TRANSPOSED)
def test_conv_transpose2d_like_pytorch(kw):
    g = kw["groups"]
    x, w, b = _x((2, 4, 5, 6), 5), _x((4, 2, 3, 2), 6), _x((2 * g,), 7)
    y = F.conv_transpose2d(x, w, b, **kw)
    dy = _x(tuple(y.shape), 8)
    got = _grads(lambda x, w, b: SF.conv_transpose2d(x, w, b, **kw), (x, w, b), dy)
    _close(got, _grads(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), (x, w, b), dy))
    assert torch.equal(SF.conv_transpose2d(x[1], w, b, **kw), got[0][1])  # unbatched


def test_conv_transpose1d_like_pytorch_and_bitwise_the_2d_op():
    kw = dict(stride=3, padding=2, output_padding=1, groups=2, dilation=2)
    x, w, b = _x((3, 4, 9), 9), _x((4, 3, 4), 10), _x((6,), 11)
    y = F.conv_transpose1d(x, w, b, **kw)
    dy = _x(tuple(y.shape), 12)
    got = _grads(lambda x, w, b: SF.conv_transpose1d(x, w, b, **kw), (x, w, b), dy)
    _close(got, _grads(lambda x, w, b: F.conv_transpose1d(x, w, b, **kw), (x, w, b), dy))

    def as_2d(x, w, b):
        return SF.conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), b, (1, 3), (0, 2), (0, 1), 2,
                                   (1, 2)).squeeze(2)
    for a, c in zip(got, _grads(as_2d, (x, w, b), dy)):
        assert torch.equal(a, c)


def test_transposed_same_bits_at_every_setting():
    x, w, b = _x((3, 6, 7, 5), 13), _x((6, 2, 3, 3), 14), _x((6,), 15)
    x1, w1 = _x((2, 4, 31), 16), _x((8, 2, 5), 17)
    dy = _x(tuple(F.conv_transpose2d(x, w, b, 2, 1, 1, 3).shape), 18)

    def run():
        out = _grads(lambda x, w, b: SF.conv_transpose2d(x, w, b, 2, 1, 1, 3), (x, w, b), dy)
        y1 = SF.conv1d(x1, w1, None, 2, "valid", 2, 2)
        return [t.numpy() for t in out] + [y1.numpy()]
    _same_everywhere(run)


def test_bad_arguments_name_the_parameter():
    x, w = _x((1, 2, 4, 4), 1), _x((2, 3, 3, 3), 2)
    with pytest.raises(samebits.SamebitsError, match="output_pad"):
        SF.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(samebits.SamebitsError, match="groups"):
        SF.conv_transpose2d(x, w, groups=3)
    with pytest.raises(ValueError, match="padding"):
        SF.conv_transpose2d(x, w, padding="same")
    with pytest.raises(ValueError, match="weight must be 3-D"):
        SF.conv1d(_x((1, 2, 5), 3), w)
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        SF.conv1d(_x((1, 2, 5), 3), _x((2, 2, 3), 4), stride=2, padding="same")
    with pytest.raises(ValueError, match="stride must be an int or a 1-tuple"):
        SF.conv1d(_x((1, 2, 5), 3), _x((2, 2, 3), 4), stride=(1, 1))
    m = samebits.from_torch_module(torch.nn.ConvTranspose2d(2, 3, 3, stride=2))
    with pytest.raises(ValueError, match="not reachable"):
        m(x, output_size=(12, 9))


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv1d_module_padding(mode):
    samebits.manual_seed(3)
    torch.manual_seed(3)
    for padding in (2, "same"):
        m = torch.nn.Conv1d(4, 6, 4, padding=padding, padding_mode=mode, groups=2,
                            dilation=2 if padding == "same" else 1)
        sb = samebits.from_torch_module(m)
        assert isinstance(sb, samebits.nn.Conv1d)
        x = _x((2, 4, 11), 19)
        assert torch.allclose(sb(x), m(x), rtol=1e-5, atol=1e-5)


def test_conv_transpose_modules_and_output_size():
    torch.manual_seed(4)
    m = torch.nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), groups=2,
                                 dilation=(1, 2))
    sb = samebits.from_torch_module(m)
    assert isinstance(sb, samebits.nn.ConvTranspose2d)
    x = _x((2, 4, 5, 4), 20)
    for size in (None, (10, 13), (9, 14), torch.Size([2, 6, 10, 12])):
        want = m(x, output_size=size)
        got = sb(x, output_size=size)
        assert got.shape == want.shape
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    m1 = torch.nn.ConvTranspose1d(3, 4, 5, stride=2, padding=1, output_padding=1, bias=False)
    sb1 = samebits.from_torch_module(m1)
    x1 = _x((2, 3, 8), 21)
    assert torch.allclose(sb1(x1), m1(x1), rtol=1e-5, atol=1e-5)
    assert sb1(x1, output_size=[17]).shape == m1(x1, output_size=[17]).shape
    # samebits' own modules draw PyTorch's init bound: 1/sqrt(out/groups * kernel)
    samebits.manual_seed(5)
    from samebits import nn as snn
    own = snn.ConvTranspose2d(4, 6, 3, groups=2)
    bound = 1 / np.sqrt(3 * 9)
    assert own.weight.abs().max() <= bound and own.weight.abs().max() > 0.8 * bound


class Encoder1dDecoder(torch.nn.Module):
    """A conv1d encoder, a transposed-conv decoder, and a classifier head."""

    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Sequential(
            torch.nn.Conv1d(3, 8, 5, stride=2, padding=2), torch.nn.ReLU(),
            torch.nn.Conv1d(8, 8, 3, padding="same", padding_mode="reflect", groups=2),
            torch.nn.Tanh())
        self.dec = torch.nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1)
        self.mix = torch.nn.Parameter(torch.randn(4, 4, 3) * 0.3)
        self.head = torch.nn.Linear(4 * 32, 3)

    def forward(self, x):
        h = self.dec(self.enc(x))
        h = torch.nn.functional.conv1d(h, self.mix, None, 1, "same")
        return self.head(h.flatten(1))


class AutoEncoder2d(torch.nn.Module):
    """A 2-D autoencoder: strided convs down, transposed convs up (one through
    the functional form with an output_size-like output_padding), then a
    classifier over the reconstruction."""

    def __init__(self):
        super().__init__()
        self.down1 = torch.nn.Conv2d(2, 6, 3, stride=2, padding=1)
        self.down2 = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1, groups=2)
        self.up1 = torch.nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1,
                                            groups=2)
        self.up2_w = torch.nn.Parameter(torch.randn(6, 2, 3, 3) * 0.2)
        self.head = torch.nn.Linear(2 * 12 * 12, 3)

    def forward(self, x):
        h = torch.relu(self.down1(x))
        h = torch.tanh(self.down2(h))
        h = torch.relu(self.up1(h))
        h = torch.nn.functional.conv_transpose2d(h, self.up2_w, None, 2, 1, 1)
        return self.head(h.flatten(1))


@pytest.mark.parametrize("make,shape,op", [(Encoder1dDecoder, (2, 3, 32), "conv1d"),
                                           (AutoEncoder2d, (2, 2, 12, 12), "conv_transpose2d")])
def test_models_strict_like_pytorch_and_thread_independent(make, shape, op):
    torch.manual_seed(6)
    m = make()
    samebits.manual_seed(6)
    sb = samebits.from_torch_module(m, strict=True)
    x = _x(shape, 22).requires_grad_()
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert any(name.endswith(op) for name, _ in report.covered), report

    def step(threads):
        was = samebits.get_num_threads()
        samebits.set_num_threads(threads)
        try:
            for p in sb.parameters():
                p.grad = None
            xi = x.detach().clone().requires_grad_()
            y = sb(xi)
            SF.cross_entropy(y, torch.tensor([0, 2])).backward()
            return [y.detach().numpy().tobytes(), xi.grad.numpy().tobytes()] + \
                [p.grad.numpy().tobytes() for p in sb.parameters()]
        finally:
            samebits.set_num_threads(was)
    assert step(1) == step(3)
