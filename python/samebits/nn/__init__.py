"""samebits.nn: torch.nn modules whose forward and backward run in samebits.

Each class subclasses its torch.nn counterpart (same constructor, attributes,
parameter names and state_dict), so it drops into existing code; only the
arithmetic changes. Construction initialises parameters from Philox streams
(see samebits.random): Linear/Conv2d like PyTorch's default init, drawn so
that the same seed gives the same bits everywhere.

ReLU, MaxPool2d and AvgPool2d are here too although their values are exact
in PyTorch as well, because PyTorch's versions differ from the contract at
the edges: relu(-0.0) is -0.0 in PyTorch (+0.0 here), max-pooling returns
the last NaN of a window (the first here, which moves the gradient), and the
max-pool backward turns a -0.0 gradient into +0.0. Flatten, Unflatten and
Identity only move bits and stay PyTorch's.
"""
import numpy as np
import torch

from . import functional as F
from .. import random as _random

__all__ = ["Linear", "Conv2d", "Conv1d", "ConvTranspose2d", "ConvTranspose1d", "BatchNorm1d",
           "BatchNorm2d", "LayerNorm", "GroupNorm",
           "InstanceNorm1d", "InstanceNorm2d", "CrossEntropyLoss", "NLLLoss", "CTCLoss",
           "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout", "ReLU",
           "MaxPool2d", "AvgPool2d", "AdaptiveMaxPool2d", "AdaptiveAvgPool2d", "Hardtanh", "ReLU6", "Hardsigmoid",
           "Hardswish", "SiLU", "LeakyReLU", "PReLU", "Softplus", "ELU", "SELU", "CELU", "Mish",
           "LogSigmoid", "Hardshrink", "Softshrink", "Threshold", "Softsign", "Tanhshrink", "ConstantPad1d", "ConstantPad2d",
           "ZeroPad2d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
           "ReplicationPad2d", "Embedding", "EmbeddingBag", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "functional"]

class Linear(torch.nn.Linear):
    """y = x W^T + b; every element one fmaf chain over the inputs."""

    def reset_parameters(self):
        first = _random._next_streams(2 if self.bias is not None else 1)
        _random.fan_in_uniform_([self.weight, self.bias], self.in_features,
                                _random.initial_seed(), first)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class Conv2d(torch.nn.Conv2d):
    """2-D convolution: int, 'valid' or 'same' padding; padding_mode 'zeros'
    inside the convolution, or 'reflect' / 'replicate' / 'circular' as a pad()
    then an unpadded convolution (PyTorch's own structure)."""

    def reset_parameters(self):
        kh, kw = self.kernel_size
        first = _random._next_streams(2 if self.bias is not None else 1)
        _random.fan_in_uniform_([self.weight, self.bias], self.in_channels // self.groups * kh * kw,
                                _random.initial_seed(), first)

    def forward(self, input):
        if self.padding_mode != "zeros":
            # (left, right, top, bottom), 'same' resolved by torch.nn.Conv2d
            input = F.pad(input, tuple(self._reversed_padding_repeated_twice),
                          mode=self.padding_mode)
            return F.conv2d(input, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv1d(torch.nn.Conv1d):
    """1-D convolution: conv2d at height 1 (contract section 7, conv1d), with
    Conv2d's padding rules (int, 'valid', 'same'; padding_mode as a pad()
    then an unpadded convolution)."""

    def reset_parameters(self):
        first = _random._next_streams(2 if self.bias is not None else 1)
        _random.fan_in_uniform_([self.weight, self.bias],
                                self.in_channels // self.groups * self.kernel_size[0],
                                _random.initial_seed(), first)

    def forward(self, input):
        if self.padding_mode != "zeros":
            # (left, right), 'same' resolved by torch.nn.Conv1d
            input = F.pad(input, tuple(self._reversed_padding_repeated_twice),
                          mode=self.padding_mode)
            return F.conv1d(input, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class _ConvTransposeMixin:
    """PyTorch's init for transposed convolutions (fan_in = out/groups x
    kernel, weight (in, out/groups, kernel...)) and forward's output_size."""

    def reset_parameters(self):
        fan_in = self.out_channels // self.groups
        for k in self.kernel_size:
            fan_in *= k
        first = _random._next_streams(2 if self.bias is not None else 1)
        _random.fan_in_uniform_([self.weight, self.bias], fan_in, _random.initial_seed(), first)

    def _resolved_output_padding(self, input, output_size):
        """output_padding, or the one that gives output_size (the spatial
        sizes, or the full shape) as PyTorch computes it."""
        if output_size is None:
            return self.output_padding
        k = len(self.kernel_size)
        size = [int(v) for v in output_size]
        leading = 2 if input.dim() == k + 2 else 1  # (N, C) or (C)
        if len(size) == leading + k:
            size = size[leading:]
        if len(size) != k:
            raise ValueError("samebits.nn.%s: output_size must have %d or %d elements, got %r"
                             % (type(self).__name__, k, k + leading, tuple(output_size)))
        pads = []
        for d in range(k):
            n_in = input.shape[input.dim() - k + d]
            least = ((n_in - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not least <= size[d] < least + self.stride[d]:
                raise ValueError("samebits.nn.%s: requested output size %r is not reachable: "
                                 "dimension %d must be in [%d, %d]"
                                 % (type(self).__name__, tuple(size), d, least,
                                    least + self.stride[d] - 1))
            pads.append(size[d] - least)
        return tuple(pads)


class ConvTranspose2d(_ConvTransposeMixin, torch.nn.ConvTranspose2d):
    """2-D transposed convolution (contract section 7, conv_transpose2d):
    conv2d's chains with input and output exchanged. padding_mode 'zeros'
    only (as PyTorch)."""

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._resolved_output_padding(input, output_size), self.groups,
                                  self.dilation)


class ConvTranspose1d(_ConvTransposeMixin, torch.nn.ConvTranspose1d):
    """1-D transposed convolution: conv_transpose2d at height 1."""

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._resolved_output_padding(input, output_size), self.groups,
                                  self.dilation)


class _BatchNormMixin:
    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            with torch.no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()
            _random._next_streams(2)  # every parameter owns a stream, used or not

    def forward(self, input):
        """PyTorch's rules: without running statistics (track_running_stats
        False) both modes normalise with the batch statistics; momentum=None
        is the cumulative average, factor 1/n after the n-th training batch,
        computed as a float32 division (contract section 12)."""
        self._check_input_dim(input)
        momentum = self.momentum
        tracking = self.track_running_stats and self.running_mean is not None
        if self.training and tracking:
            # as PyTorch: counted before the forward (in Python, an exact
            # integer: no PyTorch kernel runs)
            n = int(self.num_batches_tracked) + 1
            self.num_batches_tracked.fill_(n)
            if momentum is None:
                if n > 1 << 24:
                    raise ValueError("samebits.nn.%s: momentum=None after %d batches: the "
                                     "cumulative factor 1/n is defined up to n = 2^24"
                                     % (type(self).__name__, n))
                momentum = float(np.float32(1.0) / np.float32(n))
        if momentum is None:
            momentum = 0.0   # not used: no running statistics are updated
        use_batch_stats = self.training or not tracking
        return F.batch_norm(input, self.running_mean if tracking else None,
                            self.running_var if tracking else None, self.weight, self.bias,
                            use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNormMixin, torch.nn.BatchNorm1d):
    """Batch norm over (N, C) or (N, C, L); PyTorch's running statistics."""


class BatchNorm2d(_BatchNormMixin, torch.nn.BatchNorm2d):
    """Batch norm over (N, C, H, W); PyTorch's running statistics."""


class LayerNorm(torch.nn.LayerNorm):
    def reset_parameters(self):
        if self.elementwise_affine:
            with torch.no_grad():
                self.weight.fill_(1.0)
                if getattr(self, "bias", None) is not None:
                    self.bias.zero_()
            _random._next_streams(2 if getattr(self, "bias", None) is not None else 1)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


if hasattr(torch.nn, "RMSNorm"):  # torch >= 2.4
    class RMSNorm(torch.nn.RMSNorm):
        """x * 1/sqrt(mean(x^2) + eps) [* weight] over the trailing
        normalized_shape; weight 1 at construction, eps=None is float32's
        machine epsilon, as PyTorch."""

        def reset_parameters(self):
            if self.elementwise_affine:
                with torch.no_grad():
                    self.weight.fill_(1.0)
                _random._next_streams(1)

        def forward(self, input):
            return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    __all__.append("RMSNorm")


class GroupNorm(torch.nn.GroupNorm):
    """Statistics per (sample, group of C/num_groups channels); per-channel
    affine weight 1 and bias 0 at construction, as PyTorch."""

    def reset_parameters(self):
        if self.affine:
            with torch.no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()
            _random._next_streams(2)  # every parameter owns a stream, used or not

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNormMixin:
    """Instance norm (F.instance_norm); with track_running_stats=True the
    running statistics are updated in training and used in evaluation,
    PyTorch's rules (momentum=None counts as 0, as in PyTorch)."""

    def reset_parameters(self):
        if self.affine:
            with torch.no_grad():
                self.weight.fill_(1.0)
                self.bias.zero_()
            _random._next_streams(2)

    # torch's forward checks the rank and adds/removes an unbatched input's
    # batch dim around this
    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNormMixin, torch.nn.InstanceNorm1d):
    """Instance norm over (N, C, L)."""


class InstanceNorm2d(_InstanceNormMixin, torch.nn.InstanceNorm2d):
    """Instance norm over (N, C, H, W)."""


class CrossEntropyLoss(torch.nn.CrossEntropyLoss):
    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(torch.nn.NLLLoss):
    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CTCLoss(torch.nn.CTCLoss):
    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                          reduction=self.reduction, zero_infinity=self.zero_infinity)


class MSELoss(torch.nn.MSELoss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(torch.nn.L1Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(torch.nn.SmoothL1Loss):
    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction,
                                beta=getattr(self, "beta", 1.0))


class HuberLoss(torch.nn.HuberLoss):
    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(torch.nn.BCELoss):
    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(torch.nn.BCEWithLogitsLoss):
    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(torch.nn.KLDivLoss):
    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class GELU(torch.nn.GELU):
    def forward(self, input):
        return F.gelu(input, approximate=getattr(self, "approximate", "none"))


class Tanh(torch.nn.Tanh):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(torch.nn.Sigmoid):
    def forward(self, input):
        return F.sigmoid(input)


class Softmax(torch.nn.Softmax):
    def forward(self, input):
        return F.softmax(input, self.dim)


class LogSoftmax(torch.nn.LogSoftmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


class ReLU(torch.nn.ReLU):
    """relu(-0.0) = +0.0 (PyTorch keeps -0.0). inplace=True is honoured (the
    input takes the result's bits)."""

    def forward(self, input):
        return F.relu(input, self.inplace)


class MaxPool2d(torch.nn.MaxPool2d):
    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool2d(torch.nn.AvgPool2d):
    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class Hardtanh(torch.nn.Hardtanh):
    """inplace=True is honoured (the input takes the result's bits)."""

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)


class ReLU6(torch.nn.ReLU6):
    def forward(self, input):
        return F.relu6(input, self.inplace)


class Hardsigmoid(torch.nn.Hardsigmoid):
    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(torch.nn.Hardswish):
    def forward(self, input):
        return F.hardswish(input, self.inplace)


class SiLU(torch.nn.SiLU):
    def forward(self, input):
        return F.silu(input, self.inplace)


class LeakyReLU(torch.nn.LeakyReLU):
    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)


class PReLU(torch.nn.PReLU):
    """x > 0 ? x : weight_c * x; weight (num_parameters,) filled with init at
    construction, as PyTorch, and owning one parameter stream."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__(num_parameters, init, device=device, dtype=dtype)
        self.init = init  # torch 1.13 does not keep it
        if "reset_parameters" not in vars(torch.nn.PReLU):  # torch 1.13 fills in __init__
            self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            self.weight.fill_(getattr(self, "init", 0.25))
        _random._next_streams(1)

    def forward(self, input):
        return F.prelu(input, self.weight)


class Softplus(torch.nn.Softplus):
    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)


class ELU(torch.nn.ELU):
    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)


class SELU(torch.nn.SELU):
    def forward(self, input):
        return F.selu(input, self.inplace)


class CELU(torch.nn.CELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class Mish(torch.nn.Mish):
    def forward(self, input):
        return F.mish(input, self.inplace)


class LogSigmoid(torch.nn.LogSigmoid):
    def forward(self, input):
        return F.logsigmoid(input)


class Hardshrink(torch.nn.Hardshrink):
    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Softshrink(torch.nn.Softshrink):
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Threshold(torch.nn.Threshold):
    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)


class Softsign(torch.nn.Softsign):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(torch.nn.Tanhshrink):
    def forward(self, input):
        return F.tanhshrink(input)


def _pad_module(base, mode):
    """The samebits version of a torch.nn padding module (its `padding`
    attribute is F.pad's tuple; constant ones carry `value`)."""

    class Pad(base):
        def forward(self, input):
            return F.pad(input, tuple(self.padding), mode,
                         getattr(self, "value", None) if mode == "constant" else None)

    Pad.__name__ = Pad.__qualname__ = base.__name__
    Pad.__module__ = __name__
    Pad.__doc__ = "%s: every output a bit copy; the backward sums an input's copies " \
                  "with the canonical sum in output order." % base.__name__
    return Pad


ConstantPad1d = _pad_module(torch.nn.ConstantPad1d, "constant")
ConstantPad2d = _pad_module(torch.nn.ConstantPad2d, "constant")
ZeroPad2d = _pad_module(torch.nn.ZeroPad2d, "constant")
ReflectionPad1d = _pad_module(torch.nn.ReflectionPad1d, "reflect")
ReflectionPad2d = _pad_module(torch.nn.ReflectionPad2d, "reflect")
ReplicationPad1d = _pad_module(torch.nn.ReplicationPad1d, "replicate")
ReplicationPad2d = _pad_module(torch.nn.ReplicationPad2d, "replicate")
PADDING = [ConstantPad1d, ConstantPad2d, ZeroPad2d, ReflectionPad1d, ReflectionPad2d,
           ReplicationPad1d, ReplicationPad2d]
if hasattr(torch.nn, "CircularPad2d"):  # torch >= 2.1
    CircularPad1d = _pad_module(torch.nn.CircularPad1d, "circular")
    CircularPad2d = _pad_module(torch.nn.CircularPad2d, "circular")
    PADDING += [CircularPad1d, CircularPad2d]
    __all__ += ["CircularPad1d", "CircularPad2d"]


class AdaptiveMaxPool2d(torch.nn.AdaptiveMaxPool2d):
    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


def _upsample_module(base):
    """The samebits version of torch.nn.Upsample or one of its fixed-mode
    subclasses: the same attributes, forward through F.interpolate."""

    class Up(base):
        def forward(self, input):
            return F.interpolate(input, self.size, self.scale_factor, self.mode,
                                 self.align_corners,
                                 recompute_scale_factor=getattr(self, "recompute_scale_factor",
                                                                None))

    Up.__name__ = Up.__qualname__ = base.__name__
    Up.__module__ = __name__
    Up.__doc__ = "%s: F.interpolate's contract bits (section 8, Interpolation)." % base.__name__
    return Up


Upsample = _upsample_module(torch.nn.Upsample)
UpsamplingNearest2d = _upsample_module(torch.nn.UpsamplingNearest2d)
UpsamplingBilinear2d = _upsample_module(torch.nn.UpsamplingBilinear2d)
UPSAMPLING = [Upsample, UpsamplingNearest2d, UpsamplingBilinear2d]


class AdaptiveAvgPool2d(torch.nn.AdaptiveAvgPool2d):
    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class Dropout(torch.nn.Dropout):
    """Inverted dropout with Philox masks: element i of the k-th training-mode
    call uses Philox element (seed, stream, offset + i), and offset then
    advances by the input's size. seed defaults to samebits' manual_seed
    value and stream to the next Dropout stream (samebits.random)."""

    def __init__(self, p=0.5, inplace=False, seed=None, stream=None):
        super().__init__(p, inplace)
        self.seed = _random.initial_seed() if seed is None else int(seed)
        self.stream = _random._next_dropout_stream() if stream is None else int(stream)
        self.offset = 0

    def forward(self, input):
        y = F.dropout(input, self.p, self.training, self.seed, self.stream, self.offset)
        if self.training:
            self.offset += input.numel()
        return y

    def extra_repr(self):
        return "p=%s, seed=%d, stream=%#x, offset=%d" % (self.p, self.seed, self.stream, self.offset)


def _normal_rows_(module):
    """PyTorch's Embedding init, N(0, 1), from a Philox stream of the
    samebits seed, then the padding row zeroed."""
    stream = _random._next_streams(1)
    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(_random.normal(tuple(module.weight.shape),
                                                            _random.initial_seed(), stream)))
    module._fill_padding_idx_with_zero()


class Embedding(torch.nn.Embedding):
    """weight[input] (bits copied); the weight gradient adds dy's rows in
    ascending position (contract section 18)."""

    def reset_parameters(self):
        _normal_rows_(self)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(torch.nn.EmbeddingBag):
    """Bags of rows reduced in ascending position: sum (one add at a time),
    mean (that sum / count), max (sb_max's order)."""

    def reset_parameters(self):
        _normal_rows_(self)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse, per_sample_weights,
                               self.include_last_offset, getattr(self, "padding_idx", None))


# recurrent layers: a fixed sequence of the ops above (contract section 7)
from .recurrent import RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell  # noqa: E402
from .._convert import samebits_code  # noqa: E402


def _forwards_as_samebits_code(namespace):
    """Every samebits.nn layer's forward runs as samebits code
    (_convert.samebits_code): set once here, over every layer class of the
    package and the mixins that define its forward, so that none is left
    out."""
    for layer in list(namespace.values()):
        if not (isinstance(layer, type) and issubclass(layer, torch.nn.Module)):
            continue
        for cls in layer.__mro__:
            fwd = cls.__dict__.get("forward")
            if cls.__module__.startswith(__name__) and fwd is not None and \
                    not hasattr(fwd, "__wrapped__"):
                cls.forward = samebits_code(fwd)


_forwards_as_samebits_code(globals())
