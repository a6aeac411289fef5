"""Datasets and batch order exactly as the C library's loader (train.h)."""
import ctypes

from . import _lib
from ._lib import call, tensor_to_numpy
from .random import epoch_permutation

__all__ = ["load_mnist", "BatchLoader"]


def load_mnist(directory, train=True):
    """(images, labels) of an MNIST-style IDX split read by sb_mnist_load:
    images float32 (N, 1, H, W) with pixel = byte / 255.0f, labels int64 (N),
    as numpy arrays (torch.from_numpy them for PyTorch)."""
    ds = _lib.Dataset()
    call("sb_mnist_load", str(directory).encode(), bool(train), ctypes.byref(ds))
    try:
        return tensor_to_numpy(ds.images), tensor_to_numpy(ds.labels)
    finally:
        _lib.lib.sb_dataset_free(ctypes.byref(ds))


class BatchLoader:
    """Batches in sb_loader's order: epoch e visits the examples in
    sb_rng_permutation(seed, SB_STREAM_SHUFFLE + e, count) order (index order
    without shuffle); batch b is positions [b*B, min((b+1)*B, count)).
    Iterating yields (images, labels) of the current epoch, as the type the
    arrays were given in (torch tensors or numpy arrays)."""

    def __init__(self, images, labels, batch_size, shuffle=True, seed=0):
        batch_size = _lib.checked_int(batch_size, ctypes.c_int64,
                                      "samebits.data.BatchLoader: batch_size")
        seed = _lib.checked_int(seed, ctypes.c_uint64, "samebits.data.BatchLoader: seed")
        if batch_size < 1:
            raise ValueError("samebits.data.BatchLoader: batch_size %d must be >= 1" % batch_size)
        if len(images) != len(labels) or len(images) < 1:
            raise ValueError("samebits.data.BatchLoader: need as many labels as images (>= 1)")
        self.images, self.labels = images, labels
        self.batch_size, self.shuffle, self.seed = int(batch_size), bool(shuffle), int(seed)
        self.set_epoch(0)

    def set_epoch(self, epoch):
        n = len(self.images)
        if self.shuffle:
            self.order = epoch_permutation(n, self.seed, epoch)
        else:
            import numpy as np
            self.order = np.arange(n, dtype=np.int64)

    def __len__(self):
        return (len(self.images) + self.batch_size - 1) // self.batch_size

    def batch(self, b):
        if not 0 <= b < len(self):
            raise IndexError("samebits.data.BatchLoader: batch %d is outside 0..%d" % (b, len(self) - 1))
        idx = self.order[b * self.batch_size:(b + 1) * self.batch_size]
        if hasattr(self.images, "index_select"):
            import torch
            t = torch.from_numpy(idx)
            return self.images.index_select(0, t), self.labels.index_select(0, t)
        return self.images[idx], self.labels[idx]

    def __iter__(self):
        for b in range(len(self)):
            yield self.batch(b)
