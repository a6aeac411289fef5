"""Tensors that live on a device, taken by samebits' ops zero-copy
(python/samebits/_device_array.py): the path PyTorch CUDA tensors take.

No GPU is needed: the mirror device's memory is host memory that
libsamebits treats as a device's (it refuses any pointer that is not a live
mirror block), and to_mirror(t) gives a torch tensor over it that every op
takes as it takes a CUDA tensor. So these tests prove, on any machine, that
operands are wrapped in place, results are allocated on the operands'
device, modules, autograd and optimizers stay there, and the bits are the
CPU's. test_cuda_tensors_* run the same on a real GPU when one is present."""
import ctypes

import pytest
import torch

import samebits
from samebits import _device_array as dev
from samebits import _lib, ops
from samebits.nn import functional as F


def _bits(t):
    return t.detach().clone().numpy().tobytes() if t.device.type == "cpu" else \
        t.detach().cpu().numpy().tobytes()


def _on_mirror(t):
    return dev.device_code(t, "test", "t") == dev.SB_DEVICE_MIRROR


class Net(torch.nn.Module):
    """Many kernel families in one forward and backward: convolution, batch
    norm, pooling, GELU, layer norm, SiLU, linear, mean, cross-entropy.
    Memory PyTorch allocates itself (a .contiguous() copy inside
    MultiheadAttention, autograd's sum of the gradients of a tensor used
    twice) is host memory for a mirror tensor, where on a GPU it stays on
    the GPU; so this net uses each tensor once, and the attention kernels
    are in the ops test."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(6, 8, 3, groups=2, padding=1)
        self.ln = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        x = torch.nn.functional.gelu(self.conv2(x)).flatten(2).transpose(1, 2)  # (N, 16, 8)
        x = self.ln(x)
        x = torch.nn.functional.silu(x)
        return self.fc(x.mean(1))


def _move(model, to):
    for p in model.parameters():
        p.data = to(p.data)
    for m in model.modules():
        for name, b in list(m._buffers.items()):
            if b is not None and b.dtype == torch.float32:
                m._buffers[name] = to(b)
    return model


def _train(to, optimizer, steps=2):
    """The converted Net trained `steps` steps with every tensor moved by
    `to`; returns the losses, logits, gradients, parameters and buffers."""
    samebits.manual_seed(0)
    torch.manual_seed(0)
    model = _move(samebits.from_torch_module(Net()), to)
    opt = optimizer(model.parameters())
    g = torch.Generator().manual_seed(1)
    x = to(torch.randn(4, 3, 8, 8, generator=g))
    y = torch.randint(0, 4, (4,), generator=g)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), to(y))
        loss.backward(to(torch.ones(())))   # torch's own seed would be host memory on the mirror
        opt.step()
        losses.append(loss)
    logits = model(x)
    tensors = [logits] + [p.grad for p in model.parameters()] + list(model.parameters()) + \
        [b for b in model.buffers() if b.dtype == torch.float32]
    return losses, tensors


OPTIMIZERS = {
    "sgd": lambda ps: samebits.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adamw": lambda ps: samebits.optim.AdamW(ps, lr=0.01, amsgrad=True),
}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_converted_model_trains_on_device_tensors_with_the_cpu_bits(optimizer):
    want_losses, want = _train(lambda t: t, OPTIMIZERS[optimizer])
    got_losses, got = _train(dev.to_mirror, OPTIMIZERS[optimizer])
    assert [_bits(t) for t in got_losses] == [_bits(t) for t in want_losses]
    assert len(got) == len(want) > 20
    for i, (h, w) in enumerate(zip(got, want)):
        assert _on_mirror(h), "tensor %d left the device" % i
        assert _bits(h) == _bits(w), "tensor %d differs" % i


def test_optimizer_updates_device_parameters_in_place():
    p = dev.to_mirror(torch.linspace(-1, 1, 7)).requires_grad_()
    p.grad = dev.to_mirror(torch.full((7,), 0.5))
    ptr = p.data_ptr()
    want = torch.linspace(-1, 1, 7) - 0.1 * 0.5
    samebits.optim.SGD([p], lr=0.1).step()
    assert p.data_ptr() == ptr and _on_mirror(p)
    assert _bits(p) == _bits(want)
    # a gradient on the host for a device parameter is refused, naming it
    q = dev.to_mirror(torch.zeros(3)).requires_grad_()
    q.grad = torch.ones(3)
    with pytest.raises(ValueError, match="gradient of parameter 0 of group 0 is on cpu, but the "
                                         "parameter is on mirror"):
        samebits.optim.Adam([q]).step()


def test_ops_give_the_cpu_bits_and_results_on_the_device():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 3, 7, 8, generator=g) for _ in range(3))
    x = torch.randn(3, 40, generator=g)
    a, b = torch.randn(17, 33, generator=g), torch.randn(33, 9, generator=g)
    idx = torch.randint(0, 40, (3, 5), generator=g)
    w = torch.tensor([0.25, -0.5, 2.0])

    def run(to):
        out = ops.scaled_dot_product_attention(to(q), to(k), to(v), causal=True)
        xs = to(x)
        values, indices = ops.topk(xs, 4, 1)
        return [ops.mm(to(a), to(b)), ops.softmax(xs, 1), ops.gelu(xs), ops.cumsum(xs, 1),
                ops.sum(xs, 1), ops.gather(xs, 1, to(idx)), values, indices,
                ops.sort_backward(values, 1, indices, xs.shape),
                ops.prelu(to(x.reshape(3, 5, 8).transpose(0, 1).contiguous()), to(w)),
                *(out if isinstance(out, tuple) else (out,))]

    want, got = run(lambda t: t), run(dev.to_mirror)
    assert len(got) == len(want)
    for i, (h, w_) in enumerate(zip(got, want)):
        assert _on_mirror(h), "result %d is not on the device" % i
        assert h.dtype == w_.dtype and _bits(h) == _bits(w_), "result %d differs" % i


def test_device_operands_are_not_copied():
    x = dev.to_mirror(torch.linspace(-2, 2, 9))
    ptr = x.data_ptr()
    F.relu(x, inplace=True)
    assert x.data_ptr() == ptr
    assert _bits(x) == _bits(torch.relu(torch.linspace(-2, 2, 9)))
    # a strided view is made dense on the device (an exact copy there)
    m = dev.to_mirror(torch.arange(12.0).reshape(3, 4))
    assert _on_mirror(ops.neg(m.t()))
    assert _bits(ops.neg(m.t())) == _bits(-torch.arange(12.0).reshape(3, 4).t())


def test_operands_on_two_devices_are_refused_naming_the_parameter():
    x, w = torch.randn(3, 4), torch.randn(5, 4)
    with pytest.raises(ValueError, match=r"samebits.linear: weight is on cpu, but the op's first "
                                         r"operand is on mirror"):
        ops.linear(dev.to_mirror(x), w)
    with pytest.raises(ValueError, match=r"weight is on mirror, but the op's first operand is on "
                                         r"cpu"):
        F.linear(x, dev.to_mirror(w))
    # the refusal leaves no state behind: the next op runs
    assert _bits(ops.linear(x, w)) == _bits(ops.linear(dev.to_mirror(x), dev.to_mirror(w)))


def test_an_op_without_a_device_path_says_so():
    x = dev.to_mirror(torch.randn(6)).requires_grad_()
    y = F.median(x)   # the forward runs on the device; its backward counts on the host
    with pytest.raises(samebits.UnsupportedDeviceError, match="(?i)median.*backward.*mirror"):
        y.backward()


def test_other_torch_devices_are_refused():
    with pytest.raises(samebits.UnsupportedDeviceError, match="samebits.relu: x is on meta"):
        ops.relu(torch.empty(3, device="meta"))


def test_the_device_header_matches_the_memory():
    t = dev.to_mirror(torch.arange(6.0).reshape(2, 3))
    h = dev.header(dev.from_tensor(t, dev.SB_DEVICE_MIRROR))
    assert (h.device, h.dtype, h.ndim) == (dev.SB_DEVICE_MIRROR, _lib.SB_F32, 2)
    assert (list(h.shape[:2]), list(h.strides[:2])) == ([2, 3], [3, 1])
    assert h.data == t.data_ptr()
    # the library itself checks it: a copy to the host gives the elements
    out = _lib._T()
    _lib.check(_lib.lib.sb_tensor_to(ctypes.byref(out), ctypes.byref(h), _lib.SB_DEVICE_CPU))
    try:
        assert _lib.tensor_to_numpy(out).tolist() == [[0, 1, 2], [3, 4, 5]]
    finally:
        _lib.lib.sb_tensor_free(out)


def _cuda_ready():
    if not torch.cuda.is_available():
        return False
    try:
        ops.relu(torch.zeros(1, device="cuda"))
        return True
    except samebits.UnsupportedDeviceError:
        return False


@pytest.mark.skipif(not _cuda_ready(), reason="no GPU, or libsamebits without its CUDA backend")
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_cuda_tensors_train_with_the_cpu_bits(optimizer):
    want_losses, want = _train(lambda t: t, OPTIMIZERS[optimizer])
    got_losses, got = _train(lambda t: t.cuda(), OPTIMIZERS[optimizer])
    assert [_bits(t) for t in got_losses] == [_bits(t) for t in want_losses]
    for i, (h, w) in enumerate(zip(got, want)):
        assert h.is_cuda and _bits(h) == _bits(w), "tensor %d" % i


def test_cuda_without_a_usable_gpu_is_refused_with_the_reason():
    if not all(hasattr(_lib.lib, n) for n in dev._CUDA_SIGS):
        pytest.skip("this libsamebits has no CUDA backend (tests/check_python_cuda.sh loads one)")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(samebits.UnsupportedDeviceError,
                       match=r"samebits.relu: x is on cuda:0, but libsamebits cannot use the GPU: "
                             r"\S"):
        dev._cuda_device(torch.device("cuda", 0), "relu", "x")


def test_cuda_without_the_cuda_backend_is_refused_with_what_to_do():
    if all(hasattr(_lib.lib, n) for n in dev._CUDA_SIGS):
        pytest.skip("this libsamebits has the CUDA backend")
    with pytest.raises(samebits.UnsupportedDeviceError,
                       match=r"samebits.relu: x is on cuda:0, but .* has no CUDA backend "
                             r"\(build it with `make cuda-lib`"):
        dev._cuda_device(torch.device("cuda", 0), "relu", "x")
