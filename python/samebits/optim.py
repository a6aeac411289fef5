"""samebits.optim: SGD, Adam and AdamW whose updates run in samebits.

The update of every element is the exact float32 sequence of
docs/CONTRACT.md "Optimizers" (PyTorch's single-tensor path operation for
operation, with every rounding fixed). Each parameter keeps its own step
count, as PyTorch does. Parameters, gradients and state are contiguous
float32 CPU tensors, updated in place by pointer.

zero_grad() sets gradients to None by default, so the next backward WRITES
them (an add into a zeroed buffer would turn a -0.0 gradient into +0.0,
unlike the C autograd).
"""
import ctypes

import torch

from . import _lib
from ._lib import call
from ._convert import device_of

__all__ = ["SGD", "Adam", "AdamW"]


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _check_param(p, fn):
    device_of(p, fn, "a parameter")
    if p.dtype != torch.float32:
        raise TypeError("samebits.optim.%s: a parameter has dtype %s; samebits optimizers update "
                        "float32 parameters only" % (fn, p.dtype))
    if not p.is_contiguous():
        raise ValueError("samebits.optim.%s: a parameter is not contiguous; samebits updates "
                         "parameters in place and needs dense storage" % fn)
    if p.grad.is_sparse:
        raise TypeError("samebits.optim.%s: sparse gradients are not supported" % fn)
    device_of(p.grad, fn, "a gradient")
    if p.grad.dtype != torch.float32:
        raise TypeError("samebits.optim.%s: a gradient has dtype %s" % (fn, p.grad.dtype))
    return p.grad.contiguous()


class _Base(torch.optim.Optimizer):
    def zero_grad(self, set_to_none=True):
        super().zero_grad(set_to_none=set_to_none)


class SGD(_Base):
    """torch.optim.SGD's arguments (lr is required, as in PyTorch 1.13)."""

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)
        for g in self.param_groups:
            call("sb_sgd_check_config", ctypes.byref(self._config(g)))

    @staticmethod
    def _config(g):
        return _lib.SgdConfig(float(g["lr"]), float(g["momentum"]), float(g["dampening"]),
                              float(g["weight_decay"]), bool(g["nesterov"]), bool(g["maximize"]))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            cfg = self._config(g)
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = _check_param(p, "SGD")
                st = self.state[p]
                st["step"] = st.get("step", 0) + 1
                buf = None
                if g["momentum"] != 0:
                    if st.get("momentum_buffer") is None:
                        st["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    buf = _ptr(st["momentum_buffer"])
                call("sb_sgd_step", ctypes.byref(cfg), st["step"], p.numel(), _ptr(p), _ptr(grad),
                     buf)
        return loss


class Adam(_Base):
    """torch.optim.Adam's arguments; decoupled=True gives AdamW."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)
        for g in self.param_groups:
            call("sb_adam_check_config", ctypes.byref(self._config(g)))

    def _config(self, g):
        b1, b2 = g["betas"]
        return _lib.AdamConfig(float(g["lr"]), float(b1), float(b2), float(g["eps"]),
                               float(g["weight_decay"]), bool(g["amsgrad"]), self._decoupled,
                               bool(g["maximize"]))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        name = type(self).__name__
        for g in self.param_groups:
            cfg = self._config(g)
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = _check_param(p, name)
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = torch.zeros_like(
                            p, memory_format=torch.contiguous_format)
                st["step"] += 1
                mx = st.get("max_exp_avg_sq")
                call("sb_adam_step", ctypes.byref(cfg), int(st["step"]), p.numel(), _ptr(p),
                     _ptr(grad), _ptr(st["exp_avg"]), _ptr(st["exp_avg_sq"]),
                     None if mx is None else _ptr(mx))
        return loss


class AdamW(Adam):
    """torch.optim.AdamW's arguments (weight_decay defaults to 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
