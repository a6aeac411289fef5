"""samebits.ops: the contract's bits, checked against the C raw-buffer entry
points and independent re-statements of the contract sequences."""

import numpy as np
import pytest
import torch

from samebits import ops
from conftest import lib, ssum, elementwise, same_bits


def f32(*v):
    return np.array(v, dtype=np.float32)


def test_mm_is_one_ascending_fma_chain():
    # a0*b0 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 alone; the fused chain
    # keeps the 2^-24: ascending k gives -2^-24, descending +2^-24, unfused 0.
    u = 1 + 2.0 ** -12
    a = f32(u, u).reshape(1, 2)
    b = f32(u, -u).reshape(2, 1)
    out = ops.mm(a, b)
    assert isinstance(out, np.ndarray) and out.shape == (1, 1)
    assert same_bits(out, f32(-(2.0 ** -24)).reshape(1, 1))
    # the transposed forms read the same logical matrices
    assert same_bits(ops.mm(a.T.copy(), b, trans_a=True), out)
    assert same_bits(ops.mm(a, b.T.copy(), trans_b=True), out)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_mm_matches_c_sgemm(rng, ta, tb):
    m, k, n = 37, 70, 19
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    want = np.empty((m, n), np.float32)
    rc = lib.sb_sgemm(b"T" if ta else b"N", b"T" if tb else b"N", m, n, k, a.ctypes.data,
                      a.shape[1], b.ctypes.data, b.shape[1], want.ctypes.data, n)
    assert rc == 0
    got = ops.mm(torch.from_numpy(a), torch.from_numpy(b), trans_a=ta, trans_b=tb)
    assert isinstance(got, torch.Tensor)
    assert same_bits(got, want)
    ref = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_mm_batched_and_backward(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 6)).astype(np.float32)  # shared by every batch
    out = ops.mm(a, b)
    assert out.shape == (3, 4, 6)
    for i in range(3):
        assert same_bits(out[i], ops.mm(a[i], b))
    dout = rng.standard_normal(out.shape).astype(np.float32)
    da, db = ops.mm_backward(dout, a, b)
    np.testing.assert_allclose(da, dout @ b.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db, np.einsum("bij,bik->jk", a, dout), rtol=1e-4, atol=1e-4)


def test_div_sqrt_are_ieee_operations(rng):
    a = rng.standard_normal((50, 33)).astype(np.float32)
    b = rng.uniform(0.1, 3, (50, 33)).astype(np.float32)
    special = f32(0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.0)
    assert same_bits(ops.div(a, b), a / b)
    assert same_bits(ops.sqrt(b), np.sqrt(b))
    with np.errstate(all="ignore"):
        assert same_bits(ops.sqrt(special), np.sqrt(special))
        assert same_bits(ops.div(special, special[::-1].copy()), special / special[::-1])
    # broadcasting and a Python scalar (rounded to float32 first)
    row = b[:1]
    assert same_bits(ops.div(a, row), a / row)
    assert same_bits(ops.div(a, 3.0), a / np.float32(3.0))
    assert same_bits(ops.div(torch.from_numpy(a), torch.from_numpy(b)), torch.from_numpy(a / b))


def test_exp_log_tanh_match_the_correctly_rounded_c_functions(rng):
    x = np.concatenate([rng.standard_normal(300).astype(np.float32) * 10,
                        f32(0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, -103.9, 1e-40)])
    assert same_bits(ops.exp(x), elementwise("sb_expf", x))
    assert same_bits(ops.tanh(x), elementwise("sb_tanhf", x))
    pos = np.abs(x)
    assert same_bits(ops.log(pos), elementwise("sb_logf", pos))
    # correctly rounded: within half an ulp of float64 (checked loosely)
    finite = x[np.isfinite(x) & (np.abs(x) < 80)]
    np.testing.assert_allclose(ops.exp(finite), np.exp(finite.astype(np.float64)), rtol=1e-7)


def _softmax_restated(x):
    """The contract: m = max, e = sb_expf(x - m), s = canonical sum, y = e / s."""
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        m = x[r].max()
        e = elementwise("sb_expf", (x[r] - m).astype(np.float32))
        out[r] = e / ssum(e)
    return out


def test_softmax_and_log_softmax_follow_the_contract(rng):
    x = (rng.standard_normal((7, 100)) * 5).astype(np.float32)
    assert same_bits(ops.softmax(x, dim=1), _softmax_restated(x))
    ls = ops.log_softmax(x, dim=-1)
    want = np.empty_like(x)
    for r in range(x.shape[0]):
        m = x[r].max()
        s = ssum(elementwise("sb_expf", (x[r] - m).astype(np.float32)))
        want[r] = (x[r] - m) - elementwise("sb_logf", np.array([s], np.float32))[0]
    assert same_bits(ls, want)
    # any dim: softmax over dim 0 is softmax of the transpose
    assert same_bits(ops.softmax(x, dim=0), _softmax_restated(x.T.copy()).T)


def test_cross_entropy_mean_is_the_canonical_mean_of_row_losses(rng):
    logits = (rng.standard_normal((64, 10)) * 3).astype(np.float32)
    t = rng.integers(0, 10, 64)
    rows = ops.cross_entropy(logits, t, reduction="none")
    assert rows.shape == (64,)
    mean = ops.cross_entropy(logits, t)
    assert mean.shape == ()
    assert same_bits(mean, np.float32(ssum(rows) / np.float32(64)))
    ref = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(t))
    assert abs(float(mean) - float(ref)) < 1e-5
    d = ops.cross_entropy_backward(logits, t, np.float32(1.0).reshape(()))
    g = torch.from_numpy(logits).requires_grad_()
    torch.nn.functional.cross_entropy(g, torch.from_numpy(t)).backward()
    np.testing.assert_allclose(d, g.grad.numpy(), atol=1e-6)


def test_sum_and_mean_over_axes_use_the_canonical_sum(rng):
    x = rng.standard_normal((5, 40, 9)).astype(np.float32) * np.float32(1e3)
    s1 = ops.sum(x, dim=1)
    want = np.array([[ssum(x[i, :, j]) for j in range(9)] for i in range(5)], np.float32)
    assert same_bits(s1, want)
    assert same_bits(ops.sum(x, dim=(0, 2), keepdim=True).reshape(-1),
                     np.array([ssum(x[:, k, :].ravel()) for k in range(40)], np.float32))
    assert same_bits(ops.sum(x), np.float32(ssum(x.ravel())))
    m = ops.mean(x, dim=-1)
    assert same_bits(m, np.array([[ssum(x[i, k]) for k in range(40)] for i in range(5)],
                                 np.float32) / np.float32(9))
    big = rng.standard_normal(20000).astype(np.float32)
    assert same_bits(ops.sum(torch.from_numpy(big)), torch.tensor(ssum(big)))


def test_conv2d_and_its_two_gradients(rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    kw = dict(stride=(2, 1), padding=(1, 2), dilation=1, groups=1)
    y = ops.conv2d(x, w, b, **kw)
    ty = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                    **kw)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-4, atol=1e-4)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw, db = ops.conv2d_backward(dy, x, w, **kw)
    assert same_bits(ops.conv2d_input(x.shape, w, dy, **kw), dx)
    assert same_bits(ops.conv2d_weight(x, w.shape, dy, **kw), dw)
    tdx = torch.nn.grad.conv2d_input(x.shape, torch.from_numpy(w), torch.from_numpy(dy), **kw)
    tdw = torch.nn.grad.conv2d_weight(torch.from_numpy(x), w.shape, torch.from_numpy(dy), **kw)
    np.testing.assert_allclose(dx, tdx.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, tdw.numpy(), rtol=1e-4, atol=1e-4)
    assert same_bits(db, np.array([ssum(dy[:, o].ravel()) for o in range(4)], np.float32))
    # torch in -> torch out, same bits as numpy in
    assert same_bits(ops.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, **kw),
                     ops.conv2d(x, w, None, **kw))


def test_relu_and_max_pool_edge_cases_differ_from_pytorch_as_documented():
    x = f32(-0.0, 0.0, -1.0, 2.0)
    y = ops.relu(x)
    assert same_bits(y, f32(0.0, 0.0, 0.0, 2.0))  # relu(-0) = +0
    assert torch.signbit(torch.relu(torch.from_numpy(x)))[0]  # PyTorch keeps -0
    img = f32(1.0, np.nan, np.nan, 2.0).reshape(1, 1, 2, 2)
    _, idx = ops.max_pool2d(img, 2, return_indices=True)
    assert idx.ravel()[0] == 1  # the first NaN
