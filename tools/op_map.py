#!/usr/bin/env python3
"""Prints the op map of docs/ARCHITECTURE.md ("Where each op lives"): one
row per op of src/ops/op_table.h with its contract section, reference, fast
kernel(s), backward, autograd wrapper, Python binding and tests, found in the
tree. Run from the repository root after `make tests` (it reads the table from
`BUILD/tests/test_op_table --dump`; BUILD is the argument, default build).
tests/check_op_map.sh checks the table against the op table and the tree."""
import glob
import os
import re
import sys

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")

def read(p):
    with open(p) as f:
        return f.read()

# ---- the op table, as the built tests/test_op_table prints it ----
import subprocess
dump = subprocess.run([os.path.join(BUILD, "tests", "test_op_table"), "--dump"], check=True,
                      capture_output=True, text=True).stdout
ops = []
for line in dump.splitlines():
    cols = line.split("\t")
    if cols[0] != "op":
        continue
    name, ret, params, family, trace, shape, ref, backward, verify = cols[1:]
    ops.append(dict(name=name, family=family, trace=None if trace == "-" else trace,
                    ref=None if ref == "-" else ref, backward=None if backward == "-" else backward))
backward_of = {o["backward"]: o["name"] for o in ops if o["backward"]}

# ---- where functions are defined ----
defs = {}
for p in sorted(glob.glob("src/*/*.c")):
    for m in re.finditer(r"^[A-Za-z_][\w \*]*?\b(sb_\w+)\([^;{]*\)\s*\{", read(p), re.M):
        defs.setdefault(m.group(1), p)

# ---- contract sections ----
def section(o):
    n, f = o["name"], o["family"]
    if f == "linalg" or n.startswith(("sb_conv2d", "sb_conv_transpose2d")) or n == "sb_sgemm":
        return "§7 GEMM family"
    if f == "recurrent":
        return "§7 Recurrent layers"
    if f == "conv":
        return "§8 Pooling"
    if f in ("elementwise", "activation"):
        return "§9 Elementwise ops and activations"
    if f == "reduce":
        return "§10 Reductions over axes"
    if f == "index":
        return "§18 Index, scatter and embedding"
    if f == "attention":
        return "§19 Attention"
    if f in ("loss", "dropout"):
        return "§11 Softmax, losses and dropout"
    if f == "norm":
        return "§12 Normalisation"
    if f == "optim":
        return "§14 Optimizers"
    if n == "sb_ssum":
        return "§3.2 The canonical sum"
    if f == "math":
        return "§6 Elementary functions"
    if f == "random":
        return "§13 Random numbers"
    return "— (moves data, no arithmetic)"

# ---- fast kernels: the src/cpu files each family's CPU backend entry runs ----
def fast(o):
    n, f = o["name"], o["family"]
    if f == "linalg" or n == "sb_sgemm":
        return "`src/cpu/gemm.c` (+ `gemm_{sse2,avx2,avx512,neon}.c`)"
    if f == "recurrent":
        return "— (the ops it calls run their fast kernels)"
    if n.startswith(("sb_conv2d_output", "sb_pool2d_output", "sb_conv_transpose2d_output")):
        return "—"
    if n.startswith(("sb_conv2d", "sb_conv_transpose2d")):  # transposed: conv2d's kernels
        return ("`src/cpu/conv2d.c` (+ `conv2d_{avx2,avx512}.c`), `src/cpu/gemm.c`; depthwise: "
                "`src/cpu/conv2d_dw.c` (+ `conv2d_dw_{scalar,avx2,avx512}.c`)")
    if n.startswith("sb_pad2d"):
        return "`src/cpu/pad2d.c`"
    if n.startswith("sb_interpolate"):
        return "`src/cpu/interpolate.c`"
    if n.startswith("sb_grid_sample"):
        return "`src/cpu/grid_sample.c`"
    if f == "conv":
        return "`src/cpu/pool2d.c` (+ `pool2d_avx512.c`)"
    if n == "sb_reduce_to_shape":
        return "`src/cpu/reduce.c`"
    if n.startswith(("sb_cumsum", "sb_cumprod")):
        return "`src/cpu/cumulative.c`"
    if n.startswith("sb_prelu"):
        return "— (the reference runs)"
    if n in ("sb_bincount", "sb_histc"):
        return "— (the reference runs)"
    if n == "sb_scatter_reduce":
        return "`src/cpu/scatter_reduce.c`"
    if n in ("sb_sort", "sb_topk", "sb_kthvalue", "sb_median", "sb_sort_backward"):
        return "`src/cpu/sort.c`"
    if f in ("elementwise", "activation"):
        return "`src/cpu/pointwise.c` (+ `pointwise_*.c`), `src/cpu/vmath.c`"
    if f == "reduce":
        return "`src/cpu/reduce.c`, `src/cpu/sum.c`"
    if f == "index":
        return "`src/cpu/index.c`"
    if n == "sb_sdpa_default_scale":
        return "—"
    if f == "attention":
        return "`src/cpu/attention.c`, `src/cpu/gemm.c`, `src/cpu/vmath.c`, `src/cpu/sum.c`"
    if n.startswith("sb_mse"):
        return "— (the reference runs)"
    if n.startswith("sb_ctc_loss"):
        return "`src/cpu/ctc.c`"
    if f == "loss":
        return "`src/cpu/softmax.c`"
    if f == "norm":
        return "`src/cpu/norm.c`"
    if f == "dropout":
        return "`src/cpu/dropout.c`"
    if f == "optim":
        return "`src/cpu/optim.c`" if o["ref"] else "—"
    if n == "sb_ssum":
        return "`src/cpu/sum.c` (+ `sum_*.c`)"
    if f == "math":
        # only the functions src/cpu/vmath.c has a batch form of (SB_VMATH_ENTRY)
        has_batch = "SB_VMATH_ENTRY(%s)" % n[len("sb_"):] in read("src/cpu/vmath.c")
        return "`src/cpu/vmath.c` (batch forms)" if has_batch else "—"
    return "—"

# ---- autograd wrappers: sb_ag_* functions that call the op ----
wrappers = {}
for p in sorted(glob.glob("src/autograd/*.c")):
    text = read(p)
    funcs = list(re.finditer(r"^(?:static )?sb_status (\w+)\([^;]*?\)\s*\{", text, re.M))
    for i, m in enumerate(funcs):
        end = funcs[i + 1].start() if i + 1 < len(funcs) else len(text)
        for call in set(re.findall(r"\b(sb_\w+)\(", text[m.end():end])):
            wrappers.setdefault(call, set()).add((m.group(1), p))

def autograd(o):
    w = sorted(x for x in wrappers.get(o["name"], ()) if x[0].startswith("sb_ag_"))
    if w:
        return ", ".join("`%s` (`%s`)" % x for x in w)
    fwd = backward_of.get(o["name"])
    w = sorted(x for x in wrappers.get(fwd, ()) if x[0].startswith("sb_ag_")) if fwd else []
    if w:
        return "the backward of " + ", ".join("`%s`" % x[0] for x in w)
    return "—"

# ---- Python: functions of python/samebits that call it ----
py = {}
for p in sorted(glob.glob("python/samebits/**/*.py", recursive=True)):
    if p.endswith("_lib.py"):
        continue
    text = read(p)
    defs_py = list(re.finditer(r"^\s*def (\w+)\(", text, re.M))
    for m in re.finditer(r"[\"'](sb_\w+)[\"']|lib\.(sb_\w+)", text):
        fn = m.group(1) or m.group(2)
        owner = [d.group(1) for d in defs_py if d.start() < m.start()]
        py.setdefault(fn, set()).add((owner[-1] if owner else "<module>", p))

def python(o):
    s = sorted(py.get(o["name"], ()), key=lambda x: (x[1], x[0]))
    if not s:
        return "—"
    by_file = {}
    for f, p in s:
        by_file.setdefault(p, []).append(f)
    return "; ".join("`%s`: %s" % (p, ", ".join(fs[:3]) + (", …" if len(fs) > 3 else ""))
                     for p, fs in by_file.items())

# ---- tests naming the op (beyond the suites that cover every op) ----
EVERY = {"tests/test_bad_input.c", "tests/test_op_table.c", "tests/python/test_bindings.py",
         "tests/python/test_bad_inputs.py", "tests/python/test_c_types.py"}
tests = {}
for p in sorted(glob.glob("tests/test_*.c") + glob.glob("tests/python/test_*.py") +
                glob.glob("tests/cuda/*.cu")):
    if p in EVERY:
        continue
    for fn in set(re.findall(r"\b(sb_\w+)\b", read(p))):
        tests.setdefault(fn, []).append(p)

def tests_of(o):
    t = tests.get(o["name"], [])
    if not t:
        return "—"
    return ", ".join("`%s`" % p for p in t[:4]) + (" …" if len(t) > 4 else "")

def ref_cell(o):
    if not o["ref"]:
        return "—"
    p = defs.get(o["ref"])
    return "`%s` (`%s`)" % (o["ref"], p) if p else "`%s`" % o["ref"]

print("| op | contract | reference | fast kernel(s) | backward | autograd wrapper | Python | tests |")
print("|---|---|---|---|---|---|---|---|")
for o in ops:
    print("| `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
        o["name"], section(o), ref_cell(o), fast(o),
        "`%s`" % o["backward"] if o["backward"] else "—", autograd(o), python(o), tests_of(o)))
