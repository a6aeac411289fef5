"""samebits' pool of large host result buffers (python/samebits/_host_pool.py):
a buffer is reused only after every array viewing it has died, the pool
holds at most LIMIT_BYTES, and results keep their bits."""
import gc

import numpy as np
import pytest
import torch

import samebits
from samebits import _host_pool as pool


def _addr(a):
    return a.__array_interface__["data"][0]


@pytest.fixture(autouse=True)
def empty_pool():
    pool.release()
    yield
    pool.release()


def test_buffer_reused_only_after_every_view_dies():
    n = pool.MIN_BYTES // 4 + 5
    a = pool.empty((n,), np.float32)
    a[:] = 7.0
    where = _addr(a)
    view = a[3:].reshape(-1)          # numpy collapses its base past `a`
    t = torch.from_numpy(a[::2])      # a tensor over the same memory
    del a
    gc.collect()
    b = pool.empty((n,), np.float32)  # must not be a's buffer: views are alive
    assert _addr(b) != where
    b[:] = -1.0
    assert bool((view == 7.0).all()) and bool((t == 7.0).all())
    del view, t
    gc.collect()
    c = pool.empty((n,), np.float32)  # now it is free, and reused
    assert _addr(c) == where
    assert c.flags.c_contiguous and c.flags.writeable and c.shape == (n,)


def test_small_results_bypass_and_limit_holds(monkeypatch):
    small = pool.empty((8, 8), np.float32)
    assert small.base is None  # a plain np.empty
    size = pool.MIN_BYTES
    monkeypatch.setattr(pool, "LIMIT_BYTES", 8 * size)
    arrays = [pool.empty((size // 4,), np.float32) for _ in range(11)]
    for i, a in enumerate(arrays):
        a[:] = i
    assert 0 < pool.held_bytes() <= pool.LIMIT_BYTES
    # past the limit the oldest buffers left the pool, still in use: intact
    assert all(bool((a == i).all()) for i, a in enumerate(arrays))
    samebits.utils.empty_cache()
    assert pool.held_bytes() == 0
    assert all(bool((a == i).all()) for i, a in enumerate(arrays))


def test_ops_on_reused_buffers_keep_their_bits():
    x = torch.randn(512, 1024)
    want = samebits.get_hash(samebits.nn.functional.gelu(x))
    for _ in range(3):  # the second and third results land in reused buffers
        y = samebits.nn.functional.gelu(x)
        assert samebits.get_hash(y) == want
        del y
