"""Modules, conversion, initialisation, optimizers and hashes."""
import ctypes

import numpy as np
import pytest
import torch

import samebits
from samebits import _lib
from conftest import same_bits


class Block(torch.nn.Module):
    """A custom module: its children are converted, its forward kept."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
        self.head = torch.nn.ModuleList([torch.nn.Linear(8, 4), torch.nn.Tanh()])

    def forward(self, x):
        h = self.body(x)
        for m in self.head:
            h = m(h)
        return h


def nested():
    return torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 8),
        torch.nn.Sigmoid(), torch.nn.Dropout(0.2),
        Block(),
        torch.nn.LogSoftmax(dim=1))


def test_conversion_of_nested_modules():
    torch.manual_seed(0)
    model = nested()
    conv = samebits.from_torch_module(model)
    kinds = {type(m) for m in conv.modules()}
    for cls in (samebits.nn.Conv2d, samebits.nn.BatchNorm2d, samebits.nn.ReLU,
                samebits.nn.MaxPool2d, samebits.nn.Linear, samebits.nn.Sigmoid,
                samebits.nn.Dropout, samebits.nn.GELU, samebits.nn.LayerNorm, samebits.nn.Tanh,
                samebits.nn.LogSoftmax, torch.nn.Flatten, Block, torch.nn.ModuleList):
        assert cls in kinds, cls
    assert not any(type(m) in (torch.nn.Linear, torch.nn.ReLU) for m in conv.modules())
    # parameters and buffers copied with their names, the original untouched
    for (n1, a), (n2, b) in zip(model.state_dict().items(), conv.state_dict().items()):
        assert n1 == n2
        assert a.data_ptr() != b.data_ptr()
        assert torch.equal(a, b)
    assert type(model[0]) is torch.nn.Conv2d
    # same function: eval-mode outputs agree with the original closely
    model.eval()
    conv.eval()
    x = torch.randn(5, 2, 8, 8)
    np.testing.assert_allclose(conv(x).detach().numpy(), model(x).detach().numpy(), atol=1e-4)
    conv.train()
    out = conv(x)
    out.sum().backward()
    assert all(p.grad is not None for p in conv.parameters())


def test_unsupported_modules_are_named():
    with pytest.raises(NotImplementedError, match=r"cannot convert torch\.nn\.modules\.activation"
                       r"\.RReLU \(at '1\.inner'\)"):
        samebits.from_torch_module(torch.nn.Sequential(
            torch.nn.Linear(2, 2), torch.nn.ModuleDict({"inner": torch.nn.RReLU()})))

    # a subclass that inherits PyTorch's forward is refused (replacing it
    # could drop its other changes); one with its own forward is custom code:
    # kept, and its forward runs under strict mode (torchvision's LayerNorm2d)
    class Inherited(torch.nn.Linear):
        pass

    with pytest.raises(NotImplementedError, match="Inherited"):
        samebits.from_torch_module(Inherited(2, 2))

    class MyLinear(torch.nn.Linear):
        def forward(self, x):
            return super().forward(x) * 2

    m = samebits.from_torch_module(MyLinear(2, 2))
    assert isinstance(m, MyLinear)
    x = torch.randn(3, 2)
    with torch.no_grad():
        want = samebits.nn.functional.linear(x, m.weight, m.bias) * 2
        assert torch.equal(m(x), want)
    with pytest.raises(NotImplementedError, match="Conv3d"):
        samebits.from_torch_module(torch.nn.Conv3d(1, 1, 3))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        samebits.from_torch_module(object())


def _c_lenet_params(seed):
    """Parameters of the C library's LeNet-5 after sb_module_init(model, seed)."""
    m = ctypes.c_void_p()
    _lib.call("sb_model_lenet5", ctypes.byref(m))
    try:
        _lib.call("sb_module_init", m, seed)
        n = ctypes.c_size_t()
        _lib.call("sb_module_parameters", m, None, 0, ctypes.byref(n))
        named = (_lib.Named * n.value)()
        _lib.call("sb_module_parameters", m, named, n.value, ctypes.byref(n))
        out = [(e.name.decode(), _lib.tensor_to_numpy(e.value)) for e in named]
        digest = ctypes.create_string_buffer(32)
        _lib.call("sb_module_hash", m, digest)
        hexbuf = ctypes.create_string_buffer(65)
        _lib.lib.sb_hex_digest(digest, hexbuf)
        return out, hexbuf.value.decode()
    finally:
        _lib.lib.sb_module_free(m)


def _lenet(ns):
    return ns.Sequential(ns.Conv2d(1, 6, 5, padding=2), ns.ReLU(), ns.MaxPool2d(2),
                         ns.Conv2d(6, 16, 5), ns.ReLU(), ns.MaxPool2d(2), torch.nn.Flatten(),
                         ns.Linear(400, 120), ns.ReLU(), ns.Linear(120, 84), ns.ReLU(),
                         ns.Linear(84, 10))


class _SbNs:
    Sequential = torch.nn.Sequential
    Conv2d, ReLU, MaxPool2d, Linear = (samebits.nn.Conv2d, samebits.nn.ReLU,
                                       samebits.nn.MaxPool2d, samebits.nn.Linear)


@pytest.mark.parametrize("seed", [0, 7, 2 ** 63 + 5])
def test_initialisation_matches_the_c_modules(seed):
    want, want_hash = _c_lenet_params(seed)
    model = samebits.init_module(_lenet(torch.nn), seed)
    got = list(model.state_dict().items())
    assert [n for n, _ in got] == [n for n, _ in want]
    for (_, a), (_, b) in zip(got, want):
        assert same_bits(a, b)
    assert samebits.get_hash(model) == want_hash
    # manual_seed + constructing samebits layers draws the same streams
    samebits.manual_seed(seed)
    built = _lenet(_SbNs)
    assert samebits.get_hash(built) == want_hash
    samebits.manual_seed(0)


def test_hash_of_tensors_and_print_hash(capsys):
    t = torch.tensor([1.0, float("nan"), -0.0])
    assert samebits.get_hash(t) == samebits.get_hash(t.numpy())
    # every NaN hashes alike; -0 and +0 differ
    alt_nan = torch.from_numpy(np.array([0x3F800000, 0x7FC00001, 0x80000000], np.uint32).view(np.float32))
    assert samebits.get_hash(alt_nan) == samebits.get_hash(t)
    assert samebits.get_hash(torch.tensor([1.0, float("nan"), 0.0])) != samebits.get_hash(t)
    assert samebits.get_hash(t[::2]) == samebits.get_hash(t[::2].contiguous())
    samebits.print_hash("Hash of t", t)
    assert capsys.readouterr().out == "Hash of t: %s\n" % samebits.get_hash(t)
    import hashlib
    assert samebits.get_hash(torch.tensor([1.0, 2.0])) == hashlib.sha256(
        np.array([1.0, 2.0], "<f4").tobytes()).hexdigest()


def _optim_pair(rng, sb_cls, t_cls, **kw):
    w0 = rng.standard_normal((5, 4)).astype(np.float32)
    ps = [torch.from_numpy(w0.copy()).requires_grad_() for _ in range(2)]
    opts = [sb_cls([ps[0]], **kw), t_cls([ps[1]], foreach=False, **kw)]
    for step in range(5):
        g = rng.standard_normal((5, 4)).astype(np.float32)
        for p, o in zip(ps, opts):
            o.zero_grad()
            p.grad = torch.from_numpy(g.copy())
            o.step()
    return ps


@pytest.mark.parametrize("cls,kw", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
])
def test_optimizers_follow_pytorch(rng, cls, kw):
    a, b = _optim_pair(rng, getattr(samebits.optim, cls), getattr(torch.optim, cls), **kw)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_optimizer_matches_c_step(rng):
    p = torch.from_numpy(rng.standard_normal(10).astype(np.float32)).requires_grad_()
    ref = p.detach().clone()
    g = rng.standard_normal(10).astype(np.float32)
    opt = samebits.optim.Adam([p], lr=0.01)
    p.grad = torch.from_numpy(g.copy())
    opt.step()
    m, v = np.zeros(10, np.float32), np.zeros(10, np.float32)
    r = ref.numpy()
    cfg = _lib.AdamConfig(0.01, 0.9, 0.999, 1e-8, 0.0, False, False, False)
    _lib.call("sb_adam_step", ctypes.byref(cfg), 1, 10, ctypes.c_void_p(r.ctypes.data),
              ctypes.c_void_p(g.ctypes.data), ctypes.c_void_p(m.ctypes.data),
              ctypes.c_void_p(v.ctypes.data), None)
    assert same_bits(p, r)
    assert same_bits(opt.state[p]["exp_avg"], m)
    with pytest.raises(samebits.SamebitsError, match="sb_adam_check_config"):
        samebits.optim.Adam([p], lr=-1.0)


def test_data_order_is_the_c_loaders():
    perm = samebits.random.epoch_permutation(10, 3, 1)
    assert sorted(perm.tolist()) == list(range(10))
    assert np.array_equal(perm, samebits.random.permutation(10, 3, 0x5348554600000001))
    assert not np.array_equal(perm, samebits.random.epoch_permutation(10, 3, 2))
    x = torch.arange(10.0)
    loader = samebits.data.BatchLoader(x, torch.arange(10), 4, shuffle=True, seed=3)
    loader.set_epoch(1)
    batches = [b for b, _ in loader]
    assert [len(b) for b in batches] == [4, 4, 2]
    assert torch.equal(torch.cat(batches), x[torch.from_numpy(perm)])


def test_batchnorm1d_losses_and_dropout_modules(rng):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5),
                                torch.nn.Dropout(0.5))
    conv = samebits.from_torch_module(model)
    x = torch.from_numpy(rng.standard_normal((16, 6)).astype(np.float32))
    conv.train()
    drop = conv[2]
    assert isinstance(drop, samebits.nn.Dropout) and drop.offset == 0
    y1 = conv(x)
    assert drop.offset == 16 * 5 and conv[1].num_batches_tracked.item() == 1
    y2 = conv(x)
    assert not same_bits(y1, y2)  # the mask moved on
    # running statistics: PyTorch's update rule
    model.train()
    model[2].p = 0.0
    model(x)
    model(x)
    np.testing.assert_allclose(conv[1].running_mean.numpy(), model[1].running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(conv[1].running_var.numpy(), model[1].running_var.numpy(),
                               rtol=1e-5, atol=1e-6)
    conv.eval()
    assert same_bits(conv(x), conv(x))
    t = torch.from_numpy(rng.integers(0, 5, 16))
    for sb, ref in ((samebits.nn.CrossEntropyLoss(label_smoothing=0.05),
                     torch.nn.CrossEntropyLoss(label_smoothing=0.05)),
                    (samebits.from_torch_module(torch.nn.CrossEntropyLoss(reduction="sum")),
                     torch.nn.CrossEntropyLoss(reduction="sum"))):
        a = sb(conv(x), t)
        b = ref(conv(x), t)
        assert abs(a.item() - b.item()) < 1e-4 * max(1.0, abs(b.item()))
    target = torch.from_numpy(rng.standard_normal((16, 5)).astype(np.float32))
    mse = samebits.from_torch_module(torch.nn.MSELoss())
    assert isinstance(mse, samebits.nn.MSELoss)
    assert abs(mse(conv(x), target).item() - torch.nn.MSELoss()(conv(x), target).item()) < 1e-5


def test_ops_work_without_pytorch():
    import subprocess
    import sys
    import os
    from conftest import REPO
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numpy as np, samebits\n"
            "y = samebits.ops.sqrt(np.float32([4, 9]))\n"
            "assert isinstance(y, np.ndarray) and y.tolist() == [2, 3]\n"
            "assert not hasattr(samebits, 'from_torch_module')\n"
            "print(samebits.get_hash(y))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip()) == 64
