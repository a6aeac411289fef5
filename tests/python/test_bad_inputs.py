"""Every public function of samebits.ops and samebits.nn.functional against
bad input, generated: the functions are found by introspection (a new op
without a valid call below fails test_every_public_function_has_a_valid_call),
and each argument of a known-good call is mutated in turn: None, float64 and
int64 arrays, a rank more and a rank less, a mismatched size, a zero size,
a non-contiguous view, out-of-range and non-integral integers, floats a C
float cannot hold, huge and negative shapes, and aliased in-place outputs.
Each mutated call must raise a clear exception (a samebits message naming
the function) and leave every argument's bits as they were, or, for the
mutations listed as valid for that function, succeed. tests/check_python.sh
also runs this file against the ASan build."""
import inspect

import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as F

CLEAR_ERRORS = (TypeError, ValueError, OverflowError, NotImplementedError, samebits.SamebitsError)

# Public functions that take no tensor: nothing to mutate (and why).
EXEMPT = {}


def public_functions(module):
    return sorted(name for name, f in vars(module).items()
                  if not name.startswith("_") and inspect.isfunction(f) and
                  f.__module__ == module.__name__)


def _rng():
    return np.random.default_rng(7)


def _f(*shape, positive=False):
    a = _rng().standard_normal(shape).astype(np.float32)
    return np.abs(a) + np.float32(0.5) if positive else a


def _i(*shape, high=3):
    return (np.arange(int(np.prod(shape)), dtype=np.int64) % high).reshape(shape)


def _pool_indices():
    _, idx = ops.max_pool2d(_f(1, 2, 4, 4), 2, return_indices=True)
    return idx


def _amax_indices():
    _, idx = ops.adaptive_max_pool2d(_f(1, 2, 5, 4), 3, return_indices=True)
    return idx


# name -> (a function giving the keyword arguments of a valid call, the
# mutations "arg:kind" that are valid for it and must succeed)
ELEMENTWISE_OK = {"rank_up", "rank_down", "zero", "mismatch"}


def _all(args, kinds):
    return {"%s:%s" % (a, k) for a in args for k in kinds}


BROADCAST_OK = _all("ab", ("rank_down",)) | {"a:rank_up", "b:rank_up"}

OPS = {
    # a batched operand broadcasts against a 2-D one
    "mm": (lambda: dict(a=_f(2, 3), b=_f(3, 4), trans_a=False, trans_b=False), {"a:zero", "a:rank_up", "b:rank_up",
                                                   "b:mismatch"}),
    "mm_backward": (lambda: dict(dout=_f(2, 4), a=_f(2, 3), b=_f(3, 4), trans_b=False), set()),
    "linear": (lambda: dict(x=_f(2, 3), weight=_f(4, 3), bias=_f(4)),
               {"x:rank_up", "x:rank_down", "x:zero"}),
    "linear_backward": (lambda: dict(dy=_f(2, 4), x=_f(2, 3), weight=_f(4, 3)), set()),
    "binary_backward": (lambda: dict(op="mul", dy=_f(2, 3), a=_f(2, 3), b=_f(2, 3)),
                        {"a:rank_down", "b:rank_down"}),
    "unary_backward": (lambda: dict(op="exp", x=_f(2, 3), y=_f(2, 3), dy=_f(2, 3)), set()),
    "relu_backward": (lambda: dict(x=_f(2, 3), dy=_f(2, 3)), set()),
    "tanh_backward": (lambda: dict(y=_f(2, 3), dy=_f(2, 3)), set()),
    "sigmoid_backward": (lambda: dict(y=_f(2, 3), dy=_f(2, 3)), set()),
    "gelu_backward": (lambda: dict(x=_f(2, 3), dy=_f(2, 3), approximate="none"), set()),
    "softmax": (lambda: dict(x=_f(2, 3), dim=-1), _all("x", ELEMENTWISE_OK)),
    "log_softmax": (lambda: dict(x=_f(2, 3), dim=-1), _all("x", ELEMENTWISE_OK)),
    "softmax_backward": (lambda: dict(y=_f(2, 3), dy=_f(2, 3), dim=-1), set()),
    "log_softmax_backward": (lambda: dict(y=_f(2, 3), dy=_f(2, 3), dim=-1), set()),
    "cross_entropy": (lambda: dict(logits=_f(2, 3), targets=_i(2), ignore_index=-100,
                                   reduction="mean", label_smoothing=0.1),
                      {"ignore_index:negative", "logits:mismatch"}),
    "cross_entropy_backward": (lambda: dict(logits=_f(2, 3), targets=_i(2), dloss=_f()),
                               {"logits:mismatch"}),
    "nll_loss": (lambda: dict(logp=_f(2, 3), targets=_i(2), weight=_f(3, positive=True),
                              reduction="mean", ignore_index=-100),
                 {"ignore_index:negative"}),
    "ctc_loss": (lambda: dict(log_probs=_f(4, 2, 3), targets=np.array([[1, 1], [2, 0]]),
                              input_lengths=np.array([4, 3]), target_lengths=np.array([2, 1]),
                              blank=0, reduction="mean", zero_infinity=False),
                 {"log_probs:mismatch", "targets:mismatch"}),
    "ctc_loss_backward": (lambda: dict(log_probs=_f(4, 2, 3), targets=np.array([[1, 1], [2, 0]]),
                                       input_lengths=np.array([4, 3]),
                                       target_lengths=np.array([2, 1]), dloss=_f()),
                          {"log_probs:mismatch", "targets:mismatch"}),
    "nll_loss_backward": (lambda: dict(logp=_f(2, 3), targets=_i(2), dloss=_f(),
                                       weight=_f(3, positive=True)), set()),
    "mse_loss": (lambda: dict(x=_f(2, 3), y=_f(2, 3), reduction="sum"), set()),
    "mse_loss_backward": (lambda: dict(x=_f(2, 3), y=_f(2, 3), dloss=_f()), set()),
    "conv2d": (lambda: dict(x=_f(1, 2, 5, 5), weight=_f(3, 2, 3, 3), bias=_f(3), stride=1,
                            padding=1, dilation=1, groups=1),
               {"x:zero", "x:mismatch", "weight:mismatch"}),
    "conv2d_backward": (lambda: dict(dy=_f(1, 3, 3, 3), x=_f(1, 2, 5, 5), weight=_f(3, 2, 3, 3),
                                     stride=1, padding=0), set()),
    "conv2d_input": (lambda: dict(input_size=(1, 2, 5, 5), weight=_f(3, 2, 3, 3),
                                  grad_output=_f(1, 3, 3, 3)), set()),
    "conv2d_weight": (lambda: dict(input=_f(1, 2, 5, 5), weight_size=(3, 2, 3, 3),
                                   grad_output=_f(1, 3, 3, 3)), set()),
    "max_pool2d": (lambda: dict(x=_f(1, 2, 4, 4), kernel_size=2, stride=2, padding=0,
                                ceil_mode=False, return_indices=False),
                   {"x:zero", "x:mismatch", "stride:none"}),
    "max_pool2d_backward": (lambda: dict(dy=_f(1, 2, 2, 2), indices=_pool_indices(),
                                         input_shape=(1, 2, 4, 4), kernel_size=2), set()),
    "avg_pool2d": (lambda: dict(x=_f(1, 2, 4, 4), kernel_size=2, stride=2, padding=1,
                                count_include_pad=True), {"x:zero", "x:mismatch", "stride:none"}),
    "avg_pool2d_backward": (lambda: dict(dy=_f(1, 2, 2, 2), input_shape=(1, 2, 4, 4),
                                         kernel_size=2), set()),
    "pad2d": (lambda: dict(x=_f(1, 2, 4, 5), pad=(1, 2, 2, 1), mode="reflect"),
              {"x:zero", "x:mismatch"}),
    "pad2d_backward": (lambda: dict(dy=_f(1, 2, 7, 8), input_shape=(1, 2, 4, 5), pad=(1, 2, 2, 1),
                                    mode="reflect"), set()),
    # any N and any output size are valid; scales are positive numbers, not sizes
    "interpolate": (lambda: dict(x=_f(1, 2, 5, 4), size=(7, 3), mode="linear",
                                 align_corners=False, scales=(2.0, 0.5)),
                    {"x:zero", "x:mismatch", "scales:huge_size", "scales:overflowing_size",
                     "scales:non_integral_size"}),
    "interpolate_backward": (lambda: dict(dy=_f(1, 2, 7, 3), input_shape=(1, 2, 5, 4),
                                          mode="cubic", align_corners=True), {"dy:mismatch"}),
    # any input size is valid; the grid fixes N and the output size
    "grid_sample": (lambda: dict(x=_f(1, 2, 5, 4), grid=_f(1, 3, 3, 2), mode="bilinear",
                                 padding_mode="border", align_corners=False), {"x:mismatch"}),
    "grid_sample_backward": (lambda: dict(dy=_f(1, 2, 3, 3), x=_f(1, 2, 5, 4), grid=_f(1, 3, 3, 2),
                                          mode="bilinear", padding_mode="reflection",
                                          align_corners=True), {"x:mismatch"}),
    "adaptive_max_pool2d": (lambda: dict(x=_f(1, 2, 5, 4), output_size=3, return_indices=False),
                            {"x:zero", "x:mismatch"}),
    "adaptive_max_pool2d_backward": (lambda: dict(dy=_f(1, 2, 3, 3), indices=_amax_indices(),
                                                  input_shape=(1, 2, 5, 4)), set()),
    "adaptive_avg_pool2d": (lambda: dict(x=_f(1, 2, 5, 4), output_size=3),
                            {"x:zero", "x:mismatch"}),
    "adaptive_avg_pool2d_backward": (lambda: dict(dy=_f(1, 2, 3, 3), input_shape=(1, 2, 5, 4)),
                                     {"dy:mismatch"}),
    "sum": (lambda: dict(x=_f(2, 3), dim=1, keepdim=False), {"x:rank_up", "x:zero", "x:mismatch", "dim:none"}),
    "mean": (lambda: dict(x=_f(2, 3), dim=1), {"x:rank_up", "x:zero", "x:mismatch", "dim:none"}),
    "sum_backward": (lambda: dict(dy=_f(2), input_shape=(2, 3), dim=1), set()),
    "mean_backward": (lambda: dict(dy=_f(2), input_shape=(2, 3), dim=1, keepdim=False), set()),
    "batch_norm": (lambda: dict(x=_f(4, 3), running_mean=_f(3), running_var=_f(3, positive=True),
                                weight=_f(3), bias=_f(3), training=True, momentum=0.1, eps=1e-5),
                   set()),
    "batch_norm_backward": (lambda: dict(dy=_f(4, 3), x=_f(4, 3), weight=_f(3), save_mean=_f(3),
                                         save_rstd=_f(3, positive=True), training=True),
                            {"weight:none"}),
    "layer_norm": (lambda: dict(x=_f(2, 3), normalized_shape=(3,), weight=_f(3), bias=_f(3),
                                eps=1e-5),
                   {"x:rank_up", "x:rank_down", "x:zero"}),
    "layer_norm_backward": (lambda: dict(dy=_f(2, 3), x=_f(2, 3), normalized_ndim=1, weight=_f(3),
                                         save_mean=_f(2), save_rstd=_f(2, positive=True)),
                            {"weight:none"}),
    "rms_norm": (lambda: dict(x=_f(2, 3), normalized_shape=(3,), weight=_f(3), eps=1e-5),
                 {"x:rank_up", "x:rank_down", "x:zero", "eps:none"}),
    "rms_norm_backward": (lambda: dict(dy=_f(2, 3), x=_f(2, 3), normalized_ndim=1, weight=_f(3),
                                       save_rrms=_f(2, positive=True)),
                          {"weight:none"}),
    # any spatial size and any batch size (also 0) are valid
    "group_norm": (lambda: dict(x=_f(2, 4, 3), num_groups=2, weight=_f(4), bias=_f(4), eps=1e-5),
                   {"x:mismatch", "x:zero"}),
    "group_norm_backward": (lambda: dict(dy=_f(2, 4, 3), x=_f(2, 4, 3), num_groups=2,
                                         weight=_f(4), save_mean=_f(2, 2),
                                         save_rstd=_f(2, 2, positive=True)),
                            {"weight:none"}),
    "dropout": (lambda: dict(x=_f(2, 3), p=0.5, training=True, seed=1, stream=2, offset=3),
                _all("x", ELEMENTWISE_OK)),
    "dropout_backward": (lambda: dict(dy=_f(2, 3), mask=ops.dropout(_f(2, 3), 0.5, True, 1, 2)[1],
                                      p=0.5, training=True), set()),
    # the index family: index values in range (_i gives 0, 1, 2)
    # (PyTorch's rules: an index may be larger along dim, smaller elsewhere, or empty)
    "gather": (lambda: dict(x=_f(2, 3), dim=1, index=_i(2, 4)),
               {"x:mismatch", "index:mismatch", "index:zero"}),
    "gather_backward": (lambda: dict(dy=_f(2, 4), dim=1, index=_i(2, 4), input_shape=(2, 3)),
                        set()),
    "scatter_add": (lambda: dict(x=_f(2, 3), dim=1, index=_i(2, 4), src=_f(2, 4)),
                    {"x:mismatch", "index:zero", "src:mismatch"}),
    "index_select": (lambda: dict(x=_f(2, 3), dim=1, index=_i(4)),
                     {"x:mismatch", "x:zero", "index:mismatch", "index:zero"}),
    "index_select_backward": (lambda: dict(dy=_f(2, 4), dim=1, index=_i(4), input_shape=(2, 3)),
                              set()),
    "index_add": (lambda: dict(x=_f(2, 3), dim=1, index=_i(4), source=_f(2, 4), alpha=0.5),
                  {"x:mismatch"}),
    "scatter_reduce": (lambda: dict(x=_f(2, 3), dim=1, index=_i(2, 4), src=_f(2, 4), reduce="mean",
                                    include_self=False),
                       {"x:mismatch", "index:zero", "src:mismatch"}),
    # counting: x's values below the bins (minlength widens them); any x for histc
    "bincount": (lambda: dict(x=_i(5), weights=_f(5), minlength=4), set()),
    "histc": (lambda: dict(x=_f(2, 3), bins=4, min=-1.0, max=1.0),
              _all(["x"], ("rank_up", "rank_down", "zero", "mismatch"))),
    # running chains (contract section 10): any shape with a dim 1
    "cumsum": (lambda: dict(x=_f(2, 3), dim=1), {"x:rank_up", "x:zero", "x:mismatch"}),
    "cumsum_backward": (lambda: dict(dy=_f(2, 3), dim=1), {"dy:rank_up", "dy:zero", "dy:mismatch"}),
    "cumprod": (lambda: dict(x=_f(2, 3), dim=1), {"x:rank_up", "x:zero", "x:mismatch"}),
    "cumprod_backward": (lambda: dict(x=_f(2, 3), y=_f(2, 3), dy=_f(2, 3), dim=1), set()),
    # selection: any shape with a dim 1 (of at least k elements)
    "sort": (lambda: dict(x=_f(2, 3), dim=1, descending=True), {"x:rank_up", "x:zero", "x:mismatch"}),
    "topk": (lambda: dict(x=_f(2, 3), k=2, dim=1, largest=False),
             {"x:rank_up", "x:zero", "x:mismatch"}),
    "kthvalue": (lambda: dict(x=_f(2, 3), k=2, dim=1, keepdim=True),
                 {"x:rank_up", "x:zero", "x:mismatch"}),
    "median": (lambda: dict(x=_f(2, 3), dim=1, keepdim=False), {"x:rank_up", "x:zero", "x:mismatch"}),
    "sort_backward": (lambda: dict(dy=_f(2, 2), dim=1, indices=_i(2, 2), input_shape=(2, 3)), set()),
    # attention: q (2, 3, 4), k (2, 5, 4), v (2, 5, 3), a float mask (3, 5)
    "scaled_dot_product_attention": (lambda: dict(query=_f(2, 3, 4), key=_f(2, 5, 4),
                                                  value=_f(2, 5, 3), attn_mask=_f(3, 5),
                                                  dropout_p=0.25, causal=True, scale=0.5, seed=1,
                                                  stream=2, offset=0),
                                     {"value:mismatch", "attn_mask:rank_down", "scale:none"}),
    "default_scale": (lambda: dict(e=4), set()),
}
OPS["hardtanh"] = (lambda: dict(x=_f(2, 3), min_val=-0.5, max_val=0.5), _all("x", ELEMENTWISE_OK))
OPS["hardtanh_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), min_val=-0.5, max_val=0.5),
                            set())
for _n in ("relu6", "hardsigmoid", "hardswish"):
    OPS[_n] = (lambda: dict(x=_f(2, 3)), _all("x", ELEMENTWISE_OK))
for _n in ("hardsigmoid_backward", "hardswish_backward", "silu_backward"):
    OPS[_n] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3)), set())
OPS["silu"] = (lambda: dict(x=_f(2, 3)), _all("x", ELEMENTWISE_OK))
OPS["leaky_relu"] = (lambda: dict(x=_f(2, 3), negative_slope=0.1), _all("x", ELEMENTWISE_OK))
OPS["leaky_relu_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), negative_slope=0.1), set())
OPS["softplus"] = (lambda: dict(x=_f(2, 3), beta=2.0, threshold=10.0), _all("x", ELEMENTWISE_OK))
OPS["softplus_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), beta=2.0, threshold=10.0),
                            set())
OPS["elu"] = (lambda: dict(x=_f(2, 3), alpha=1.5, scale=1.0, input_scale=1.0),
             _all("x", ELEMENTWISE_OK))
OPS["elu_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), alpha=1.5, scale=1.0,
                                    input_scale=1.0), set())
OPS["celu"] = (lambda: dict(x=_f(2, 3), alpha=1.5), _all("x", ELEMENTWISE_OK))
for _n in ("selu", "mish", "logsigmoid"):
    OPS[_n] = (lambda: dict(x=_f(2, 3)), _all("x", ELEMENTWISE_OK))
for _n in ("mish_backward", "logsigmoid_backward"):
    OPS[_n] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3)), set())
for _n in ("hardshrink", "softshrink"):
    OPS[_n] = (lambda: dict(x=_f(2, 3), lambd=0.25), _all("x", ELEMENTWISE_OK))
    OPS[_n + "_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), lambd=0.25), set())
OPS["threshold"] = (lambda: dict(x=_f(2, 3), threshold=0.1, value=2.0), _all("x", ELEMENTWISE_OK))
OPS["threshold_backward"] = (lambda: dict(x=_f(2, 3), dy=_f(2, 3), threshold=0.1), set())
# x (N, C, L): any N and L are valid; a 0-D weight is one shared slope
OPS["prelu"] = (lambda: dict(x=_f(2, 3, 4), weight=_f(3)),
                {"x:zero", "x:mismatch", "weight:rank_down"})
OPS["prelu_backward"] = (lambda: dict(x=_f(2, 3, 4), weight=_f(3), dy=_f(2, 3, 4)),
                         {"weight:rank_down"})
for _n in ("add", "sub", "mul", "div"):
    OPS[_n] = (lambda: dict(a=_f(2, 3), b=_f(2, 3, positive=True)), BROADCAST_OK)
for _n in ("neg", "abs", "sqrt", "exp", "log", "square", "reciprocal", "sin", "cos", "exp2", "log2",
           "rsqrt", "relu", "tanh", "sigmoid",
           "gelu"):
    OPS[_n] = (lambda: dict(x=_f(2, 3, positive=True)), _all("x", ELEMENTWISE_OK))


def _t(a):
    return torch.from_numpy(a)


# one rank less is the unbatched form (C, L) / (C, H, W), valid as in PyTorch
CONV_OK = {"input:zero", "input:mismatch", "weight:mismatch", "input:rank_down"}

FUNCTIONAL = {
    "linear": (lambda: dict(input=_t(_f(2, 3)), weight=_t(_f(4, 3)), bias=_t(_f(4))),
               {"input:rank_up", "input:rank_down", "input:zero"}),
    "conv2d": (lambda: dict(input=_t(_f(1, 2, 5, 5)), weight=_t(_f(3, 2, 3, 3)), bias=_t(_f(3))),
               {"input:zero", "input:mismatch", "weight:mismatch"}),
    "conv1d": (lambda: dict(input=_t(_f(1, 2, 6)), weight=_t(_f(3, 2, 3)), bias=_t(_f(3))),
               CONV_OK),
    "conv_transpose2d": (lambda: dict(input=_t(_f(1, 2, 4, 4)), weight=_t(_f(2, 3, 3, 3)),
                                      bias=_t(_f(3)), stride=2, padding=1, output_padding=1),
                         CONV_OK),
    "conv_transpose1d": (lambda: dict(input=_t(_f(1, 2, 5)), weight=_t(_f(2, 3, 3)),
                                      bias=_t(_f(3)), stride=2, padding=1, output_padding=1),
                         CONV_OK),
    "max_pool2d": (lambda: dict(input=_t(_f(1, 2, 4, 4)), kernel_size=2, stride=2, padding=0,
                                dilation=1, ceil_mode=False, return_indices=False),
                   {"input:zero", "input:mismatch", "stride:none"}),
    "avg_pool2d": (lambda: dict(input=_t(_f(1, 2, 4, 4)), kernel_size=2),
                   {"input:zero", "input:mismatch"}),
    "pad": (lambda: dict(input=_t(_f(1, 2, 4, 5)), pad=(1, 2, 2, 1), mode="reflect"),
            _all(["input"], ELEMENTWISE_OK)),
    "interpolate": (lambda: dict(input=_t(_f(1, 2, 5, 4)), size=(7, 3), mode="bilinear",
                                 align_corners=True), {"input:zero", "input:mismatch"}),
    "upsample": (lambda: dict(input=_t(_f(1, 2, 5, 4)), size=(7, 3), mode="bicubic",
                              align_corners=False), {"input:zero", "input:mismatch"}),
    "upsample_nearest": (lambda: dict(input=_t(_f(1, 2, 5, 4)), size=(7, 3)),
                         {"input:zero", "input:mismatch"}),
    "upsample_bilinear": (lambda: dict(input=_t(_f(1, 2, 5, 4)), size=(7, 3)),
                          {"input:zero", "input:mismatch"}),
    "grid_sample": (lambda: dict(input=_t(_f(1, 2, 5, 4)), grid=_t(_f(1, 3, 3, 2)),
                                 mode="nearest", padding_mode="zeros", align_corners=True),
                    {"input:mismatch"}),
    "affine_grid": (lambda: dict(theta=_t(_f(2, 2, 3)), size=(2, 3, 5, 7), align_corners=False),
                    set()),
    "adaptive_max_pool2d": (lambda: dict(input=_t(_f(1, 2, 5, 4)), output_size=3,
                                         return_indices=False), {"input:zero", "input:mismatch"}),
    "adaptive_avg_pool2d": (lambda: dict(input=_t(_f(1, 2, 5, 4)), output_size=(3, None)),
                            {"input:zero", "input:mismatch"}),
    "softmax": (lambda: dict(input=_t(_f(2, 3)), dim=-1), _all(["input"], ELEMENTWISE_OK)),
    "log_softmax": (lambda: dict(input=_t(_f(2, 3)), dim=-1), _all(["input"], ELEMENTWISE_OK)),
    "cross_entropy": (lambda: dict(input=_t(_f(2, 3)), target=_t(_i(2)), ignore_index=-100,
                                   reduction="sum", label_smoothing=0.1),
                      {"input:mismatch", "ignore_index:negative"}),
    "ctc_loss": (lambda: dict(log_probs=_t(_f(4, 2, 3)), targets=_t(np.array([[1, 1], [2, 0]])),
                              input_lengths=_t(np.array([4, 3])),
                              target_lengths=_t(np.array([2, 1])), blank=0, reduction="sum"),
                 {"log_probs:mismatch", "targets:mismatch"}),
    "nll_loss": (lambda: dict(input=_t(_f(2, 3)), target=_t(_i(2)), weight=_t(_f(3, positive=True)),
                              ignore_index=-100, reduction="sum"),
                 {"ignore_index:negative"}),
    "mse_loss": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3)), reduction="none"), set()),
    "l1_loss": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3)), reduction="sum"), set()),
    "smooth_l1_loss": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3)), beta=0.5), set()),
    "huber_loss": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3)), delta=0.5), set()),
    "binary_cross_entropy": (lambda: dict(input=_t(_rng().random((2, 3)).astype(np.float32)),
                                          target=_t(_f(2, 3)), reduction="none"), set()),
    "binary_cross_entropy_with_logits": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3)),
                                                      pos_weight=_t(_f(2, 3))),
                                         {"pos_weight:rank_down"}),  # broadcasts, like PyTorch
    "kl_div": (lambda: dict(input=_t(_f(2, 3)), target=_t(_f(2, 3, positive=True)),
                            reduction="sum"), set()),
    "batch_norm": (lambda: dict(input=_t(_f(4, 3)), running_mean=_t(_f(3)),
                                running_var=_t(_f(3, positive=True)), weight=_t(_f(3)),
                                bias=_t(_f(3)), training=True, momentum=0.1, eps=1e-5), set()),
    "layer_norm": (lambda: dict(input=_t(_f(2, 3)), normalized_shape=(3,), weight=_t(_f(3)),
                                bias=_t(_f(3))), {"input:rank_up", "input:rank_down", "input:zero"}),
    "rms_norm": (lambda: dict(input=_t(_f(2, 3)), normalized_shape=(3,), weight=_t(_f(3)),
                              eps=1e-5),
                 {"input:rank_up", "input:rank_down", "input:zero", "eps:none"}),
    "group_norm": (lambda: dict(input=_t(_f(2, 4, 3)), num_groups=2, weight=_t(_f(4)),
                                bias=_t(_f(4)), eps=1e-5), {"input:mismatch", "input:zero"}),
    "instance_norm": (lambda: dict(input=_t(_f(2, 4, 3)), weight=_t(_f(4)), bias=_t(_f(4)),
                                   eps=1e-5), {"input:mismatch", "input:zero"}),
    "dropout": (lambda: dict(input=_t(_f(2, 3)), p=0.5, training=True, seed=1, stream=2,
                             offset=0),
                _all(["input"], ELEMENTWISE_OK)),
    "mm": (lambda: dict(a=_t(_f(2, 3)), b=_t(_f(3, 4)), trans_a=False), {"a:zero", "a:rank_up", "b:rank_up",
                                                         "b:mismatch"}),
    "div": (lambda: dict(a=_t(_f(2, 3)), b=_t(_f(2, 3, positive=True))), BROADCAST_OK),
    "sum": (lambda: dict(input=_t(_f(2, 3)), dim=1, keepdim=True), {"input:rank_up", "input:zero",
                                                     "input:mismatch", "dim:none"}),
    "mean": (lambda: dict(input=_t(_f(2, 3)), dim=1), {"input:rank_up", "input:zero",
                                                      "input:mismatch", "dim:none"}),
    "gather": (lambda: dict(input=_t(_f(2, 3)), dim=1, index=_t(_i(2, 4))),
               {"input:mismatch", "index:mismatch", "index:zero"}),
    "index_select": (lambda: dict(input=_t(_f(2, 3)), dim=1, index=_t(_i(4))),
                     {"input:mismatch", "input:zero", "index:mismatch", "index:zero",
                      "index:rank_down"}),
    "scatter_add": (lambda: dict(input=_t(_f(2, 3)), dim=1, index=_t(_i(2, 4)),
                                 src=_t(_f(2, 4))), {"input:mismatch", "index:zero", "src:mismatch"}),
    "index_add": (lambda: dict(input=_t(_f(2, 3)), dim=1, index=_t(_i(4)), source=_t(_f(2, 4)),
                               alpha=0.5), {"input:mismatch"}),
    "scatter_reduce": (lambda: dict(input=_t(_f(2, 3)), dim=1, index=_t(_i(2, 4)),
                                    src=_t(_f(2, 4)), reduce="amax", include_self=True),
                       {"input:mismatch", "index:zero", "src:mismatch"}),
    "bincount": (lambda: dict(input=_t(_i(5)), weights=_t(_f(5)), minlength=4), set()),
    "histc": (lambda: dict(input=_t(_f(2, 3)), bins=4, min=-1.0, max=1.0),
              _all(["input"], ("rank_up", "rank_down", "zero", "mismatch"))),
    "cumsum": (lambda: dict(input=_t(_f(2, 3)), dim=1), {"input:rank_up", "input:zero",
                                                        "input:mismatch"}),
    "cumprod": (lambda: dict(input=_t(_f(2, 3)), dim=1), {"input:rank_up", "input:zero",
                                                         "input:mismatch"}),
    "sort": (lambda: dict(input=_t(_f(2, 3)), dim=1, descending=True),
             {"input:rank_up", "input:zero", "input:mismatch"}),
    "argsort": (lambda: dict(input=_t(_f(2, 3)), dim=1, descending=False),
                {"input:rank_up", "input:zero", "input:mismatch"}),
    "msort": (lambda: dict(input=_t(_f(2, 3))), {"input:rank_up", "input:rank_down", "input:zero",
                                                "input:mismatch"}),
    "topk": (lambda: dict(input=_t(_f(2, 3)), k=2, dim=1, largest=True),
             {"input:rank_up", "input:zero", "input:mismatch"}),
    "kthvalue": (lambda: dict(input=_t(_f(2, 3)), k=2, dim=1, keepdim=False),
                 {"input:rank_up", "input:zero", "input:mismatch"}),
    # dim=None is the global median
    "median": (lambda: dict(input=_t(_f(2, 3)), dim=1, keepdim=True),
               {"input:rank_up", "input:zero", "input:mismatch", "dim:none"}),
    # a 2-D input is one bag per row, so rank_down (1-D without offsets) is refused
    "embedding": (lambda: dict(input=_t(_i(2, 4)), weight=_t(_f(3, 2)), padding_idx=1,
                               max_norm=None), {"input:rank_up", "input:rank_down", "input:zero",
                                               "input:mismatch", "weight:mismatch",
                                               "padding_idx:none"}),
    "scaled_dot_product_attention": (lambda: dict(query=_t(_f(2, 3, 4)), key=_t(_f(2, 5, 4)),
                                                  value=_t(_f(2, 5, 3)), attn_mask=_t(_f(3, 5)),
                                                  dropout_p=0.25, is_causal=True, scale=0.5,
                                                  seed=1, stream=2, offset=0),
                                     {"value:mismatch", "attn_mask:rank_down", "scale:none"}),
    "embedding_bag": (lambda: dict(input=_t(_i(5)), weight=_t(_f(3, 2)), offsets=_t(_i(2, high=1)),
                                   mode="sum", per_sample_weights=_t(_f(5))),
                      {"weight:mismatch", "per_sample_weights:none", "offsets:zero",
                       "offsets:mismatch", "offsets:rank_down"}),
}
for _n in ("relu", "tanh", "sigmoid", "gelu", "sqrt", "exp", "log"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3, positive=True))),
                      _all(["input"], ELEMENTWISE_OK))

FUNCTIONAL["hardtanh"] = (lambda: dict(input=_t(_f(2, 3)), min_val=-0.5, max_val=0.5,
                                       inplace=False), _all(["input"], ELEMENTWISE_OK))
for _n in ("relu6", "hardsigmoid", "hardswish", "silu"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3)), inplace=False),
                      _all(["input"], ELEMENTWISE_OK))
FUNCTIONAL["leaky_relu"] = (lambda: dict(input=_t(_f(2, 3)), negative_slope=0.1, inplace=False),
                            _all(["input"], ELEMENTWISE_OK))
FUNCTIONAL["softplus"] = (lambda: dict(input=_t(_f(2, 3)), beta=2.0, threshold=10.0),
                          _all(["input"], ELEMENTWISE_OK))
for _n in ("elu", "celu"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3)), alpha=1.5, inplace=False),
                      _all(["input"], ELEMENTWISE_OK))
for _n in ("selu", "mish"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3)), inplace=False),
                      _all(["input"], ELEMENTWISE_OK))
for _n in ("logsigmoid", "softsign", "tanhshrink"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3))), _all(["input"], ELEMENTWISE_OK))
for _n in ("hardshrink", "softshrink"):
    FUNCTIONAL[_n] = (lambda: dict(input=_t(_f(2, 3)), lambd=0.25),
                      _all(["input"], ELEMENTWISE_OK))
FUNCTIONAL["prelu"] = (lambda: dict(input=_t(_f(2, 3, 4)), weight=_t(_f(3))),
                       {"input:zero", "input:mismatch", "weight:rank_down"})
FUNCTIONAL["threshold"] = (lambda: dict(input=_t(_f(2, 3)), threshold=0.1, value=2.0,
                                        inplace=False), _all(["input"], ELEMENTWISE_OK))

MODULES = {"ops": (ops, OPS), "nn.functional": (F, FUNCTIONAL)}


def test_every_public_function_has_a_valid_call():
    for label, (module, table) in MODULES.items():
        found = public_functions(module)
        assert len(found) >= 15
        missing = [n for n in found if n not in table and n not in EXEMPT]
        assert not missing, "%s functions without a bad-input spec: %s" % (label, missing)
        stale = [n for n in table if n not in found]
        assert not stale, "%s specs for functions that do not exist: %s" % (label, stale)
        assert sorted(module.__all__) == sorted(n for n in module.__all__ if n in found or
                                                n == "functional")


def test_exemptions_are_few_and_justified():
    assert len(EXEMPT) <= 3
    assert all(isinstance(why, str) and len(why) > 20 for why in EXEMPT.values())


def test_the_valid_calls_succeed():
    # the mutations below start from calls that work
    for label, (module, table) in MODULES.items():
        for name, (make, _) in table.items():
            getattr(module, name)(**make())


# ---- mutations -------------------------------------------------------------

def _is_array(v):
    return isinstance(v, (np.ndarray, torch.Tensor))


def _np(v):
    return v.numpy() if isinstance(v, torch.Tensor) else v


def _like(v, a):
    return torch.from_numpy(np.ascontiguousarray(a)) if isinstance(v, torch.Tensor) else a


def _noncontig(v, a):
    """The same values in a strided (non-contiguous) view."""
    big = np.zeros(a.shape + (2,), dtype=a.dtype)
    big[..., 0] = a
    view = big[..., 0]
    if isinstance(v, torch.Tensor):
        view = torch.from_numpy(big)[..., 0]
        assert not view.is_contiguous() or a.size <= 1
    return view


def _array_mutations(v):
    a = _np(v)
    out = {"f64": _like(v, a.astype(np.float64)),
           "i64": _like(v, a.astype(np.int64)) if a.dtype != np.int64 else
           _like(v, a.astype(np.float32)),
           "rank_up": _like(v, np.stack([a, a, a])),
           "noncontig": _noncontig(v, a)}
    if a.ndim >= 1:
        out["rank_down"] = _like(v, a[0])
        out["mismatch"] = _like(v, np.concatenate([a, a[..., :1]], axis=-1))
        out["zero"] = _like(v, a[:0])
    return out


def _scalar_mutations(name, v):
    if isinstance(v, bool):
        return {"not_a_flag": "yes", "int_flag": 7}
    if isinstance(v, int):
        return {"huge": 2 ** 64 + 1, "huge_negative": -(2 ** 64) - 1, "non_integral": 1.5,
                "negative": -1000, "none": None}
    if isinstance(v, float):
        return {"overflow": 1e39, "none": None, "text": "0.5"}
    if isinstance(v, tuple):  # a shape
        return {"negative_size": (-1,) + v[1:], "huge_size": (2 ** 62,) + v[1:],
                "overflowing_size": (2 ** 64,) + v[1:], "non_integral_size": (1.5,) + v[1:],
                "short": v[:-1]}
    if isinstance(v, str):
        return {"unknown": "no-such-op"}
    return {}


def _cases():
    out = []
    for label, (module, table) in MODULES.items():
        for name, (make, valid) in sorted(table.items()):
            params = inspect.signature(getattr(module, name)).parameters
            for arg, v in make().items():
                if _is_array(v):
                    kinds = sorted(_array_mutations(v))
                    if params[arg].default is not None:
                        kinds.append("none")
                else:
                    kinds = sorted(_scalar_mutations(arg, v))
                for kind in kinds:
                    key = "%s:%s" % (arg, kind)
                    ok = key in valid or kind == "noncontig"
                    out.append(pytest.param(label, name, arg, kind, ok,
                                            id="%s.%s-%s" % (label, name, key)))
    return out


def _snapshot(kwargs):
    return {k: _np(v).copy() for k, v in kwargs.items() if _is_array(v)}


def _untouched(kwargs, snap):
    for k, a in snap.items():
        now = _np(kwargs[k])
        assert now.shape == a.shape and now.tobytes() == a.tobytes(), \
            "%s was modified by a call that failed" % k


def _bits(x):
    if isinstance(x, (tuple, list)):
        return [_bits(v) for v in x]
    if x is None:
        return None
    a = _np(x.detach() if isinstance(x, torch.Tensor) else x)
    return (a.shape, a.dtype.str, np.ascontiguousarray(a).tobytes())


@pytest.mark.parametrize("label,name,arg,kind,ok", _cases())
def test_bad_input(label, name, arg, kind, ok):
    module, table = MODULES[label]
    fn = getattr(module, name)
    kwargs = table[name][0]()
    v = kwargs[arg]
    if kind == "none":
        kwargs[arg] = None
    elif _is_array(v):
        kwargs[arg] = _array_mutations(v)[kind]
    else:
        kwargs[arg] = _scalar_mutations(arg, v)[kind]
    snap = _snapshot(kwargs)
    if ok:
        got = fn(**kwargs)
        if kind == "noncontig":  # the same bits as the contiguous call
            ref = table[name][0]()
            assert _bits(got) == _bits(fn(**ref))
        return
    with pytest.raises(CLEAR_ERRORS) as e:
        fn(**kwargs)
    msg = str(e.value)
    assert msg.startswith("samebits.") or msg.startswith("sb_"), \
        "unclear message for %s(%s=%s): %r" % (name, arg, kind, msg)
    _untouched(kwargs, snap)


# ---- in-place outputs that alias ------------------------------------------

@pytest.mark.parametrize("label", ["ops", "nn.functional"])
@pytest.mark.parametrize("alias", ["running_var", "x", "weight"])
def test_aliased_running_statistics_are_refused_and_untouched(label, alias):
    module, table = MODULES[label]
    kwargs = table["batch_norm"][0]()
    xname = "x" if label == "ops" else "input"
    other = {"x": xname}.get(alias, alias)
    if other == xname:
        kwargs[xname] = kwargs[xname][:, :3].contiguous() if label != "ops" else kwargs[xname]
        # running_mean is (C,) = row 0 of x
        kwargs["running_mean"] = kwargs[xname][0]
    else:
        kwargs["running_mean"] = kwargs[other]
    snap = _snapshot(kwargs)
    with pytest.raises(ValueError, match=r"samebits\..*batch_norm: running_mean and .* share "
                       r"memory"):
        getattr(module, "batch_norm")(**kwargs)
    _untouched(kwargs, snap)
