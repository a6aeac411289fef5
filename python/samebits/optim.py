"""samebits.optim: SGD, Adam and AdamW whose updates run in samebits.

The update of every element is the exact float32 sequence of
docs/CONTRACT.md "Optimizers" (PyTorch's single-tensor path operation for
operation, with every rounding fixed). Each parameter keeps its own step
count, as PyTorch does. Parameters, gradients and state are contiguous
float32 CPU tensors, updated in place by pointer.

The C update is handed raw pointers and an element count, so before every
step each parameter's gradient and state buffers are checked against it
(float32, CPU, contiguous, the parameter's shape, no shared memory): a
state_dict from another model or a parameter resized after a step raises
instead of reading or writing past a buffer. load_state_dict checks the same
before it changes anything. Parameter lists with duplicates or non-leaf
tensors are refused.

zero_grad() sets gradients to None by default, so the next backward WRITES
them (an add into a zeroed buffer would turn a -0.0 gradient into +0.0,
unlike the C autograd).
"""
import copy
import ctypes

import numpy as np
import torch

from . import _lib
from . import _device_array as _dev
from ._lib import call

__all__ = ["SGD", "Adam", "AdamW"]


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _where(gi, pi):
    return "parameter %d of group %d" % (pi, gi)


def _check_dense(t, fn, what, shape, device=_lib.SB_DEVICE_CPU):
    """t must be a contiguous float32 tensor of `shape` on sb_device
    `device` (the parameter's): C reads and writes shape's element count
    through its pointer."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("samebits.optim.%s: %s is a %s, not a tensor" % (fn, what, type(t).__name__))
    if t.is_sparse:
        raise TypeError("samebits.optim.%s: %s is sparse; only dense tensors are supported"
                        % (fn, what))
    code = _dev.device_code(t, "optim." + fn, what)
    if code != device:
        raise ValueError("samebits.optim.%s: %s is on %s, but the parameter is on %s"
                         % (fn, what, _dev._device_name(code) if code else "cpu",
                            _dev._device_name(device) if device else "cpu"))
    if t.dtype != torch.float32:
        raise TypeError("samebits.optim.%s: %s has dtype %s; samebits optimizers use float32 only"
                        % (fn, what, t.dtype))
    if not t.is_contiguous():
        raise ValueError("samebits.optim.%s: %s is not contiguous; samebits updates in place and "
                         "needs dense storage" % (fn, what))
    if tuple(t.shape) != tuple(shape):
        raise ValueError("samebits.optim.%s: %s has shape %s, but the parameter has shape %s "
                         "(%d vs %d elements)" % (fn, what, tuple(t.shape), tuple(shape),
                                                  t.numel(), int(np.prod(shape, dtype=np.int64))))


def _span(t):
    start = t.data_ptr()
    return start, start + t.numel() * t.element_size()


def _dense_copy(t, code):
    """t, or an exact dense copy of it on its device."""
    if t.is_contiguous() or code == _lib.SB_DEVICE_CPU:
        return t.contiguous()
    return _dev.DeviceArray(t, code).contiguous().tensor


def _zeros_like(p):
    """A dense zero buffer for p's optimizer state, on p's device."""
    code = _dev.device_code(p, "optim", "parameter")
    if code == _lib.SB_DEVICE_CPU:
        return torch.zeros_like(p, memory_format=torch.contiguous_format)
    return _dev.zeros_like_device(p.shape, np.float32, _dev.DeviceArray(p, code)).tensor


def _update(host_fn, tensor_fn, cfg, step, p, grad, buffers):
    """One parameter's update: the raw-pointer C step on the host, the
    tensor step (sb_*_step_tensor) on p's device, with the same bits."""
    code = _dev.device_code(p, "optim", "parameter")
    if code == _lib.SB_DEVICE_CPU:
        call(host_fn, ctypes.byref(cfg), step, p.numel(), _ptr(p), _ptr(grad),
             *(None if b is None else _ptr(b) for b in buffers))
        return
    heads = [None if t is None else _dev.header(_dev.DeviceArray(t.view(-1), code))
             for t in (p, grad) + tuple(buffers)]
    _dev.call_on(code, tensor_fn, ctypes.byref(cfg), step,
                 *(None if h is None else ctypes.byref(h) for h in heads))


def _check_disjoint(fn, where, named):
    """No two of the (name, tensor) buffers of one update share memory: C
    would read elements it has already overwritten."""
    spans = [(n, _span(t)) for n, t in named if t is not None and t.numel() > 0]
    for i, (na, (a0, a1)) in enumerate(spans):
        for nb, (b0, b1) in spans[i + 1:]:
            if a0 < b1 and b0 < a1:
                raise ValueError("samebits.optim.%s: %s: %s and %s share memory; each needs its "
                                 "own buffer" % (fn, where, na, nb))


def _check_step(value, fn, what):
    """A step count: a non-negative integer (an int, or a one-element tensor
    holding an integral value, as torch.optim stores it) that fits int64."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError("samebits.optim.%s: %s has %d elements, expected one"
                             % (fn, what, value.numel()))
        value = value.item()
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("samebits.optim.%s: %s=%r is not an integer" % (fn, what, value))
        value = int(value)
    v = _lib.checked_int(value, ctypes.c_int64, "samebits.optim.%s: %s" % (fn, what))
    if v < 0:
        raise ValueError("samebits.optim.%s: %s=%d is negative" % (fn, what, v))
    return v


def _check_hyper(value, fn, name, g):
    """A hyperparameter the C update rounds to float32 once: a finite
    non-zero value that would become 0 or infinity there is refused (lr=1e-50
    would train nothing)."""
    try:
        _lib.checked_float(value, ctypes.c_float, "samebits.optim.%s: %s" % (fn, name))
    except (OverflowError, ValueError) as e:
        raise ValueError("%s (group %d)" % (e, g)) from None
    return float(value)


class _Base(torch.optim.Optimizer):
    # state keys the C update reads and writes through a pointer
    _BUFFERS = ()

    def __init__(self, params, defaults):
        if isinstance(params, (set, frozenset)):
            raise TypeError("samebits.optim.%s: parameters must be an ordered sequence, not a set "
                            "(the update order would vary between runs)" % type(self).__name__)
        super().__init__(params, defaults)

    def zero_grad(self, set_to_none=True):
        super().zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group):
        fn = type(self).__name__
        group = param_group if isinstance(param_group, dict) else {"params": param_group}
        params = group.get("params")
        if isinstance(params, torch.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("samebits.optim.%s: parameters must be an ordered sequence, not a set "
                            "(the update order would vary between runs)" % fn)
        else:
            params = list(params)
        gi = len(getattr(self, "param_groups", []))
        seen = {}
        for other in getattr(self, "param_groups", []):
            for p in other["params"]:
                seen[id(p)] = "group %d" % self.param_groups.index(other)
        for pi, p in enumerate(params):
            if not isinstance(p, torch.Tensor):
                raise TypeError("samebits.optim.%s: %s is a %s, not a tensor"
                                % (fn, _where(gi, pi), type(p).__name__))
            if not p.is_leaf:
                raise ValueError("samebits.optim.%s: %s is not a leaf tensor (it is computed from "
                                 "others); optimize the leaf parameters it comes from"
                                 % (fn, _where(gi, pi)))
            if id(p) in seen:
                raise ValueError("samebits.optim.%s: %s is a duplicate: the same tensor is already "
                                 "in %s (it would be updated twice per step)"
                                 % (fn, _where(gi, pi), seen[id(p)]))
            seen[id(p)] = "group %d (parameter %d)" % (gi, pi)
        group = dict(group)
        group["params"] = params
        super().add_param_group(group)
        self._check_config(self.param_groups[-1], len(self.param_groups) - 1)

    # -- validation of parameters, gradients and state ------------------------

    def _buffers_of(self, g):
        return self._BUFFERS

    def _check_state(self, st, p, fn, where, g, require=False):
        """A parameter's state entry against the parameter: every buffer the
        update will touch has the parameter's shape, dtype and device."""
        if not isinstance(st, dict):
            raise TypeError("samebits.optim.%s: the state of %s is a %s, not a dict"
                            % (fn, where, type(st).__name__))
        if not st:
            return
        if "step" in st:
            _check_step(st["step"], fn, "state['step'] of %s" % where)
        elif require:
            raise ValueError("samebits.optim.%s: the state of %s has no 'step'" % (fn, where))
        for key, needed in self._buffers_of(g):
            buf = st.get(key)
            if buf is None:
                if needed and require:
                    raise ValueError("samebits.optim.%s: the state of %s has no %r"
                                     % (fn, where, key))
                continue
            _check_dense(buf, fn, "state[%r] of %s" % (key, where), p.shape,
                         _dev.device_code(p, "optim." + fn, where))

    def _check_param(self, p, fn, where):
        code = _dev.device_code(p, "optim." + fn, where)
        _check_dense(p, fn, where, p.shape, code)
        grad = p.grad
        if grad.is_sparse:
            raise TypeError("samebits.optim.%s: the gradient of %s is sparse; sparse gradients are "
                            "not supported" % (fn, where))
        # contiguity is not required: a strided gradient is copied (exactly)
        _check_dense(grad if grad.is_contiguous() else _dense_copy(grad, code), fn,
                     "the gradient of %s" % where, p.shape, code)

    def _validated(self):
        """[(group index, group, [(param, grad, state)])] for every parameter
        with a gradient, all checked before any update (a bad entry anywhere
        leaves every parameter and buffer as it was)."""
        fn = type(self).__name__
        out = []
        for gi, g in enumerate(self.param_groups):
            self._check_config(g, gi)
            items = []
            for pi, p in enumerate(g["params"]):
                if p.grad is None:
                    continue
                where = _where(gi, pi)
                self._check_param(p, fn, where)
                st = self.state[p]
                self._check_state(st, p, fn, where, g, require=bool(st) and self._requires_all)
                grad = _dense_copy(p.grad, _dev.device_code(p, "optim." + fn, where))
                _check_disjoint(fn, where, [("the parameter", p), ("its gradient", grad)] + [
                    ("state[%r]" % k, st.get(k)) for k, _ in self._buffers_of(g)])
                items.append((p, grad, st))
            out.append((gi, g, items))
        return out

    def load_state_dict(self, state_dict):
        """torch.optim's load_state_dict, after checking every state entry
        against the parameter it will belong to (shape, float32, dense; a
        valid step count): a mismatch raises ValueError/TypeError naming the
        group, the parameter and the state key, and the optimizer is left
        unchanged. The loaded buffers are this optimizer's own copies, as
        in PyTorch 1.13: PyTorch 2.x keeps the caller's tensors when their
        dtype and device already match, and the C update writes into them
        by pointer, so the source optimizer's state (or a second load of one
        state dict) would be updated twice per step."""
        fn = type(self).__name__
        if not isinstance(state_dict, dict) or "state" not in state_dict or \
                "param_groups" not in state_dict:
            raise TypeError("samebits.optim.%s.load_state_dict: expected a dict with 'state' and "
                            "'param_groups' (from state_dict())" % fn)
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError("samebits.optim.%s.load_state_dict: the state dict has %d parameter "
                             "groups, this optimizer %d" % (fn, len(saved), len(self.param_groups)))
        where_of = {}
        for gi, (sg, g) in enumerate(zip(saved, self.param_groups)):
            if len(sg["params"]) != len(g["params"]):
                raise ValueError("samebits.optim.%s.load_state_dict: group %d has %d parameters in "
                                 "the state dict, %d here" % (fn, gi, len(sg["params"]),
                                                             len(g["params"])))
            merged = dict(sg)
            merged["params"] = g["params"]
            self._check_config(merged, gi)
            for pi, (key, p) in enumerate(zip(sg["params"], g["params"])):
                where_of[key] = (gi, pi, p, merged)
        for key, st in state_dict["state"].items():
            if key not in where_of:
                raise ValueError("samebits.optim.%s.load_state_dict: state for parameter id %r, "
                                 "which no group lists" % (fn, key))
            gi, pi, p, g = where_of[key]
            self._check_state(st, p, fn + ".load_state_dict", _where(gi, pi), g,
                              require=bool(st) and self._requires_all)
        super().load_state_dict(copy.deepcopy(state_dict))


class SGD(_Base):
    """torch.optim.SGD's arguments (lr is required, as in PyTorch 1.13)."""

    _requires_all = False

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def _buffers_of(self, g):
        return (("momentum_buffer", False),)

    def _check_config(self, g, gi):
        for k in ("lr", "momentum", "dampening", "weight_decay"):
            _check_hyper(g[k], "SGD", k, gi)
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
        for gi, g, items in self._validated():
            cfg = self._config(g)
            for p, grad, st in items:
                step = _check_step(st.get("step", 0), "SGD", "step") + 1
                buf = None
                if g["momentum"] != 0:
                    if st.get("momentum_buffer") is None:
                        st["momentum_buffer"] = _zeros_like(p)
                    buf = st["momentum_buffer"]
                _update("sb_sgd_step", "sb_sgd_step_tensor", cfg, step, p, grad, (buf,))
                st["step"] = step
        return loss


class Adam(_Base):
    """torch.optim.Adam's arguments; decoupled=True gives AdamW."""

    _decoupled = False
    _requires_all = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)

    def _buffers_of(self, g):
        return (("exp_avg", True), ("exp_avg_sq", True), ("max_exp_avg_sq", bool(g["amsgrad"])))

    def _check_config(self, g, gi):
        name = type(self).__name__
        b1, b2 = g["betas"]
        for k, v in (("lr", g["lr"]), ("beta1", b1), ("beta2", b2), ("eps", g["eps"]),
                     ("weight_decay", g["weight_decay"])):
            _check_hyper(v, name, k, gi)
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
        for gi, g, items in self._validated():
            cfg = self._config(g)
            for p, grad, st in items:
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                step = _check_step(st["step"], name, "step") + 1
                mx = st.get("max_exp_avg_sq") if g["amsgrad"] else None
                _update("sb_adam_step", "sb_adam_step_tensor", cfg, step, p, grad,
                        (st["exp_avg"], st["exp_avg_sq"], mx))
                st["step"] = step
        return loss


class AdamW(Adam):
    """torch.optim.AdamW's arguments (weight_decay defaults to 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
