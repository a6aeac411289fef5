"""from_torch_module: a samebits copy of a PyTorch module tree."""
import copy
import operator

import torch
import torch.fx

from . import nn as snn
from .strict import strict_class

__all__ = ["from_torch_module", "UnsupportedModuleError"]


class UnsupportedModuleError(NotImplementedError):
    """from_torch_module met a module it cannot turn into samebits arithmetic
    (the message names its kind and where it is in the tree)."""

# torch.nn class -> samebits.nn class (an exact-type match: a user subclass
# of, say, nn.Linear may override forward, so it is not silently replaced).
_CONVERT = {
    torch.nn.Linear: snn.Linear,
    torch.nn.Conv2d: snn.Conv2d,
    torch.nn.Conv1d: snn.Conv1d,
    torch.nn.ConvTranspose2d: snn.ConvTranspose2d,
    torch.nn.ConvTranspose1d: snn.ConvTranspose1d,
    torch.nn.BatchNorm1d: snn.BatchNorm1d,
    torch.nn.BatchNorm2d: snn.BatchNorm2d,
    torch.nn.LayerNorm: snn.LayerNorm,
    torch.nn.GroupNorm: snn.GroupNorm,
    torch.nn.InstanceNorm1d: snn.InstanceNorm1d,
    torch.nn.InstanceNorm2d: snn.InstanceNorm2d,
    torch.nn.CrossEntropyLoss: snn.CrossEntropyLoss,
    torch.nn.NLLLoss: snn.NLLLoss,
    torch.nn.CTCLoss: snn.CTCLoss,
    torch.nn.MSELoss: snn.MSELoss,
    torch.nn.L1Loss: snn.L1Loss,
    torch.nn.SmoothL1Loss: snn.SmoothL1Loss,
    torch.nn.HuberLoss: snn.HuberLoss,
    torch.nn.BCELoss: snn.BCELoss,
    torch.nn.BCEWithLogitsLoss: snn.BCEWithLogitsLoss,
    torch.nn.KLDivLoss: snn.KLDivLoss,
    torch.nn.GELU: snn.GELU,
    torch.nn.Tanh: snn.Tanh,
    torch.nn.Sigmoid: snn.Sigmoid,
    torch.nn.Softmax: snn.Softmax,
    torch.nn.LogSoftmax: snn.LogSoftmax,
    torch.nn.Dropout: snn.Dropout,
    torch.nn.ReLU: snn.ReLU,
    torch.nn.MaxPool2d: snn.MaxPool2d,
    torch.nn.AvgPool2d: snn.AvgPool2d,
    torch.nn.AdaptiveMaxPool2d: snn.AdaptiveMaxPool2d,
    torch.nn.AdaptiveAvgPool2d: snn.AdaptiveAvgPool2d,
    torch.nn.Hardtanh: snn.Hardtanh,
    torch.nn.ReLU6: snn.ReLU6,
    torch.nn.Hardsigmoid: snn.Hardsigmoid,
    torch.nn.Hardswish: snn.Hardswish,
    torch.nn.SiLU: snn.SiLU,
    torch.nn.LeakyReLU: snn.LeakyReLU,
    torch.nn.PReLU: snn.PReLU,
    torch.nn.Softplus: snn.Softplus,
    torch.nn.ELU: snn.ELU,
    torch.nn.SELU: snn.SELU,
    torch.nn.CELU: snn.CELU,
    torch.nn.Mish: snn.Mish,
    torch.nn.LogSigmoid: snn.LogSigmoid,
    torch.nn.Hardshrink: snn.Hardshrink,
    torch.nn.Softshrink: snn.Softshrink,
    torch.nn.Threshold: snn.Threshold,
    torch.nn.Softsign: snn.Softsign,
    torch.nn.Tanhshrink: snn.Tanhshrink,
    torch.nn.Embedding: snn.Embedding,
    torch.nn.EmbeddingBag: snn.EmbeddingBag,
    torch.nn.RNN: snn.RNN,
    torch.nn.LSTM: snn.LSTM,
    torch.nn.GRU: snn.GRU,
    torch.nn.RNNCell: snn.RNNCell,
    torch.nn.LSTMCell: snn.LSTMCell,
    torch.nn.GRUCell: snn.GRUCell,
}
_CONVERT.update({m.__mro__[1]: m for m in snn.PADDING})
_CONVERT.update({m.__mro__[1]: m for m in snn.UPSAMPLING})
if hasattr(torch.nn, "RMSNorm"):  # torch >= 2.4
    _CONVERT[torch.nn.RMSNorm] = snn.RMSNorm
# MultiheadAttention's out-projection holder (only its weight and bias are read)
_CONVERT[torch.nn.modules.linear.NonDynamicallyQuantizableLinear] = snn.Linear
# torch.nn modules whose forward is Python code over routed ops (strict mode
# runs F.multi_head_attention_forward and F.scaled_dot_product_attention on
# samebits' attention): kept, their children converted. In eval mode PyTorch
# may take a fused path (torch._transformer_encoder_layer_fwd,
# torch._native_multi_head_attention), which strict mode refuses by name.
_KEPT_TORCH = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer,
               torch.nn.TransformerDecoderLayer, torch.nn.TransformerEncoder,
               torch.nn.TransformerDecoder, torch.nn.Transformer)

# Modules that only move bits (views, copies) or hold others: kept as they are.
_EXACT = (torch.nn.Flatten, torch.nn.Unflatten, torch.nn.Identity)
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
_SAMEBITS = tuple(_CONVERT.values())


def _type_name(m):
    t = type(m)
    return "%s.%s" % (t.__module__, t.__qualname__)


def _at(path):
    return " (at '%s')" % path if path else " (the root module)"


# torch.fx graph nodes that only move or describe bits (views, shapes,
# indexing): a GraphModule made of these and call_module nodes runs its
# converted children and nothing else.
_FX_FUNCTIONS = (torch.flatten, torch.reshape, torch.squeeze, torch.unsqueeze, torch.permute,
                 torch.transpose, operator.getitem, getattr)
_FX_METHODS = ("view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose",
               "contiguous", "size", "dim")


def _refuse_kind(m, path):
    """Module kinds whose forward is not Python code calling its children, so
    converting the children would change nothing or not everything."""
    if isinstance(m, torch.jit.ScriptModule):
        raise UnsupportedModuleError(
            "samebits.from_torch_module: cannot convert TorchScript module %s%s: its forward is "
            "compiled PyTorch code that keeps PyTorch's arithmetic whatever its children become; "
            "convert the Python module first, then script or trace the result if you must"
            % (_type_name(m), _at(path)))
    if isinstance(m, torch.fx.GraphModule):
        for node in m.graph.nodes:
            op, target = node.op, node.target
            if op in ("placeholder", "output", "call_module", "get_attr") or \
                    (op == "call_function" and target in _FX_FUNCTIONS) or \
                    (op == "call_method" and target in _FX_METHODS):
                continue
            name = getattr(target, "__name__", target)
            raise UnsupportedModuleError(
                "samebits.from_torch_module: cannot convert torch.fx.GraphModule%s: node %r is %s "
                "%s, PyTorch arithmetic in the generated forward (only call_module nodes and "
                "views are convertible)" % (_at(path), node.name, op, name))
    hooks = [h for h in ("_forward_pre_hooks", "_forward_hooks") if getattr(m, h, None)]
    if hooks:
        raise UnsupportedModuleError(
            "samebits.from_torch_module: cannot convert %s%s: it has forward hooks (%s), which "
            "run PyTorch code around its forward (weight_norm, spectral_norm, parametrizations); "
            "remove them first" % (_type_name(m), _at(path), ", ".join(hooks)))


def _check(m, path):
    """Refuses settings a samebits module cannot honour, before any forward."""
    where = " (at '%s')" % path if path else ""
    t = type(m)
    if t is torch.nn.AvgPool2d and m.divisor_override is not None and (
            isinstance(m.divisor_override, bool) or not isinstance(m.divisor_override, int)
            or m.divisor_override == 0):
        raise UnsupportedModuleError("samebits.from_torch_module: cannot convert torch.nn.AvgPool2d%s "
                                  "with divisor_override=%r; it must be a nonzero int"
                                  % (where, m.divisor_override))
    if t in (torch.nn.Softmax, torch.nn.LogSoftmax) and m.dim is None:
        raise UnsupportedModuleError("samebits.from_torch_module: cannot convert %s%s with dim=None; "
                                  "give the dimension explicitly" % (_type_name(m), where))
    if t in (torch.nn.Embedding, torch.nn.EmbeddingBag):
        if m.sparse:
            raise UnsupportedModuleError("samebits.from_torch_module: cannot convert %s%s with "
                                         "sparse=True (samebits gradients are dense)"
                                         % (_type_name(m), where))
        if m.max_norm is not None and m.norm_type not in (1, 2):
            raise UnsupportedModuleError("samebits.from_torch_module: cannot convert %s%s with "
                                         "max_norm and norm_type=%r (only 1 and 2)"
                                         % (_type_name(m), where, m.norm_type))
    for name, p in list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False)):
        if p is None:
            continue
        if p.device.type != "cpu":
            raise UnsupportedModuleError(
                "samebits.from_torch_module: %s%s has %s on %s; CUDA tensors are not supported by "
                "this build (call .cpu() first)" % (_type_name(m), where, name, p.device))
        if p.dtype.is_floating_point and p.dtype != torch.float32:
            raise TypeError("samebits.from_torch_module: %s%s has %s of dtype %s; samebits "
                            "computes in float32 only (call .float() first)"
                            % (_type_name(m), where, name, p.dtype))


def _own_forward(m):
    """True for a subclass of a supported torch.nn class that defines its
    own forward below it (a subclass inheriting PyTorch's forward is not)."""
    t = type(m)
    base = next((b for b in t.__mro__ if b in _CONVERT), None)
    if base is None or t.__module__ == "torch" or t.__module__.startswith("torch."):
        return False
    return any("forward" in vars(k) for k in t.__mro__[:t.__mro__.index(base)])


def _convert(m, path):
    t = type(m)
    _refuse_kind(m, path)
    if t in _CONVERT:
        _check(m, path)
        new_cls = _CONVERT[t]
        if new_cls is snn.Dropout:
            seed, stream = snn._random.initial_seed(), snn._random._next_dropout_stream()
            m.__class__ = new_cls
            m.seed, m.stream, m.offset = seed, stream, 0
        elif new_cls in (snn.RNN, snn.LSTM, snn.GRU):
            m.__class__ = new_cls
            snn.recurrent.give_dropout_stream(m)   # its inter-layer dropout's Philox stream
        else:
            m.__class__ = new_cls
        return
    if isinstance(m, _SAMEBITS) or t in _EXACT or t in _CONTAINERS or \
            isinstance(m, torch.fx.GraphModule):
        pass
    elif t in _KEPT_TORCH:
        _check(m, path)
    elif _own_forward(m):
        # a user subclass of a supported module with its own forward (e.g.
        # torchvision's LayerNorm2d: permute, F.layer_norm, permute) is
        # custom code: kept, its forward runs under strict mode
        _check(m, path)
    elif t.__module__ == "torch" or t.__module__.startswith("torch.") or \
            isinstance(m, tuple(_CONVERT)):
        # a module of PyTorch's own (torch.nn, torch.ao quantized and fused
        # modules, ...) samebits has no version of, or a user subclass of a
        # supported one that may override its forward
        raise UnsupportedModuleError(
            "samebits.from_torch_module: cannot convert %s%s: samebits has no reproducible "
            "version of it (supported: %s; kept as they are: containers, Flatten, Unflatten, "
            "Identity and custom modules, whose children are converted)"
            % (_type_name(m), _at(path), ", ".join(sorted(c.__name__ for c in _CONVERT)), ))
    else:
        _check(m, path)  # a custom module: its own tensors must be float32 CPU
    for name, child in m.named_children():
        _convert(child, "%s.%s" % (path, name) if path else name)


def from_torch_module(module, strict=True):
    """A samebits copy of `module`: the tree is deep-copied (parameters and
    buffers included, the original is untouched), then every supported layer
    becomes its samebits.nn class; containers (Sequential, ModuleList,
    ModuleDict) and custom modules are kept and their children converted,
    Flatten/Unflatten/Identity are kept (exact). Any other torch.nn layer
    raises UnsupportedModuleError (a NotImplementedError) naming its type
    and place, and so do module kinds whose forward is not plain Python
    calling its children: TorchScript (scripted or traced) modules, a
    torch.fx GraphModule whose graph does arithmetic itself (one of only
    call_module nodes and views converts), and modules with forward hooks.

    strict=True (the default): the copy's forward runs under
    samebits.StrictMode, so the torch calls a custom module's own forward
    makes (x @ w, x + y, torch.tanh, x.mean(1)...) run samebits' kernels,
    pure data movement passes, and anything else raises
    NotReproducibleError naming the op and the module path (the tables are
    in samebits/strict.py). strict=False is the opt-out for users who accept
    PyTorch's arithmetic there: that code then runs PyTorch's kernels, whose
    bits depend on the machine. (`model.samebits_strict = False` switches a
    converted model later.) Dropout modules get Philox streams
    (samebits.random)."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError("samebits.from_torch_module: expected a torch.nn.Module, got %s"
                        % type(module).__name__)
    for path, m in module.named_modules():
        _refuse_kind(m, path)  # before copying anything
    out = copy.deepcopy(module)
    _convert(out, "")
    if strict:
        out.__class__ = strict_class(type(out))
    if getattr(type(out), "_samebits_strict", False):
        out.samebits_strict = bool(strict)
    return out
