#!/usr/bin/env python3
"""Depthwise conv2d on the zoo's shapes (batch 8): samebits against PyTorch
2.x (the PyPI test environment) and Debian's PyTorch 1.13, in one run.

Runs bench_conv_dw --csv (samebits' fast op at 1 and 2 threads, each result
checked against the reference kernel's bits), then times the same layers
and passes in PyTorch under every interpreter that has it - this one, the
PyPI environment's (scripts/python-venv.sh python) and /usr/bin/python3 -
each with torch.set_num_threads(T), best of several runs (the gradients
through aten's convolution_backward, one output at a time), and prints the
ratios PyTorch ms / samebits ms (above 1: samebits is faster). Layer names
encode the geometry: "dw C KxK[/S] @H", groups = C, padding K//2.

The build directory comes from $SB_BUILD (default: build)."""
import os, re, subprocess, sys, time

BUILD = os.environ.get("SB_BUILD", "build")
HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 8
MIN_S = 0.3


def geometry(name):
    m = re.search(r"dw (\d+) (\d+)x\d+(?:/(\d+))? @(\d+)", name)
    c, k, s, h = (int(v) if v else 1 for v in m.groups())
    return c, k, s, h


def best_ms(fn):
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or (spent < MIN_S and runs < 200):
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        best, spent, runs = min(best, t), spent + t, runs + 1
    return best * 1e3


def torch_ms(torch, name, pass_, threads):
    torch.set_num_threads(threads)
    c, k, s, h = geometry(name)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(BATCH, c, h, h, generator=g) - 0.5
    w = torch.rand(c, 1, k, k, generator=g) - 0.5
    conv = lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=k // 2, groups=c)
    dy = torch.rand(conv().shape, generator=g) - 0.5
    if pass_ == "forward":
        fn = conv
    else:
        mask = [pass_ == "input grad", pass_ == "weight grad", False]
        fn = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [k // 2] * 2,
                                                         [1, 1], False, [0, 0], c, mask)
    with torch.no_grad():
        return best_ms(fn)


def torch_times(rows):
    """--torch mode: 'layer,pass' lines on stdin -> 'version,ms_1t,ms_2t' lines."""
    import torch
    print(torch.__version__)
    for name, pass_ in rows:
        print("%.4f,%.4f" % (torch_ms(torch, name, pass_, 1), torch_ms(torch, name, pass_, 2)))
        sys.stdout.flush()


def interpreters():
    """Every distinct Python with torch: the venv's, Debian's, this one."""
    found = []
    try:
        venv = subprocess.run([os.path.join(HERE, "..", "scripts", "python-venv.sh"), "python"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        venv = ""
    for py in (venv, "/usr/bin/python3", sys.executable):
        # a venv's python may resolve to the system one: compare paths as
        # given, and the torch versions later
        if py and os.path.exists(py) and py not in found:
            found.append(py)
    return found


def main():
    global MIN_S
    quick = "--quick" in sys.argv
    if quick:
        MIN_S = 0.05
    if "--torch" in sys.argv:
        torch_times([line.strip().split(",") for line in sys.stdin if line.strip()])
        return
    cmd = [os.path.join(BUILD, "bench", "bench_conv_dw"), "--csv"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    rows = [line.split(",") for line in out.stdout.splitlines() if line.count(",") == 4]
    if not rows:
        sys.exit("bench_conv_dw.py: no output from %s: %s" % (cmd[0], out.stderr))
    peers = []
    for py in interpreters():
        r = subprocess.run([py, os.path.abspath(__file__), "--torch"] + (["--quick"] if quick else []),
                           input="".join("%s,%s\n" % (n, p) for n, p, *_ in rows),
                           capture_output=True, text=True)
        lines = r.stdout.split()
        if r.returncode != 0 or len(lines) != len(rows) + 1:
            continue  # no torch there
        if lines[0] in [v for v, _ in peers]:
            continue
        peers.append((lines[0], [tuple(float(v) for v in l.split(",")) for l in lines[1:]]))
    print("depthwise conv2d, batch %d: PyTorch / samebits, best ms (ratio > 1: samebits faster)"
          % BATCH)
    head = "%-18s %-11s %7s %7s" % ("layer", "pass", "sb 1t", "sb 2t")
    for v, _ in peers:
        head += " | %-8s %7s %7s %5s %5s" % ("torch", "1t", "2t", "x 1t", "x 2t")
    print(head + "  bits")
    for i, (name, pass_, sb1, sb2, bits) in enumerate(rows):
        sb1, sb2 = float(sb1), float(sb2)
        line = "%-18s %-11s %7.3f %7.3f" % (name, pass_, sb1, sb2)
        for v, times in peers:
            t1, t2 = times[i]
            line += " | %-8s %7.3f %7.3f %5.2f %5.2f" % (v.split("+")[0], t1, t2, t1 / sb1, t2 / sb2)
        print(line + "  " + bits)
    if not peers:
        print("(no PyTorch found: samebits' times only)")
    sys.exit(out.returncode)


if __name__ == "__main__":
    main()
