"""from_torch_module: a samebits copy of a PyTorch module tree."""
import copy

import torch

from . import nn as snn

__all__ = ["from_torch_module"]

# torch.nn class -> samebits.nn class (an exact-type match: a user subclass
# of, say, nn.Linear may override forward, so it is not silently replaced).
_CONVERT = {
    torch.nn.Linear: snn.Linear,
    torch.nn.Conv2d: snn.Conv2d,
    torch.nn.BatchNorm1d: snn.BatchNorm1d,
    torch.nn.BatchNorm2d: snn.BatchNorm2d,
    torch.nn.LayerNorm: snn.LayerNorm,
    torch.nn.CrossEntropyLoss: snn.CrossEntropyLoss,
    torch.nn.MSELoss: snn.MSELoss,
    torch.nn.GELU: snn.GELU,
    torch.nn.Tanh: snn.Tanh,
    torch.nn.Sigmoid: snn.Sigmoid,
    torch.nn.Softmax: snn.Softmax,
    torch.nn.LogSoftmax: snn.LogSoftmax,
    torch.nn.Dropout: snn.Dropout,
    torch.nn.ReLU: snn.ReLU,
    torch.nn.MaxPool2d: snn.MaxPool2d,
    torch.nn.AvgPool2d: snn.AvgPool2d,
}

# Modules that only move bits (views, copies) or hold others: kept as they are.
_EXACT = (torch.nn.Flatten, torch.nn.Unflatten, torch.nn.Identity)
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
_SAMEBITS = tuple(_CONVERT.values())


def _type_name(m):
    t = type(m)
    return "%s.%s" % (t.__module__, t.__qualname__)


def _check(m, path):
    """Refuses settings a samebits module cannot honour, before any forward."""
    where = " (at '%s')" % path if path else ""
    t = type(m)
    if t is torch.nn.Conv2d:
        if m.padding_mode != "zeros" or isinstance(m.padding, str):
            raise NotImplementedError(
                "samebits.from_torch_module: cannot convert torch.nn.Conv2d%s with padding=%r, "
                "padding_mode=%r; samebits supports int zero padding only"
                % (where, m.padding, m.padding_mode))
    if t in (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d):
        if not m.track_running_stats or m.momentum is None:
            raise NotImplementedError(
                "samebits.from_torch_module: cannot convert %s%s with track_running_stats=False "
                "or momentum=None" % (_type_name(m), where))
    if t is torch.nn.CrossEntropyLoss and m.weight is not None:
        raise NotImplementedError("samebits.from_torch_module: cannot convert "
                                  "torch.nn.CrossEntropyLoss%s with class weights" % where)
    if t is torch.nn.MaxPool2d and m.dilation not in (1, (1, 1)):
        raise NotImplementedError("samebits.from_torch_module: cannot convert torch.nn.MaxPool2d%s "
                                  "with dilation %r" % (where, m.dilation))
    if t is torch.nn.AvgPool2d and m.divisor_override is not None:
        raise NotImplementedError("samebits.from_torch_module: cannot convert torch.nn.AvgPool2d%s "
                                  "with divisor_override" % where)
    if t in (torch.nn.Softmax, torch.nn.LogSoftmax) and m.dim is None:
        raise NotImplementedError("samebits.from_torch_module: cannot convert %s%s with dim=None; "
                                  "give the dimension explicitly" % (_type_name(m), where))
    for name, p in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
        if p is None:
            continue
        if p.device.type != "cpu":
            raise NotImplementedError(
                "samebits.from_torch_module: %s%s has %s on %s; CUDA tensors are not supported by "
                "this build (call .cpu() first)" % (_type_name(m), where, name, p.device))
        if p.dtype.is_floating_point and p.dtype != torch.float32:
            raise TypeError("samebits.from_torch_module: %s%s has %s of dtype %s; samebits "
                            "computes in float32 only (call .float() first)"
                            % (_type_name(m), where, name, p.dtype))


def _convert(m, path):
    t = type(m)
    if t in _CONVERT:
        _check(m, path)
        new_cls = _CONVERT[t]
        if new_cls is snn.Dropout:
            seed, stream = snn._random.initial_seed(), snn._random._next_dropout_stream()
            m.__class__ = new_cls
            m.seed, m.stream, m.offset = seed, stream, 0
        else:
            m.__class__ = new_cls
        return
    if isinstance(m, _SAMEBITS) or t in _EXACT or t in _CONTAINERS:
        pass
    elif t.__module__.startswith("torch.nn") or isinstance(m, tuple(_CONVERT)):
        # a torch layer samebits has no version of, or a user subclass of one
        # that may override its forward
        raise NotImplementedError(
            "samebits.from_torch_module: cannot convert %s%s: samebits has no reproducible "
            "version of it (supported: %s; kept as they are: containers, Flatten, Unflatten, "
            "Identity and custom modules, whose children are converted)"
            % (_type_name(m), " (at '%s')" % path if path else "",
               ", ".join(sorted(c.__name__ for c in _CONVERT)), ))
    else:
        _check(m, path)  # a custom module: its own tensors must be float32 CPU
    for name, child in m.named_children():
        _convert(child, "%s.%s" % (path, name) if path else name)


def from_torch_module(module):
    """A samebits copy of `module`: the tree is deep-copied (parameters and
    buffers included, the original is untouched), then every supported layer
    becomes its samebits.nn class; containers (Sequential, ModuleList,
    ModuleDict) and custom modules are kept and their children converted,
    Flatten/Unflatten/Identity are kept (exact). Any other torch.nn layer
    raises NotImplementedError naming its type and place.

    A custom module's own forward code still runs as written: arithmetic it
    does itself with torch ops (x @ w, x + y, torch.relu...) is PyTorch's,
    not samebits'. Dropout modules get Philox streams (samebits.random)."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError("samebits.from_torch_module: expected a torch.nn.Module, got %s"
                        % type(module).__name__)
    out = copy.deepcopy(module)
    _convert(out, "")
    return out
