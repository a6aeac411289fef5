#!/usr/bin/env python3
"""LeNet-5 written in PyTorch, converted to samebits, trained like `samebits train`.

    PYTHONPATH=python python3 examples/lenet_training.py --limit-batches 20

prints the same four lines as `samebits train --limit-batches 20` (same
options, same defaults): the Python layer adds no numerics of its own. The
model is an ordinary torch.nn.Sequential; samebits supplies

  * the initialisation (Philox streams per parameter, as sb_module_init),
  * the conversion (from_torch_module: every layer's forward and backward
    run in libsamebits),
  * the data (sb_mnist_load) and its order (the loader's Philox shuffle),
  * the optimizer (samebits.optim.Adam, PyTorch's defaults),
  * the hashes (the CLI's canonical SHA-256).

At the end it also trains a few batches at 1 and 2 threads, for the
converted model and for the unconverted PyTorch model, and reports on stderr
whether each gave identical bits (informational for PyTorch: whether it
agrees with itself depends on the machine; --no-thread-check skips this).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import samebits  # noqa: E402


def lenet5():
    """LeNet-5 as include/samebits/train.h describes it (sb_model_lenet5)."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(400, 120), torch.nn.ReLU(),
        torch.nn.Linear(120, 84), torch.nn.ReLU(),
        torch.nn.Linear(84, 10))


def positive_int(minimum):
    def parse(v):
        x = int(v)
        if x < minimum:
            raise argparse.ArgumentTypeError("needs an integer >= %d" % minimum)
        return x
    return parse


def positive_float(v):
    x = float(v)
    if not x > 0:
        raise argparse.ArgumentTypeError("needs a positive number")
    return x


def make_parser(description, thread_check=True):
    """The CLI's training options and defaults (src/cli/train.c); other
    examples add their own options to it."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=positive_int(1), default=2)
    p.add_argument("--batch-size", type=positive_int(1), default=100)
    p.add_argument("--lr", type=positive_float, default=0.01)
    p.add_argument("--seed", type=positive_int(0), default=0)
    p.add_argument("--limit-batches", type=positive_int(1), default=0)
    p.add_argument("--threads", type=positive_int(1), default=None,
                   help="samebits threads (results do not depend on it)")
    if thread_check:
        p.add_argument("--no-thread-check", dest="thread_check", action="store_false",
                       help="skip the 1-vs-2-threads comparison printed on stderr at the end")
    return p


def parse_args(argv):
    return make_parser(__doc__.split("\n")[0]).parse_args(argv)


def train(model, opt, images, labels, args, batches, loss_fn, log=True):
    loader = samebits.data.BatchLoader(images, labels, args.batch_size, shuffle=True,
                                       seed=args.seed)
    for epoch in range(args.epochs):
        model.train()
        loader.set_epoch(epoch)
        for b in range(batches):
            x, y = loader.batch(b)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if log and ((b + 1) % 100 == 0 or b + 1 == batches):
                print("epoch %d batch %d/%d loss %.4f" % (epoch + 1, b + 1, batches, loss.item()),
                      file=sys.stderr)


def evaluate(model, images, labels):
    """Logits of the whole test set in eval mode, 1000 rows at a time, in
    index order; argmax keeps the first maximum (as the CLI)."""
    model.eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(images), 1000):
            outs.append(model(images[i:i + 1000]))
    logits = torch.cat(outs)
    correct = 0
    z = logits.numpy()
    for r in range(len(z)):
        best = 0
        for c in range(1, z.shape[1]):
            if z[r, c] > z[r, best]:
                best = c
        correct += best == int(labels[r])
    return logits, correct


def train_and_report(model, args, tr_x, tr_y, te_x, te_y):
    """The CLI's run on a converted model: Adam, the initial hash, the
    training batches, the trained hash, the test accuracy and the logits'
    hash (the four lines of `samebits train`)."""
    opt = samebits.optim.Adam(model.parameters(), lr=args.lr)
    samebits.print_hash("Hash of the initial model", model)

    batches = (len(tr_x) + args.batch_size - 1) // args.batch_size
    if args.limit_batches and args.limit_batches < batches:
        batches = args.limit_batches
    train(model, opt, tr_x, tr_y, args, batches, samebits.nn.functional.cross_entropy)
    samebits.print_hash("Hash of the trained model", model)

    logits, correct = evaluate(model, te_x, te_y)
    print("Test accuracy of the model on the %d test images: %.4f"
          % (len(te_x), correct / len(te_x)))
    samebits.print_hash("Hash of the logits", logits)


def thread_check(args, images, labels):
    """Trains 3 batches at 1 and at 2 threads (samebits' and PyTorch's) and
    compares the outputs and gradients of one more batch and the parameters;
    returns {model: identical?}."""
    small = argparse.Namespace(**vars(args))
    small.epochs = 1
    x, y = images[:500], labels[:500]
    result = {}
    for name in ("converted samebits model", "unconverted PyTorch model"):
        converted = name.startswith("converted")
        loss_fn = samebits.nn.functional.cross_entropy if converted else \
            torch.nn.functional.cross_entropy
        hashes = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            samebits.set_num_threads(threads)
            model = samebits.init_module(lenet5(), args.seed)
            if converted:
                model = samebits.from_torch_module(model)
                opt = samebits.optim.Adam(model.parameters(), lr=args.lr)
            else:
                opt = torch.optim.Adam(model.parameters(), lr=args.lr)
            train(model, opt, images, labels, small, 3, loss_fn, log=False)
            out = model(x)
            model.zero_grad(set_to_none=True)
            loss_fn(out, y).backward()
            hashes.append((samebits.get_hash(out.detach()),
                           samebits.get_hash([p.grad for p in model.parameters()]),
                           samebits.get_hash(model)))
        result[name] = hashes[0] == hashes[1]
    return result


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        samebits.set_num_threads(args.threads)
    tr_x, tr_y = samebits.data.load_mnist(args.data, train=True)
    te_x, te_y = samebits.data.load_mnist(args.data, train=False)
    tr_x, tr_y, te_x, te_y = (torch.from_numpy(a) for a in (tr_x, tr_y, te_x, te_y))

    model = samebits.init_module(lenet5(), args.seed)   # sb_module_init(model, seed)
    model = samebits.from_torch_module(model)           # the two-line usage
    train_and_report(model, args, tr_x, tr_y, te_x, te_y)

    if args.thread_check:
        # on stderr, so that stdout is exactly the CLI's four lines
        for name, same in thread_check(args, tr_x, tr_y).items():
            print("outputs, gradients and parameters at 1 vs 2 threads, %s: %s"
                  % (name, "bitwise identical" if same else "DIFFERENT"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
