"""Data-parallel training over torch.distributed whose bits do not depend on
the number of processes (contract section 17, docs/DISTRIBUTED.md).

A step's batch is cut into K micro-batches; each process computes the
gradients of its own micro-batches; :func:`exact_allreduce_mean` combines
them with the order-free exact reduction of the C library
(src/dist/exact_sum.h): per-element exponent codes combined by an integer
MAX allreduce, fixed-point terms combined by an integer SUM allreduce, one
rounding, then one float32 division by K. Integer max and sum give the same
result for any grouping, so the result depends only on the K micro-batch
gradients, never on how many processes held them or on the backend's
reduction tree. Works over any backend with integer MAX/SUM: gloo on CPU
(tested), and NCCL, whose collectives take CUDA tensors: the integer wire
tensors are copied to the current CUDA device for the allreduce and back
(the reduction's own arithmetic stays on the CPU). NCCL has uint8 MAX and
int32/int64 SUM, so the bits are the same; that path is untested here
(no GPU on the machine that runs the tests).

    import samebits.distributed as sbd
    grads = [sbd.flat_grads(model) for each local micro-batch]
    mean = sbd.exact_allreduce_mean(grads, k_total)
    sbd.set_flat_grads(model, mean); opt.step()

:class:`MicroBatchTrainer` does this for a model, a loss and a batch,
buffers (batch-norm running statistics) included: every micro-batch's
forward starts from the step's buffers, then each float32 buffer becomes the
exact mean of the K micro-batches' values (the same reduction) and each
integer buffer the mean of its values (num_batches_tracked advances by one
per step). This replaces DDP's broadcast_buffers, whose result depends on
which process is rank 0 and on how many micro-batches it ran.
Everything here is integer arithmetic on the floats' bits (torch int64 ops
are exact), restating the C reference operation for operation.
"""
import torch

__all__ = ["word_bits", "guard_bits", "codes", "terms", "finish", "exact_sum", "exact_allreduce_mean",
           "flat_grads", "set_flat_grads", "MicroBatchTrainer", "MAX_TERMS"]

MAX_TERMS = 1 << 20


def _check_k(k):
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_TERMS:
        raise ValueError(f"k: the number of inputs to the exact reduction must be an int in 1..{MAX_TERMS}, got {k!r}")


def word_bits(k):
    """W: 32 for k <= 128, else 64; every partial sum fits a signed W-bit word."""
    _check_k(k)
    return 32 if k <= 128 else 64


def guard_bits(k):
    """G = W - 25 - ceil(log2 k)."""
    return word_bits(k) - 25 - (k - 1).bit_length()


def _bits(x):
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.device.type != "cpu":
        raise TypeError("x: expected a float32 CPU tensor")
    return x.contiguous().view(-1).view(torch.int32).to(torch.int64) & 0xFFFFFFFF


def codes(x):
    """The exponent code of every element: 0 for -0.0, 1 for +0.0 and
    subnormals, the biased exponent for normal numbers, 255 for inf/NaN."""
    u = _bits(x)
    b = (u >> 23) & 0xFF
    low = (u != 0x80000000).to(torch.int64)
    return torch.where(b != 0, b, low).to(torch.uint8)


def _pow2(n):
    return torch.ones_like(n) << n


def _shift_round(v, left, right):
    """(v << left) >> right with ties-to-even rounding of the bits shifted out."""
    r1 = (right - 1).clamp(min=0)
    bias = torch.where(right > 0, _pow2(r1) - 1 + ((v >> right) & 1), torch.zeros_like(v))
    return ((v << left) + bias) >> right


def terms(x, c, k):
    """The int64 fixed-point terms of x given the agreed codes c (uint8)."""
    g = guard_bits(k)
    u = _bits(x)
    c = c.to(torch.int64)
    b = (u >> 23) & 0xFF
    m = (u & 0x7FFFFF) | ((b != 0).to(torch.int64) << 23)
    e = b + (b == 0).to(torch.int64) - 150
    d = (c - 150 - g) - e
    t = _shift_round(m, (-d).clamp(min=0), d.clamp(min=0, max=25))
    neg = (u >> 31) == 1
    t = torch.where(neg, -t, t)
    base = k + 1
    mag = u & 0x7FFFFFFF
    nonfinite = torch.where(mag > 0x7F800000, torch.full_like(u, base * base),
                            torch.where(mag == 0x7F800000, torch.where(neg, torch.full_like(u, base),
                                                                       torch.ones_like(u)),
                                        torch.zeros_like(u)))
    return torch.where(c == 255, nonfinite, torch.where(c == 0, torch.zeros_like(t), t))


def finish(acc, c, k):
    """The float32 results from the summed terms acc (int64) and codes c."""
    g = guard_bits(k)
    c = c.to(torch.int64)
    q = c - 150 - g
    neg = acc < 0
    mag = acc.abs()
    p = torch.zeros_like(mag)
    for s in (32, 16, 8, 4, 2, 1):  # p = floor(log2(mag)), 0 for mag == 0
        p = p + s * ((mag >> (p + s)) != 0).to(torch.int64)
    ulp = torch.clamp(p + q - 23, min=-149)
    d = ulp - q
    m = _shift_round(mag, (-d).clamp(min=0), d.clamp(min=0))
    enc = ((ulp + 149) << 23) + m
    enc = torch.clamp(enc, max=0x7F800000)
    enc = torch.where(mag == 0, torch.zeros_like(enc), enc) | torch.where(neg, torch.full_like(enc, 0x80000000),
                                                                      torch.zeros_like(enc))
    base = k + 1
    nan_n, rest = acc // (base * base), acc % (base * base)
    neg_n, pos_n = rest // base, rest % base
    nonfinite = torch.where((nan_n > 0) | ((pos_n > 0) & (neg_n > 0)), torch.full_like(enc, 0x7FC00000),
                            torch.where(neg_n > 0, torch.full_like(enc, 0xFF800000), torch.full_like(enc, 0x7F800000)))
    enc = torch.where(c == 255, nonfinite, torch.where(c == 0, torch.full_like(enc, 0x80000000), enc))
    enc = torch.where(enc >= 1 << 31, enc - (1 << 32), enc)
    return enc.to(torch.int32).view(torch.float32)


def exact_sum(xs):
    """The order-free exact sum of equally shaped float32 tensors (one process)."""
    xs = list(xs)
    k = len(xs)
    _check_k(k)
    c = codes(xs[0])
    for x in xs[1:]:
        c = torch.maximum(c, codes(x))
    acc = torch.zeros(c.shape, dtype=torch.int64)
    for x in xs:
        acc += terms(x, c, k)
    return finish(acc, c, k).view(xs[0].shape)


def _all_reduce(t, op, group):
    """dist.all_reduce of a CPU integer tensor, in place; through the current
    CUDA device when the group's backend is NCCL (CUDA tensors only)."""
    import torch.distributed as dist
    if dist.get_backend(group) == "nccl":
        wire = t.to(torch.device("cuda", torch.cuda.current_device()))
        dist.all_reduce(wire, op=op, group=group)
        t.copy_(wire.cpu())
    else:
        dist.all_reduce(t, op=op, group=group)
    return t


def exact_allreduce_mean(local, k_total, group=None):
    """Mean over every process's micro-batch results: `local` holds this
    process's flat float32 tensors (possibly none), k_total the number of
    all of them across the group. Returns exact_sum / float32(k_total), the
    same tensor on every process."""
    import torch.distributed as dist
    _check_k(k_total)
    local = list(local)
    if not local:
        raise ValueError("local: this process holds no micro-batch result")
    n = local[0].numel()
    c = torch.zeros(n, dtype=torch.uint8)
    for x in local:
        c = torch.maximum(c, codes(x))
    _all_reduce(c, dist.ReduceOp.MAX, group)  # one byte per element
    acc = torch.zeros(n, dtype=torch.int64)
    for x in local:
        acc += terms(x, c, k_total)
    if word_bits(k_total) == 32:  # partial sums fit: half the bytes
        wire = acc.to(torch.int32)
        _all_reduce(wire, dist.ReduceOp.SUM, group)
        acc = wire.to(torch.int64)
    else:
        _all_reduce(acc, dist.ReduceOp.SUM, group)
    return finish(acc, c, k_total) / torch.tensor(float(k_total), dtype=torch.float32)


def flat_grads(model):
    """Every parameter's gradient, in model.parameters() order, as one flat float32 tensor."""
    return torch.cat([p.grad.detach().reshape(-1) for p in model.parameters()])


def set_flat_grads(model, flat):
    off = 0
    for p in model.parameters():
        n = p.numel()
        p.grad = flat[off:off + n].view(p.shape).clone()
        off += n


def _float_buffers(bufs):
    return [b for b in bufs if b.dtype == torch.float32]


def _int_buffers(bufs):
    return [b for b in bufs if b.dtype != torch.float32]


class MicroBatchTrainer:
    """One step = the batch cut into k micro-batches of equal size; process
    `rank` of `world` (world divides k) computes micro-batches
    rank*k/world .. (rank+1)*k/world - 1, each from the step's incoming
    buffers; gradients, loss and float32 buffers combine by
    exact_allreduce_mean, integer buffers by an exact integer mean, then
    `optimizer.step()`. K = 1 on one process is a plain step."""

    def __init__(self, model, loss_fn, optimizer, micro_batches, rank=0, world=1, group=None):
        _check_k(micro_batches)
        if world < 1 or micro_batches % world:
            raise ValueError(f"world: {world} processes cannot share {micro_batches} micro-batches")
        self.model, self.loss_fn, self.opt = model, loss_fn, optimizer
        self.k, self.rank, self.world, self.group = micro_batches, rank, world, group

    def step(self, x, y):
        if x.shape[0] % self.k:
            raise ValueError(f"x: batch of {x.shape[0]} is not {self.k} equal micro-batches")
        m, per = x.shape[0] // self.k, self.k // self.world
        bufs = list(self.model.buffers())
        for b in bufs:
            if b.device.type != "cpu" or not (b.dtype == torch.float32 or not b.dtype.is_floating_point):
                raise TypeError("model: every buffer must be a float32 or integer CPU tensor, got "
                                f"{b.dtype} on {b.device}")
        fbufs, ibufs = _float_buffers(bufs), _int_buffers(bufs)
        start = [b.detach().clone() for b in bufs]
        int_start = [b.detach().clone().to(torch.int64) for b in ibufs]
        int_delta = [torch.zeros(b.shape, dtype=torch.int64) for b in ibufs]
        results = []
        for j in range(self.rank * per, (self.rank + 1) * per):
            with torch.no_grad():
                for b, v in zip(bufs, start):
                    b.copy_(v)
            self.opt.zero_grad(set_to_none=True)
            loss = self.loss_fn(self.model(x[j * m:(j + 1) * m]), y[j * m:(j + 1) * m])
            loss.backward()
            results.append(torch.cat([flat_grads(self.model), loss.detach().reshape(1)] +
                                     [b.detach().reshape(-1) for b in fbufs]))
            for d, b, v in zip(int_delta, ibufs, int_start):
                d += b.detach().to(torch.int64) - v
        mean = exact_allreduce_mean(results, self.k, self.group)
        n_grad = sum(p.numel() for p in self.model.parameters())
        set_flat_grads(self.model, mean[:n_grad])
        with torch.no_grad():
            off = n_grad + 1
            for b in fbufs:
                b.copy_(mean[off:off + b.numel()].view(b.shape))
                off += b.numel()
            if ibufs:
                import torch.distributed as dist
                flat = torch.cat([d.reshape(-1) for d in int_delta])
                _all_reduce(flat, dist.ReduceOp.SUM, self.group)
                if bool((flat % self.k != 0).any()):
                    raise ValueError("model: an integer buffer's mean over the micro-batches is not an integer")
                off = 0
                for b, v in zip(ibufs, int_start):
                    b.copy_((v.reshape(-1) + flat[off:off + b.numel()] // self.k).view(b.shape).to(b.dtype))
                    off += b.numel()
        self.opt.step()
        return mean[n_grad]
