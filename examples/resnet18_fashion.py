#!/usr/bin/env python3
"""torchvision's resnet18 trained on Fashion-MNIST, on samebits' arithmetic.

    PYTHONPATH=python python3 examples/resnet18_fashion.py --limit-batches 4 --test-limit 200

prints the four lines of `samebits train` (initial model, trained model, test
accuracy, logits) for an unmodified torchvision resnet18 (10 classes; its
first convolution takes the one grey channel), trained with samebits' Adam on
the Debian package's Fashion-MNIST. The 28x28 images are zero-padded to 32x32
(the CIFAR size, which the 7x7 stride-2 stem and the max pool bring to 8x8).

The model converts with strict=True: every op of its forward and backward,
the batch norms' statistics included, runs in libsamebits, so the four lines
are the same at every thread count and ISA level (SB_NUM_THREADS, SB_ISA) and
under every PyTorch version; tests/golden/example-resnet18_fashion.txt holds
them for the options of tests/check_examples.sh. The options and defaults are
the CLI's (see lenet_training.py), plus --test-limit.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import samebits  # noqa: E402
from lenet_training import make_parser, positive_int, train_and_report  # noqa: E402


def resnet18_grey(num_classes=10):
    """torchvision.models.resnet18 with a one-channel stem (same geometry)."""
    import torchvision
    model = torchvision.models.resnet18(num_classes=num_classes)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def pad_to_32(images):
    """(N, 1, 28, 28) -> (N, 1, 32, 32) with two rows/columns of +0.0f on
    each side: a copy, no arithmetic."""
    n, c, h, w = images.shape
    if h > 32 or w > 32:
        raise ValueError("resnet18_fashion: images are %dx%d, larger than 32x32" % (h, w))
    top, left = (32 - h) // 2, (32 - w) // 2
    out = np.zeros((n, c, 32, 32), dtype=np.float32)
    out[:, :, top:top + h, left:left + w] = images
    return out


def main(argv=None):
    p = make_parser(__doc__.split("\n")[0], thread_check=False)
    p.add_argument("--test-limit", type=positive_int(1), default=0,
                   help="evaluate on the first N test images only (default: all 10000)")
    args = p.parse_args(argv)
    if args.threads:
        samebits.set_num_threads(args.threads)
    tr_x, tr_y = samebits.data.load_mnist(args.data, train=True)
    te_x, te_y = samebits.data.load_mnist(args.data, train=False)
    if args.test_limit:
        te_x, te_y = te_x[:args.test_limit], te_y[:args.test_limit]
    tr_x, te_x = pad_to_32(tr_x), pad_to_32(te_x)
    tr_x, tr_y, te_x, te_y = (torch.from_numpy(a) for a in (tr_x, tr_y, te_x, te_y))

    samebits.manual_seed(args.seed)
    model = samebits.init_module(resnet18_grey(), args.seed)
    model = samebits.from_torch_module(model, strict=True)
    train_and_report(model, args, tr_x, tr_y, te_x, te_y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
