"""Reused host memory for large op results (samebits' CPU caching allocator).

An op's result array of 1 MiB or more is a view of a pooled buffer, and
the next result of the same byte size takes a buffer no array views any
more. A fresh large allocation comes from the kernel a page at a time on
first touch (a page fault and a zeroed page per 4 KiB, or a 2 MiB huge page
numpy asks for); a reused buffer is already mapped: mobilenet_v2's
inference at 2 threads went from 50 to 42 ms. This is the host side of
what a GPU framework's caching allocator does; the values written into a
buffer are the op's own, so bits are not affected.

Lifetime: the buffer is a uint8 array that owns its memory, and every
array carved from it, and every numpy view of those (reshape, slices,
`torch.from_numpy` and back), has it as its base (numpy collapses view
chains to the owner). So a buffer is free exactly when the pool's own
reference is the only one left, which `sys.getrefcount` tells; a buffer in
use is never handed out again. The pool tracks at most LIMIT_BYTES of
buffers, in use or not; past that the least recently handed out one is
dropped from it (its memory goes when its last view does). `release()`
drops them all (`samebits.utils.empty_cache`).
"""
import collections
import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20      # smaller results come from np.empty directly
LIMIT_BYTES = 1 << 30    # tracked by the pool at most, in use or free

_lock = threading.Lock()
_lru = collections.OrderedDict()  # id(buffer) -> buffer, least recently handed out first
_by_size = {}                     # nbytes -> ids of the buffers of that size
_held = 0


def _refs(buf):
    """buf's reference count as seen from here; the free count is
    _FREE_REFS (measured below with the same call shape)."""
    return sys.getrefcount(buf)


def _free_refs():
    # a probe referenced by _lru alone (key -1: no id() is negative), read
    # through the same expression as in _buffer
    _lru[-1] = np.empty(1, dtype=np.uint8)
    try:
        for key in (-1,):
            return _refs(_lru[key])
    finally:
        del _lru[-1]


_FREE_REFS = _free_refs()


def _drop_oldest():
    global _held
    key, old = _lru.popitem(last=False)
    ids = _by_size[old.nbytes]
    ids.remove(key)
    if not ids:
        del _by_size[old.nbytes]
    _held -= old.nbytes


def _buffer(nbytes):
    """A pooled buffer of nbytes that no array views (a new one if none)."""
    global _held
    with _lock:
        for key in _by_size.get(nbytes, ()):
            if _refs(_lru[key]) <= _FREE_REFS:
                _lru.move_to_end(key)
                return _lru[key]
        buf = np.empty(nbytes, dtype=np.uint8)
        if nbytes <= LIMIT_BYTES:
            _lru[id(buf)] = buf
            _by_size.setdefault(nbytes, []).append(id(buf))
            _held += nbytes
            while _held > LIMIT_BYTES:
                _drop_oldest()
        return buf


def empty(shape, dtype):
    """An uninitialised C-contiguous host array of `shape` and `dtype`."""
    dt = np.dtype(dtype)
    nbytes = dt.itemsize * math.prod(shape)
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype=dt)
    return np.ndarray(shape, dtype=dt, buffer=_buffer(nbytes))


def release():
    """Drops every buffer from the pool: free ones go back to malloc now,
    ones in use when their last view dies."""
    global _held
    with _lock:
        _lru.clear()
        _by_size.clear()
        _held = 0


def held_bytes():
    """Bytes of the buffers the pool tracks now (in use or free)."""
    with _lock:
        return _held
