"""samebits.set_device / on_device: the same ops and whole converted models
run on another backend (the OpenCL device under PoCL here, and the CPU
mirror device) and give the CPU's bits, forward, backward and through
optimizer steps."""
import copy

import numpy as np
import pytest
import torch

import samebits
from samebits import ops


def _opencl_available():
    try:
        with samebits.on_device("opencl"):
            return True
    except samebits.SamebitsError:
        return False


DEVICES = ["mirror"] + (["opencl"] if _opencl_available() else [])


@pytest.fixture(autouse=True)
def _back_on_cpu():
    yield
    samebits.set_device("cpu")


def _bits(t):
    return t.detach().numpy().tobytes()


class Net(torch.nn.Module):
    """Conv, batch norm, pooling, GELU, attention-free MLP head: many
    families of kernels in one forward and backward."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(6)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(6, 8, 3, groups=2)
        self.fc = torch.nn.Linear(8 * 2 * 2, 10)
        self.out = torch.nn.Linear(10, 4)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        x = torch.nn.functional.gelu(self.conv2(x)).flatten(1)
        return self.out(torch.tanh(self.fc(x)))


def _train(device, steps=2):
    """Converted Net: forward, cross-entropy, backward and SGD steps on
    `device`; returns the losses, the logits and every parameter and
    gradient."""
    samebits.manual_seed(0)
    torch.manual_seed(0)
    model = samebits.from_torch_module(Net())
    opt = samebits.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 8, 8, generator=g)
    y = torch.randint(0, 4, (4,), generator=g)
    losses = []
    with samebits.on_device(device):
        for _ in range(steps):
            opt.zero_grad()
            logits = model(x)
            loss = samebits.nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            losses.append(_bits(loss))
        logits = model(x)
    grads = [_bits(p.grad) for p in model.parameters()]
    params = [_bits(p) for p in model.parameters()]
    return losses, _bits(logits), grads, params


@pytest.mark.parametrize("device", DEVICES)
def test_converted_model_trains_with_the_cpu_bits(device):
    want = _train("cpu")
    got = _train(device)
    assert got[0] == want[0], "losses differ"
    assert got[1] == want[1], "logits differ"
    assert got[2] == want[2], "gradients differ"
    assert got[3] == want[3], "parameters differ"


@pytest.mark.parametrize("device", DEVICES)
def test_ops_give_the_cpu_bits(device):
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 3, 7, 8, generator=g) for _ in range(3))
    x = torch.randn(3, 40, generator=g)
    a, b = torch.randn(17, 33, generator=g), torch.randn(33, 9, generator=g)
    w = torch.tensor([0.25, -0.5, 2.0])

    def run():
        out = ops.scaled_dot_product_attention(q, k, v, causal=True)
        return [ops.mm(a, b), ops.softmax(x, 1), ops.prelu(x.reshape(3, 5, 8).transpose(0, 1), w),
                *ops.prelu_backward(x.reshape(5, 3, 8), w, x.reshape(5, 3, 8) * 2),
                *(out if isinstance(out, tuple) else (out,))]

    want = run()
    with samebits.on_device(device):
        assert samebits.get_device() == device
        got = run()
    assert samebits.get_device() == "cpu"
    for w, h in zip(want, got):
        assert _bits(torch.as_tensor(w)) == _bits(torch.as_tensor(h))


def test_in_place_op_on_a_device_writes_its_array():
    if "opencl" not in DEVICES:
        pytest.skip("no OpenCL device")
    x = torch.linspace(-2, 2, 9)
    want = torch.relu(x.clone())
    with samebits.on_device("opencl"):
        samebits.nn.functional.relu(x, inplace=True)
    assert torch.equal(x, want)


def test_bad_device_names_the_parameter():
    with pytest.raises(ValueError, match="device='tpu'"):
        samebits.set_device("tpu")
    with pytest.raises(ValueError, match="device"):
        samebits.set_device(3)
    assert samebits.get_device() == "cpu"


def test_missing_device_raises_with_the_library_message():
    # this build has no CUDA backend unless nvcc built it, and no GPU here
    try:
        samebits.set_device("cuda")
    except samebits.SamebitsError as e:
        assert "cuda" in str(e).lower()
        assert samebits.get_device() == "cpu"
    else:
        samebits.set_device("cpu")  # a CUDA build on a machine with a GPU
