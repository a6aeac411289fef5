"""PReLU from Python (contract section 9, "PReLU"): samebits.ops.prelu and
nn.functional.prelu against PyTorch (forward, dx and the weight gradient),
bit-equal results at 1 and 3 threads, the ops' weight gradient against a
float64 restatement, nn.PReLU conversion keeping the module's parameter, and
a converted model with PReLU under strict mode."""
import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as SF

from test_strict import _strict_run_like_pytorch


def _data(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


@pytest.mark.parametrize("shape,nw", [((4, 3, 5, 6), 3), ((4, 3, 5, 6), 1), ((7,), 1),
                                      ((5, 4), 4), ((2, 3, 9), 3)])
def test_close_to_torch_forward_and_backward(shape, nw):
    x = _data(shape, 1).requires_grad_()
    w = (torch.rand(nw, generator=torch.Generator().manual_seed(2)) - 0.3).requires_grad_()
    dy = _data(shape, 3)
    y = SF.prelu(x, w)
    y.backward(dy)
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    yr = torch.nn.functional.prelu(xr, wr)
    yr.backward(dy)
    assert torch.equal(y, yr)  # one compare and one product per element: exact
    assert torch.equal(x.grad, xr.grad)
    assert w.grad.shape == w.shape
    assert torch.allclose(w.grad, wr.grad, rtol=1e-5, atol=1e-5)


def test_weight_gradient_against_float64():
    x, dy = _data((3, 4, 50), 5).numpy(), _data((3, 4, 50), 6).numpy()
    w = np.array([0.25, -0.5, 0.0, 1.5], dtype=np.float32)
    dx, dw = ops.prelu_backward(x, w, dy)
    xd, dyd = x.astype(np.float64), dy.astype(np.float64)
    want = np.where(xd > 0, 0.0, xd * dyd).sum(axis=(0, 2))
    assert np.allclose(dw, want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(dx, np.where(x > 0, dy, w[None, :, None] * dy))
    y = ops.prelu(x, w)
    assert np.array_equal(y, np.where(x > 0, x, w[None, :, None] * x))


def test_bits_equal_at_1_and_3_threads():
    x = _data((8, 6, 40, 40), 7)
    w = torch.linspace(-0.5, 0.5, 6)
    dy = _data((8, 6, 40, 40), 8)
    old = samebits.get_num_threads()
    try:
        got = []
        for t in (1, 3):
            samebits.set_num_threads(t)
            got.append((ops.prelu(x, w), *ops.prelu_backward(x, w, dy)))
    finally:
        samebits.set_num_threads(old)
    for a, b in zip(*got):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_special_values():
    x = torch.tensor([-0.0, 0.0, float("nan"), float("-inf"), 2.0])
    y = ops.prelu(x, torch.tensor([0.25]))
    assert y[0].item() == 0.0 and np.signbit(y[0].item())  # 0.25 * -0 = -0
    assert np.isnan(y[2].item()) and y[3].item() == float("-inf") and y[4].item() == 2.0
    y = ops.prelu(x, torch.tensor(-0.5))  # a 0-D weight is one shared slope
    assert not np.signbit(y[0].item()) and y[3].item() == float("inf")


def test_bad_input_names_the_parameter():
    x = torch.zeros(2, 3)
    with pytest.raises(samebits.SamebitsError, match="weight"):
        SF.prelu(x, torch.ones(2))
    with pytest.raises(ValueError, match="weight"):
        ops.prelu(x, torch.ones(1, 3))
    with pytest.raises(TypeError, match="weight"):
        ops.prelu(x, torch.ones(3, dtype=torch.float64))
    with pytest.raises(samebits.SamebitsError, match="channel count 1"):
        ops.prelu(torch.zeros(4), torch.ones(4))  # a 1-D x has one channel, as in PyTorch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.act = torch.nn.PReLU(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 6)
        self.act2 = torch.nn.PReLU()
        self.out = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.out(self.act2(self.fc(self.act(self.conv(x)).flatten(1))))


def test_converted_model_runs_strict_and_trains_prelu_weights():
    samebits.manual_seed(3)
    torch.manual_seed(3)
    m = Net()
    with torch.no_grad():
        m.act.weight.copy_(torch.tensor([0.1, -0.2, 0.3, 0.05]))
    sb = samebits.from_torch_module(Net())
    sb.load_state_dict(m.state_dict())
    # the weight stays the converted module's own parameter (trained, saved)
    assert type(sb.act) is samebits.nn.PReLU and type(sb.act2) is samebits.nn.PReLU
    assert any(p is sb.act.weight for p in sb.parameters())
    assert torch.equal(sb.act.weight.detach(), m.act.weight.detach())
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    out, report = _strict_run_like_pytorch(sb, m, x)
    assert "samebits.nn.PReLU (module)" in {op for op, _ in report.covered}
    assert sb.act.weight.grad is not None and sb.act2.weight.grad is not None
    assert sb.act2.weight.grad.shape == (1,)


def test_strict_routes_torch_prelu():
    class Fn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(5, 3)
            self.w = torch.nn.Parameter(torch.tensor([0.2]))

        def forward(self, x):
            return torch.prelu(self.lin(x), self.w)

    samebits.manual_seed(4)
    torch.manual_seed(4)
    m = Fn()
    sb = samebits.from_torch_module(Fn())
    sb.load_state_dict(m.state_dict())
    x = torch.randn(2, 5, requires_grad=True)
    _strict_run_like_pytorch(sb, m, x)
    assert sb.w.grad is not None


def test_module_init_fills_init():
    m = samebits.nn.PReLU(3, init=0.1)
    assert torch.equal(m.weight.detach(), torch.full((3,), 0.1))
