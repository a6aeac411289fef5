"""from_torch_module refuses module kinds it cannot turn into samebits
arithmetic, instead of returning them with PyTorch's arithmetic still
running: TorchScript (scripted, traced), torch.fx graphs that compute, other
PyTorch-defined modules, and modules with forward hooks."""
import pytest
import torch
import torch.fx

import samebits
from conftest import same_bits


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


class Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = _net()

    def forward(self, x):
        return torch.relu(self.body(x)) + 1


def test_scripted_modules_are_refused():
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"cannot convert TorchScript module torch\.jit\._script\."
                       r"RecursiveScriptModule \(the root module\)"):
        samebits.from_torch_module(torch.jit.script(_net()))


def test_traced_modules_are_refused():
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"cannot convert TorchScript module torch\.jit\._trace\."
                       r"TopLevelTracedModule \(the root module\)"):
        samebits.from_torch_module(torch.jit.trace(_net(), torch.ones(1, 3)))


def test_a_scripted_submodule_is_refused_with_its_path():
    outer = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Sequential(torch.jit.script(_net())))
    with pytest.raises(NotImplementedError, match=r"TorchScript module .* \(at '1\.0'\)"):
        samebits.from_torch_module(outer)


def test_an_fx_graph_that_computes_is_refused_naming_the_node():
    gm = torch.fx.symbolic_trace(Residual())
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"cannot convert torch\.fx\.GraphModule \(the root module\): node "
                       r"'relu' is call_function relu"):
        samebits.from_torch_module(gm)


def test_an_fx_graph_of_module_calls_converts_and_runs_in_samebits():
    gm = torch.fx.symbolic_trace(_net())
    out = samebits.from_torch_module(gm)
    assert isinstance(out[0] if hasattr(out, "__getitem__") else out.get_submodule("0"),
                      samebits.nn.Linear)
    assert isinstance(out.get_submodule("1"), samebits.nn.ReLU)
    x = torch.randn(5, 3)
    ref = samebits.from_torch_module(_net())
    assert same_bits(out(x).detach(), ref(x).detach())


def test_other_pytorch_module_kinds_are_refused():
    class Bias(torch.nn.Module):
        def forward(self, x):
            return x

    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.RReLU())
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"cannot convert torch\.nn\.modules\.activation\.RReLU \(at '1'\)"):
        samebits.from_torch_module(m)
    fake = type("Fused", (torch.nn.Module,), {"forward": lambda self, x: x})
    fake.__module__ = "torch.ao.nn.intrinsic.modules.fused"
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"cannot convert torch\.ao\.nn\.intrinsic\.modules\.fused\.Fused"):
        samebits.from_torch_module(torch.nn.Sequential(fake()))
    samebits.from_torch_module(torch.nn.Sequential(Bias()))  # a custom module is kept


def test_modules_with_forward_hooks_are_refused():
    m = _net()
    m[0].register_forward_pre_hook(lambda mod, inp: None)
    with pytest.raises(samebits.UnsupportedModuleError,
                       match=r"torch\.nn\.modules\.linear\.Linear \(at '0'\): it has forward hooks "
                       r"\(_forward_pre_hooks\)"):
        samebits.from_torch_module(m)
    wn = torch.nn.utils.weight_norm(torch.nn.Linear(2, 2))
    with pytest.raises(samebits.UnsupportedModuleError, match="forward hooks"):
        samebits.from_torch_module(wn)


def test_refusals_leave_the_original_untouched_and_are_not_implemented_errors():
    m = torch.jit.script(_net())
    before = [p.detach().clone() for p in m.parameters()]
    with pytest.raises(NotImplementedError):
        samebits.from_torch_module(m)
    assert all(same_bits(p, q) for p, q in zip(m.parameters(), before))
    assert type(m).__name__ == "RecursiveScriptModule"
