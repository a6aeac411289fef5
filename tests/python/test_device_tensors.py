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
import gc

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


class Seq(torch.nn.Module):
    """The recurrent layers: a 2-layer bidirectional LSTM with a projection
    and a GRU (their states made on the input's device)."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 6, num_layers=2, bidirectional=True, proj_size=3)
        self.gru = torch.nn.GRU(6, 4)

    def forward(self, x):
        return self.gru(self.lstm(x)[0])[0]


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_recurrent_layers_train_on_device_tensors_with_the_cpu_bits(optimizer):
    def run(to):
        samebits.manual_seed(3)
        torch.manual_seed(3)
        model = _move(samebits.from_torch_module(Seq()), to)
        opt = OPTIMIZERS[optimizer](model.parameters())
        g = torch.Generator().manual_seed(4)
        x, y = to(torch.randn(7, 2, 5, generator=g)), to(torch.randn(7, 2, 4, generator=g))
        for _ in range(2):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward(to(torch.ones(())))
            opt.step()
        return [model(x)] + [p.grad for p in model.parameters()] + list(model.parameters())

    want, got = run(lambda t: t), run(dev.to_mirror)
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


def _functional_cases():
    """(name, f(move)) for the nn.functional ops: f builds its inputs from a
    seeded generator and passes each through move (identity, or to a
    device)."""
    def case(f, *shapes, ints=(), grads=None):
        """f over random float inputs of `shapes` (those at `grads`, all by
        default, get gradients) and the tensors `ints`."""
        def run(move, need_grad):
            g = torch.Generator().manual_seed(11)
            xs = [move(torch.randn(*sh, generator=g)) for sh in shapes]
            for k, x in enumerate(xs):
                if grads is None or k in grads:
                    need_grad(x)
            return f(*xs, *(move(i) for i in ints))
        return run

    lp = lambda t: F.log_softmax(t, 2)  # noqa: E731
    return {
        "conv1d": case(lambda x, w: F.conv1d(x, w, padding=1), (2, 3, 10), (4, 3, 3)),
        "conv_transpose2d": case(lambda x, w: F.conv_transpose2d(x, w, stride=2),
                                 (2, 3, 5, 5), (3, 2, 3, 3)),
        "pad_reflect": case(lambda x: F.pad(x, (1, 2, 0, 1), mode="reflect"), (2, 3, 6, 6)),
        "interpolate_bilinear": case(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear",
                                                             align_corners=False), (2, 3, 4, 4)),
        "grid_sample": case(lambda x, grid: F.grid_sample(x, grid, align_corners=False),
                            (2, 3, 6, 6), (2, 4, 5, 2)),
        "affine_grid": case(lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=False),
                            (2, 2, 3)),
        "adaptive_max_pool2d": case(lambda x: F.adaptive_max_pool2d(x, 4), (2, 3, 7, 7)),
        "avg_pool2d": case(lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 3, 7, 7)),
        "nll_loss_weighted": case(lambda x, w, t: F.nll_loss(x, t, weight=F.relu(w)), (4, 6),
                                  (6,), ints=(torch.tensor([0, 2, 1, 5]),), grads=(0,)),
        "ctc_loss": case(lambda x, t: F.ctc_loss(lp(x), t, [8, 7], [3, 2]), (8, 2, 5),
                         ints=(torch.tensor([[1, 2, 2], [3, 1, 4]]),)),
        "bce_with_logits_pos_weight": case(
            lambda x, y, w: F.binary_cross_entropy_with_logits(x, F.sigmoid(y), pos_weight=F.relu(w)),
            (4, 6), (4, 6), (6,), grads=(0,)),
        "kl_div_batchmean": case(lambda x, y: F.kl_div(x, y, reduction="batchmean",
                                                       log_target=True), (4, 6), (4, 6), grads=(0,)),
        "rms_norm": case(lambda x, w: F.rms_norm(x, (6,), w), (4, 6), (6,)),
        "group_norm": case(lambda x, w, b: F.group_norm(x, 3, w, b), (2, 6, 3, 3), (6,), (6,)),
        "instance_norm": case(lambda x: F.instance_norm(x), (2, 3, 4, 4)),
        "dropout": case(lambda x: F.dropout(x, 0.3, True, 1, 2), (4, 6)),
        "attention_bool_mask": case(
            lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
            (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4),
            ints=(torch.tensor([[True, False, True, True, False]] * 5),)),
        "cumprod": case(lambda x: F.cumprod(x, 1), (4, 6)),
        "scatter_add": case(lambda x, s, i: F.scatter_add(x, 1, i, s), (4, 6), (4, 3),
                            ints=(torch.tensor([[0, 5, 5], [1, 2, 3], [4, 4, 4], [0, 1, 2]]),),
                            grads=(1,)),
        "index_add": case(lambda x, s, i: F.index_add(x, 0, i, s), (4, 6), (2, 6),
                          ints=(torch.tensor([1, 0]),), grads=(1,)),
        "topk_values": case(lambda x: F.topk(x, 3, 1)[0], (4, 6)),
        "median_dim": case(lambda x: F.median(x, 1)[0], (4, 6)),
        "embedding": case(lambda w, i: F.embedding(i, w), (5, 4),
                          ints=(torch.tensor([[1, 3], [0, 3]]),)),
    }


FUNCTIONAL = _functional_cases()


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_ops_forward_and_backward_on_device_tensors(name):
    """Each op forward and backward on device tensors: results and input
    gradients on the device, with the CPU's bits. (A gradient autograd
    passes through or sums itself, such as index_add's input gradient, is
    PyTorch's own memory, host memory for a mirror tensor: those inputs get
    no gradient here.)"""
    def run(move):
        inputs = []

        def need_grad(t):
            inputs.append(t.requires_grad_())
        y = FUNCTIONAL[name](move, need_grad)
        y.backward(move(torch.linspace(-1, 1, y.numel()).reshape(y.shape)))
        return [y] + [t.grad for t in inputs]

    want, got = run(lambda t: t), run(dev.to_mirror)
    assert len(got) == len(want) >= 2
    for i, (h, w) in enumerate(zip(got, want)):
        assert _on_mirror(h), "result %d is not on the device" % i
        assert _bits(h) == _bits(w), "result %d differs" % i


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


def test_device_memory_is_released_with_its_last_tensor():
    gc.collect()
    before = len(dev._mirror_blocks)
    x = dev.to_mirror(torch.randn(8, 8))
    y = ops.softmax(ops.mm(x, x), 1)
    assert len(dev._mirror_blocks) > before
    view = y[2:]
    del x, y
    gc.collect()
    assert len(dev._mirror_blocks) == before + 1    # the view keeps its block
    del view
    gc.collect()
    assert len(dev._mirror_blocks) == before


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


@pytest.mark.parametrize("name,run", [
    ("ScatterReduce.backward", lambda x, s, i: F.scatter_reduce(x, 1, i, s, "amax")),
    ("nn.functional.embedding_bag", lambda x, s, i: F.embedding_bag(i, x)),
    ("nn.functional.embedding", lambda x, s, i: F.embedding(i, x, max_norm=1.0)),
])
def test_ops_with_host_work_refuse_device_tensors_naming_themselves(name, run):
    i = dev.to_mirror(torch.tensor([[0, 1], [3, 3]]))
    x, s = (dev.to_mirror(torch.randn(4, n)).requires_grad_() for n in (6, 2))
    with pytest.raises(samebits.UnsupportedDeviceError, match="samebits.%s: .* mirror" % name):
        y = run(x, s, i)
        y.backward(dev.to_mirror(torch.ones(y.shape)))


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
