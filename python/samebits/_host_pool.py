"""Reused host memory for large op results (samebits' CPU caching allocator).

An op's result array of 1 MiB or more is carved from a buffer that goes
back to a pool when the last array viewing it dies, and the next result of
the same byte size takes it from there. A fresh large allocation comes
from the kernel a page at a time on first touch (a page fault and a
zeroed page per 4 KiB, or a 2 MiB huge page numpy asks for), which cost
mobilenet_v2's inference about 6% at 1 thread; a reused buffer is already
mapped. This is the host side of what a GPU framework's caching allocator
does; the values written into a buffer are the op's own, so bits are not
affected.

Lifetime: the array is a view of a ctypes object made over the buffer, and
numpy's views (reshape, slices, `torch.from_numpy` and back) keep that
object alive; a finalizer on it hands the buffer back only after every
view is gone. At most LIMIT_BYTES are held, the least recently returned
dropped first; `release()` drops them all (`samebits.utils.empty_cache`).
"""
import collections
import ctypes
import threading
import weakref

import numpy as np

MIN_BYTES = 1 << 20     # smaller results come from np.empty directly
LIMIT_BYTES = 512 << 20  # held in the pool at most

_lock = threading.Lock()
_lru = collections.OrderedDict()  # id(buffer) -> buffer, least recently returned first
_by_size = {}                     # nbytes -> ids of free buffers of that size
_held = 0


def _take(nbytes):
    global _held
    with _lock:
        ids = _by_size.get(nbytes)
        if not ids:
            return None
        buf = _lru.pop(ids.pop())
        _held -= nbytes
        return buf


def _give_back(buf):
    global _held
    with _lock:
        if buf.nbytes > LIMIT_BYTES:
            return
        _lru[id(buf)] = buf
        _by_size.setdefault(buf.nbytes, []).append(id(buf))
        _held += buf.nbytes
        while _held > LIMIT_BYTES:
            key, old = _lru.popitem(last=False)
            _by_size[old.nbytes].remove(key)
            _held -= old.nbytes


def empty(shape, dtype):
    """An uninitialised C-contiguous host array of `shape` and `dtype`."""
    dt = np.dtype(dtype)
    nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype=dt)
    buf = _take(nbytes)
    if buf is None:
        buf = np.empty(nbytes, dtype=np.uint8)
    owner = (ctypes.c_char * nbytes).from_buffer(buf)
    weakref.finalize(owner, _give_back, buf)
    return np.frombuffer(owner, dtype=dt).reshape(shape)


def release():
    """Drops every buffer the pool holds (the memory goes back to malloc)."""
    global _held
    with _lock:
        _lru.clear()
        _by_size.clear()
        _held = 0


def held_bytes():
    """Bytes the pool holds for reuse now."""
    with _lock:
        return _held
