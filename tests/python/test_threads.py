"""A converted model's outputs, gradients and updates are the same bits at
any thread count (torch.set_num_threads, samebits.set_num_threads and
SB_NUM_THREADS). Nothing here depends on PyTorch being irreproducible."""
import json
import os
import subprocess
import sys

import numpy as np
import torch

import samebits
from conftest import REPO

SCRIPT = r"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import samebits
torch.set_num_threads(int(sys.argv[2]))
def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3), torch.nn.GELU(), torch.nn.Flatten(),
        torch.nn.Linear(8 * 6 * 6, 64), torch.nn.LayerNorm(64), torch.nn.Tanh(),
        torch.nn.Dropout(0.1), torch.nn.Linear(64, 10))
m = samebits.from_torch_module(samebits.init_module(model(), 11))
opt = samebits.optim.AdamW(m.parameters(), lr=1e-3)
x = torch.from_numpy(samebits.random.normal((64, 3, 16, 16), 1, 2))
y = torch.from_numpy(samebits.random.uniform((64,), 1, 3, 0, 10).astype('int64'))
hashes = []
for step in range(3):
    out = m(x)
    loss = samebits.nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    hashes.append([samebits.get_hash(out.detach()),
                   samebits.get_hash([p.grad for p in m.parameters()])])
    opt.step()
hashes.append(samebits.get_hash(m))
print(json.dumps({"threads": samebits.get_num_threads(), "hashes": hashes}))
"""


def run(torch_threads, sb_threads):
    env = dict(os.environ, SB_NUM_THREADS=str(sb_threads))
    r = subprocess.run([sys.executable, "-c", SCRIPT, os.path.join(REPO, "python"),
                        str(torch_threads)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_sb_num_threads_and_torch_threads_do_not_change_bits():
    one = run(1, 1)
    two = run(2, 2)
    assert one["threads"] == 1 and two["threads"] == 2
    assert one["hashes"] == two["hashes"]
    assert run(2, 1)["hashes"] == one["hashes"]


def test_set_num_threads_in_process(rng):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(300, 200), torch.nn.ReLU(),
                                torch.nn.Linear(200, 10))
    conv = samebits.from_torch_module(model)
    x = torch.from_numpy(rng.standard_normal((128, 300)).astype(np.float32))
    results = []
    for t in (1, 2):
        samebits.set_num_threads(t)
        torch.set_num_threads(t)
        conv.zero_grad(set_to_none=True)
        out = conv(x)
        samebits.nn.functional.sum(out).backward()
        results.append((samebits.get_hash(out.detach()),
                        samebits.get_hash([p.grad for p in conv.parameters()])))
    assert results[0] == results[1]


def test_many_small_parallel_calls_do_not_hang():
    # thousands of short ctypes calls into the thread pool, switching the
    # thread count as they go (a start-up race once deadlocked exactly here)
    code = ("import sys, numpy as np\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import samebits\n"
            "x = np.ones((2, 3, 9, 8), np.float32); w = np.ones((4, 3, 3, 2), np.float32)\n"
            "a = np.ones((64, 64), np.float32)\n"
            "for i in range(3000):\n"
            "    if i % 7 == 0: samebits.set_num_threads(1 + i % 3)\n"
            "    samebits.ops.conv2d(x, w); samebits.ops.mm(a, a)\n"
            "print('done')\n")
    r = subprocess.run([sys.executable, "-c", code, os.path.join(REPO, "python")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr
