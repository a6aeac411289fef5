"""samebits.optim hands C raw pointers sized by the parameter: every state
buffer, gradient and parameter list is checked first (on every step and in
load_state_dict), and a bad one raises naming the group, the parameter and
the state key, with nothing changed. tests/check_python.sh also runs this
file against the ASan build, where a read or write past a buffer aborts."""
import copy
import re

import pytest
import torch

import samebits
from conftest import same_bits

OPTIMIZERS = [
    ("SGD", lambda ps: samebits.optim.SGD(ps, lr=0.1, momentum=0.9), ["momentum_buffer"]),
    ("Adam", lambda ps: samebits.optim.Adam(ps, lr=1e-3), ["exp_avg", "exp_avg_sq"]),
    ("AdamW", lambda ps: samebits.optim.AdamW(ps, lr=1e-3, amsgrad=True),
     ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
]
IDS = [o[0] for o in OPTIMIZERS]


def _model(n, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n, n), torch.nn.Linear(n, 3))


def _trained_step(model, make):
    opt = make(list(model.parameters()))
    n = model[0].in_features
    model(torch.ones(2, n)).sum().backward()
    opt.step()
    return opt


def _snapshot(model, opt):
    params = [p.detach().clone() for p in model.parameters()]
    state = copy.deepcopy(opt.state_dict())
    return params, state


def _same_state(a, b):
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, torch.Tensor):
            if not (isinstance(y, torch.Tensor) and same_bits(x, y)):
                return False
        elif x != y:
            return False
    return True


def _unchanged(model, opt, snap):
    params, state = snap
    now = opt.state_dict()
    assert all(same_bits(p, q) for p, q in zip(model.parameters(), params))
    assert now["param_groups"] == state["param_groups"]
    assert now["state"].keys() == state["state"].keys()
    assert all(_same_state(now["state"][k], state["state"][k]) for k in now["state"])


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_loading_a_smaller_models_state_is_refused_and_changes_nothing(name, make, keys):
    small, big = _model(2), _model(16)
    small_state = _trained_step(small, make).state_dict()
    opt = _trained_step(big, make)
    snap = _snapshot(big, opt)
    with pytest.raises(ValueError, match=r"samebits\.optim\.%s\.load_state_dict: state\['%s'\] of "
                       r"parameter 0 of group 0 has shape \(2, 2\), but the parameter has shape "
                       r"\(16, 16\)" % (name, keys[0])):
        opt.load_state_dict(small_state)
    _unchanged(big, opt, snap)
    big(torch.ones(2, 16)).sum().backward()
    opt.step()  # the optimizer still works


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_a_parameter_resized_after_a_step_is_refused_on_the_next_step(name, make, keys):
    model = _model(8)
    opt = _trained_step(model, make)
    with torch.no_grad():
        model[0].weight.data = torch.zeros(32, 32)
    model[0].weight.grad = None
    model.zero_grad()
    model[1](torch.ones(2, 8)).sum().backward()  # gradients for the second layer
    model[0].weight.grad = torch.ones(32, 32)
    snap = _snapshot(model, opt)
    with pytest.raises(ValueError, match=r"samebits\.optim\.%s: state\['%s'\] of parameter 0 of "
                       r"group 0 has shape \(8, 8\), but the parameter has shape \(32, 32\)"
                       % (name, keys[0])):
        opt.step()
    _unchanged(model, opt, snap)  # nothing updated, not even the valid parameters


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_every_state_buffer_is_checked_on_every_step(name, make, keys):
    for key in keys:
        for bad, err, what in [
                (lambda b: b[:-1].clone(), ValueError, r"has shape \(7, 8\)"),
                (lambda b: b.reshape(-1).clone(), ValueError, r"has shape \(64,\)"),
                (lambda b: b.double(), TypeError, "has dtype torch.float64"),
                (lambda b: b.t(), ValueError, "is not contiguous"),
                (lambda b: [1.0], TypeError, "is a list, not a tensor")]:
            model = _model(8)
            opt = _trained_step(model, make)
            p = model[0].weight
            st = opt.state[p]
            st[key] = bad(st[key])
            model(torch.ones(2, 8)).sum().backward()
            params = [q.detach().clone() for q in model.parameters()]
            with pytest.raises(err, match=r"samebits\.optim\.%s: state\['%s'\] of parameter 0 of "
                               r"group 0 %s" % (name, key, what)):
                opt.step()
            assert all(same_bits(q, r) for q, r in zip(model.parameters(), params))


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_a_state_buffer_sharing_the_parameters_memory_is_refused(name, make, keys):
    model = _model(4)
    opt = _trained_step(model, make)
    p = model[0].weight
    opt.state[p][keys[-1]] = p.detach()
    model(torch.ones(2, 4)).sum().backward()
    with pytest.raises(ValueError, match=r"parameter 0 of group 0: the parameter and state\['%s'\] "
                       r"share memory" % keys[-1]):
        opt.step()


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_load_state_dict_checks_dtype_step_and_missing_buffers(name, make, keys):
    model = _model(4)
    opt = _trained_step(model, make)
    good = opt.state_dict()
    snap = _snapshot(model, opt)
    for change, err, msg in [
            (lambda st: st.__setitem__(keys[0], st[keys[0]].double()), TypeError,
             r"state\['%s'\] of parameter 1 of group 0 has dtype torch.float64" % keys[0]),
            (lambda st: st.__setitem__("step", -1), ValueError,
             r"state\['step'\] of parameter 1 of group 0=-1 is negative"),
            (lambda st: st.__setitem__("step", 2 ** 64 + 1), OverflowError,
             r"state\['step'\] of parameter 1 of group 0=18446744073709551617 is out of range"),
            (lambda st: st.__setitem__("step", 2.5), ValueError, r"=2\.5 is not an integer")]:
        sd = copy.deepcopy(good)
        change(sd["state"][1])
        with pytest.raises(err, match=msg):
            opt.load_state_dict(sd)
        _unchanged(model, opt, snap)
    if name != "SGD":
        sd = copy.deepcopy(good)
        del sd["state"][2][keys[-1]]
        with pytest.raises(ValueError, match=r"the state of parameter 2 of group 0 has no '%s'"
                           % keys[-1]):
            opt.load_state_dict(sd)
        _unchanged(model, opt, snap)
    opt.load_state_dict(good)  # the real one still loads


def test_a_valid_state_dict_round_trips_bitwise():
    model = _model(6)
    opt = _trained_step(model, OPTIMIZERS[1][1])
    twin = copy.deepcopy(model)
    opt2 = samebits.optim.Adam(list(twin.parameters()), lr=1e-3)
    opt2.load_state_dict(opt.state_dict())
    for m, o in ((model, opt), (twin, opt2)):
        o.zero_grad()
        m(torch.ones(2, 6)).sum().backward()
        o.step()
    assert all(same_bits(p, q) for p, q in zip(model.parameters(), twin.parameters()))


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_loaded_state_is_a_copy(name, make, keys):
    # PyTorch 2.x's load_state_dict keeps the caller's tensors; samebits'
    # C update writes state buffers in place, so they must not be shared
    model = _model(5)
    opt = _trained_step(model, make)
    sd = opt.state_dict()
    twin = copy.deepcopy(model)
    opt2 = make(list(twin.parameters()))
    opt2.load_state_dict(sd)
    for p, q in zip(model.parameters(), twin.parameters()):
        for k in keys:
            a, b = opt.state[p].get(k), opt2.state[q].get(k)
            if a is None:
                continue
            assert same_bits(a, b)
            assert a.data_ptr() != b.data_ptr(), "state[%r] is shared with the source" % k


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_duplicate_parameters_are_refused(name, make, keys):
    model = _model(3)
    w = model[0].weight
    with pytest.raises(ValueError, match=r"samebits\.optim\.%s: parameter 1 of group 0 is a "
                       r"duplicate" % name):
        make([w, w])
    opt = make([w])
    with pytest.raises(ValueError, match=r"parameter 0 of group 1 is a duplicate: the same tensor "
                       r"is already in group 0"):
        opt.add_param_group({"params": [w]})
    with pytest.raises(ValueError, match="is a duplicate"):
        make([{"params": [w]}, {"params": [model[0].bias, w]}])


@pytest.mark.parametrize("name,make,keys", OPTIMIZERS, ids=IDS)
def test_non_leaf_tensors_are_refused(name, make, keys):
    w = torch.zeros(3, requires_grad=True)
    y = w * 2
    y.retain_grad()  # torch.optim 1.13 accepts this one
    with pytest.raises(ValueError, match=r"samebits\.optim\.%s: parameter 0 of group 0 is not a "
                       r"leaf tensor" % name):
        make([y])
    with pytest.raises(TypeError, match=r"parameter 1 of group 0 is a float, not a tensor"):
        make([w, 1.0])
    with pytest.raises(TypeError, match="not a set"):
        make({w})


@pytest.mark.parametrize("lr", [1e-50, 1e39])
def test_a_learning_rate_that_is_0_or_inf_as_a_float_is_refused(lr):
    w = torch.zeros(3, requires_grad=True)
    for make in (lambda: samebits.optim.SGD([w], lr=lr), lambda: samebits.optim.Adam([w], lr=lr)):
        with pytest.raises(ValueError, match=r"samebits\.optim\.(SGD|Adam): lr=%s .*C float.*"
                           r"\(group 0\)" % re.escape(repr(lr))):
            make()
    opt = samebits.optim.SGD([w], lr=0.1)
    opt.param_groups[0]["lr"] = lr
    w.grad = torch.ones(3)
    with pytest.raises(ValueError, match="lr="):
        opt.step()
    assert same_bits(w, torch.zeros(3))


def test_a_gradient_of_the_wrong_shape_is_refused():
    w = torch.zeros(4, requires_grad=True)
    opt = samebits.optim.SGD([w], lr=0.1)
    with torch.no_grad():
        w.data = torch.zeros(8)  # the gradient below keeps the old size
    w.grad = torch.ones(8)
    w.data = torch.zeros(4)
    w.grad.data = torch.ones(2)
    with pytest.raises(ValueError, match=r"the gradient of parameter 0 of group 0 has shape \(2,\)"):
        opt.step()
    assert same_bits(w, torch.zeros(4))
