"""The Python bindings against the C declarations.

ctypes trusts python/samebits/_lib.py blindly: a wrong argument type or a
drifted struct mirror is memory corruption, not an error. So this compares
_lib.py with the op table (src/ops/op_table.h), which the C build ties to the
public headers: `test_op_table --dump` (built by `make tests` next to the
library) prints every table function's return type and parameters and the
layout of every struct _lib.py mirrors. Checked here:
  - every _SIGS entry is a table function with as many arguments, each
    ctypes type matching the C type, and the matching return type;
  - every ctypes Structure has the C size, alignment, field names, offsets
    and sizes (and the header declares exactly those fields);
  - every sb_* function the package, its tests and examples call is in
    _SIGS and in the table;
  - the table spells each function as its header declares it, and every
    function of the op headers has a table line;
  - trace names: every autograd wrapper sb_ag_<name> has a table op with
    that trace name, and every trace name has its wrapper;
  - output shapes: each shape rule of the table (sb_conv2d_output_size, ...)
    is what the Python ops, autograd and the verify runners call;
  - every table op names a `samebits verify` case that exists and calls it,
    or is exempt with a reason.
"""
import ctypes
import glob
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import REPO
from samebits import _lib

INCLUDE = os.path.join(REPO, "include", "samebits")
OP_HEADERS = ("linalg", "conv", "elementwise", "reduce", "index", "loss", "norm", "dropout", "attention", "recurrent", "optim",
              "kernels", "math", "random")

# The C struct each ctypes.Structure of _lib.py mirrors.
MIRRORS = {
    "sb_tensor": _lib.Tensor, "sb_named": _lib.Named, "sb_dataset": _lib.Dataset,
    "sb_conv2d_params": _lib.Conv2dParams, "sb_pool2d_params": _lib.Pool2dParams,
    "sb_conv_transpose2d_params": _lib.ConvTranspose2dParams,
    "sb_pad2d_params": _lib.Pad2dParams, "sb_elementwise_loss": _lib.ElementwiseLoss,
    "sb_class_loss": _lib.ClassLoss, "sb_interpolate_params": _lib.InterpolateParams,
    "sb_ctc_loss": _lib.CtcLoss, "sb_rnn_sequence": _lib.RnnSequence,
    "sb_grid_sample_params": _lib.GridSampleParams,
    "sb_sgd_config": _lib.SgdConfig, "sb_adam_config": _lib.AdamConfig, "sb_rng": _lib.Rng,
}
SCALARS = {
    "bool": ctypes.c_bool, "char": ctypes.c_char, "int": ctypes.c_int,
    "unsigned": ctypes.c_uint, "float": ctypes.c_float, "double": ctypes.c_double,
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "uint32_t": ctypes.c_uint32,
    "size_t": ctypes.c_size_t,
}


def _dump_path():
    lib_dir = os.path.dirname(os.path.abspath(_lib.lib_path))
    return os.path.join(lib_dir, "tests", "test_op_table")


@pytest.fixture(scope="module")
def dump():
    path = _dump_path()
    assert os.path.exists(path), "%s is missing: build it with `make tests`" % path
    text = subprocess.run([path, "--dump"], check=True, capture_output=True, text=True).stdout
    d = {"op": {}, "support": {}, "struct": {}, "field": {}, "type": {}, "const": {}}
    for line in text.splitlines():
        kind, *cols = line.split("\t")
        if kind == "op":
            name, ret, params, family, trace, shape, ref, backward, verify = cols
            d["op"][name] = dict(ret=ret, params=params, family=family,
                                 trace=None if trace == "-" else trace,
                                 shape=None if shape == "-" else shape, verify=verify)
        elif kind == "support":
            name, ret, params, family = cols
            d["support"][name] = dict(ret=ret, params=params, family=family)
        elif kind == "struct":
            d["struct"][cols[0]] = (int(cols[1]), int(cols[2]))
        elif kind == "field":
            d["field"].setdefault(cols[0], []).append((cols[1], int(cols[2]), int(cols[3])))
        elif kind == "type":
            d["type"][cols[0]] = int(cols[1])
        elif kind == "const":
            d["const"][cols[0]] = int(cols[1])
        else:
            raise AssertionError("unknown dump line: %r" % line)
    assert d["op"] and d["struct"], "the dump printed no table"
    return d


def _functions(dump):
    out = dict(dump["op"])
    out.update(dump["support"])
    return out


# ---- C declarations as text -------------------------------------------------

def _strip_c(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    return text.replace("SB_API", " ").replace('extern "C"', " ")


def _norm(s):
    s = " ".join(s.split())
    s = re.sub(r"\s*\*\s*", " *", s)            # "T * x", "T* x" -> "T *x"
    s = re.sub(r"\*\s+(?=[\w*])", "*", s)
    s = re.sub(r"\s*([(),\[\]])\s*", r"\1", s)
    return s.replace(",", ", ")


def _header_decls(header):
    text = _strip_c(open(os.path.join(INCLUDE, header + ".h")).read())
    out = {}
    for st in re.split(r"[;{}]", text):
        st = " ".join(st.split())
        m = re.fullmatch(r"([A-Za-z_][\w\s*]*?)\s*\b(sb_\w+)\s*\((.*)\)", st)
        if m and not m.group(1).startswith("typedef"):
            out[m.group(2)] = (_norm(m.group(1)), _norm("(" + (m.group(3) or "void") + ")"))
    return out


def _all_header_decls():
    out = {}
    for path in sorted(glob.glob(os.path.join(INCLUDE, "*.h"))):
        out.update(_header_decls(os.path.splitext(os.path.basename(path))[0]))
    return out


def _header_struct_fields(name):
    for path in sorted(glob.glob(os.path.join(INCLUDE, "*.h"))):
        text = _strip_c(open(path).read())
        m = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), text, re.S)
        if m:
            fields = []
            for decl in m.group(1).split(";"):
                decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
                if not decl:
                    continue
                # "int64_t stride_h, stride_w" declares two fields
                first, *more = [p.strip() for p in decl.split(",")]
                fields.append(re.findall(r"\w+", first)[-1])
                fields += [re.findall(r"\w+", p)[-1] for p in more]
            return fields
    raise AssertionError("no header declares struct %s" % name)


# ---- C types to ctypes --------------------------------------------------------

def _parse_param(p):
    """'const sb_tensor *const *x' -> ('sb_tensor', 2); arrays decay to pointers."""
    p = p.strip()
    arrays = len(re.findall(r"\[[^\]]*\]", p))
    p = re.sub(r"\[[^\]]*\]", "", p)
    m = re.fullmatch(r"(.*?)(\w+)", p)
    assert m, "cannot parse parameter %r" % p
    ctype = m.group(1)
    if not ctype.strip():  # an unnamed parameter: the word was the type
        ctype = p
    stars = ctype.count("*") + arrays
    words = [w for w in re.findall(r"\w+", ctype) if w != "const"]
    return " ".join(words), stars


def _params(params):
    inner = params.strip()[1:-1].strip()
    if inner in ("", "void"):
        return []
    return [_parse_param(p) for p in inner.split(",")]


def _accepted(base, stars, dump):
    """The ctypes types a binding may use for a C type (by value)."""
    enums = {t for t in dump["type"] if t.startswith("sb_")}
    if stars == 0:
        if base in MIRRORS:
            return {MIRRORS[base]}
        if base in enums:
            assert dump["type"][base] == ctypes.sizeof(ctypes.c_int), base
            return {ctypes.c_int}
        if base in SCALARS:
            assert dump["type"][base] == ctypes.sizeof(SCALARS[base]), base
            return {SCALARS[base]}
        if base == "void":
            return {None}
        raise AssertionError("no ctypes rule for C type %r" % base)
    if stars == 1:
        if base in MIRRORS:
            return {ctypes.POINTER(MIRRORS[base])}
        if base == "char":
            return {ctypes.c_char_p}
        if base == "unsigned char":
            return {ctypes.c_char_p, ctypes.c_void_p}
        if base in SCALARS:
            return {ctypes.POINTER(SCALARS[base]), ctypes.c_void_p}
        if base in enums:
            return {ctypes.POINTER(ctypes.c_int)}
        return {ctypes.c_void_p}  # void * and opaque handles (sb_module *, ...)
    if stars == 2:
        if base in MIRRORS:
            return {ctypes.POINTER(ctypes.POINTER(MIRRORS[base]))}
        if base == "char":
            return {ctypes.POINTER(ctypes.c_char_p)}
        return {ctypes.POINTER(ctypes.c_void_p)}
    raise AssertionError("no ctypes rule for %s with %d *" % (base, stars))


def _restype_accepted(ret, dump):
    if ret == "void":
        return {None}
    return _accepted(*_parse_param(ret + " r"), dump)


def _tname(t):
    return "None" if t is None else getattr(t, "__name__", repr(t))


# ---- the tests ------------------------------------------------------------------

def test_sigs_match_the_c_declarations(dump):
    funcs = _functions(dump)
    problems = []
    for name, (restype, argtypes) in _lib._SIGS.items():
        if name not in funcs:
            problems.append("%s: in _SIGS but not in the op table" % name)
            continue
        f = funcs[name]
        params = _params(f["params"])
        if len(params) != len(argtypes):
            problems.append("%s: _SIGS has %d arguments, C %s has %d" % (
                name, len(argtypes), f["params"], len(params)))
            continue
        for i, ((base, stars), got) in enumerate(zip(params, argtypes)):
            ok = _accepted(base, stars, dump)
            if got not in ok:
                problems.append("%s: argument %d is %s in _SIGS, C says %s%s (expected %s)" % (
                    name, i, _tname(got), base, " " + "*" * stars if stars else "",
                    " or ".join(sorted(_tname(t) for t in ok))))
        ok = _restype_accepted(f["ret"], dump)
        if restype not in ok:
            problems.append("%s: restype %s in _SIGS, C returns %s" % (name, _tname(restype), f["ret"]))
    assert not problems, "\n".join(problems)


def test_sigs_are_installed_on_the_library():
    for name, (restype, argtypes) in _lib._SIGS.items():
        fn = getattr(_lib._cdll, name)  # the raw ctypes function under lib's range checks
        assert fn.restype is restype and list(fn.argtypes) == list(argtypes), name


def test_struct_mirrors_match_the_c_layout(dump):
    assert set(dump["struct"]) == set(MIRRORS), "mirrored structs: dump %s, test %s" % (
        sorted(dump["struct"]), sorted(MIRRORS))
    for name, cls in MIRRORS.items():
        size, align = dump["struct"][name]
        assert ctypes.sizeof(cls) == size, "%s: ctypes size %d, C %d" % (name, ctypes.sizeof(cls), size)
        assert ctypes.alignment(cls) == align, "%s: alignment" % name
        c_fields = dump["field"][name]
        assert [f[0] for f in c_fields] == _header_struct_fields(name), \
            "%s: test_op_table.c's field list differs from the header" % name
        py_fields = [f[0] for f in cls._fields_]
        assert py_fields == [f[0] for f in c_fields], "%s: fields %s in Python, %s in C" % (
            name, py_fields, [f[0] for f in c_fields])
        for fname, offset, fsize in c_fields:
            desc = getattr(cls, fname)
            assert (desc.offset, desc.size) == (offset, fsize), \
                "%s.%s: ctypes offset/size %d/%d, C %d/%d" % (name, fname, desc.offset,
                                                               desc.size, offset, fsize)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (0,), (3, 0, 2), (2, 3, 4), (1, 1, 5, 1),
                                   (2,) * 8, (0,) * 8])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_wrap_fills_the_header_sb_tensor_wrap_builds(shape, dtype):
    a = np.zeros(shape, dtype)
    fast, built = _lib.wrap(a), _lib.wrap_in_c(a)
    assert bytes(fast) == bytes(built), "wrap%s %s: %s vs %s" % (
        shape, np.dtype(dtype).name, bytes(fast).hex(), bytes(built).hex())


def test_wrap_refuses_what_sb_tensor_wrap_refuses():
    a = np.zeros((1,) * 9, np.float32)
    with pytest.raises(_lib.SamebitsError, match="sb_tensor_wrap"):
        _lib.wrap(a)


def test_constants_match(dump):
    for name, value in dump["const"].items():
        assert getattr(_lib, name) == value, "%s: Python %r, C %d" % (name, getattr(_lib, name), value)


def _python_sources():
    pats = [os.path.join(REPO, "python", "samebits", "**", "*.py"),
            os.path.join(REPO, "tests", "python", "*.py"), os.path.join(REPO, "examples", "*.py")]
    out = []
    for p in pats:
        out += glob.glob(p, recursive=True)
    return sorted(set(out))


def test_every_called_function_is_bound_and_in_the_table(dump):
    funcs = _functions(dump)
    called = {}
    for path in _python_sources():
        if os.path.abspath(path) == os.path.abspath(__file__):
            continue
        text = open(path).read()
        # lib.sb_x, and names in quotes that the library exports (call("sb_x"),
        # tables of names); a quoted "sb_conv2d" in an error pattern is not a call
        quoted = [n for n in re.findall(r"[\"'](sb_\w+)[\"']", text) if hasattr(_lib.lib, n)]
        for n in re.findall(r"\blib\.(sb_\w+)", text) + quoted:
            called.setdefault(n, os.path.relpath(path, REPO))
    assert len(called) > 40
    problems = ["%s (%s): not in _SIGS" % (n, p) for n, p in sorted(called.items())
                if n not in _lib._SIGS]
    problems += ["%s (%s): not in the op table" % (n, p) for n, p in sorted(called.items())
                 if n not in funcs]
    assert not problems, "\n".join(problems)


def test_table_spells_the_header_declarations(dump):
    decls = _all_header_decls()
    problems = []
    for name, f in _functions(dump).items():
        if name not in decls:
            problems.append("%s: in the table, declared in no header" % name)
            continue
        ret, params = decls[name]
        if (_norm(f["ret"]), _norm(f["params"])) != (ret, params):
            problems.append("%s: table %s %s, header %s %s" % (name, f["ret"], f["params"], ret, params))
    for header in OP_HEADERS:
        for name in _header_decls(header):
            if name not in dump["op"]:
                problems.append("%s (samebits/%s.h): no line in src/ops/op_table.h" % (name, header))
    assert not problems, "\n".join(problems)


def test_trace_names_are_the_autograd_wrappers(dump):
    # the names the wrappers (src/autograd/ops_*.c) hand to sb_ag_finish, the
    # record name (src/io/trace_writer.c also refuses any other at run time)
    recorded = set()
    for path in glob.glob(os.path.join(REPO, "src", "autograd", "ops_*.c")):
        text = open(path).read()
        recorded |= set(re.findall(r"sb_ag_finish\(\s*\w+,\s*\"(?:sb_ag_)?(\w+)\"", text))
        recorded |= set(re.findall(r"\"sb_ag_(\w+)\"", text))
    declared = {n[len("sb_ag_"):] for n in _header_decls("autograd") if n.startswith("sb_ag_")}
    traced = {f["trace"] for f in dump["op"].values() if f["trace"]}
    assert declared and len(recorded) > 10, "no sb_ag_* wrappers found"
    assert recorded <= traced, "record names without a table trace name: %s" % sorted(recorded - traced)
    assert traced == declared, "trace names in the table %s, autograd wrappers %s" % (
        sorted(traced), sorted(declared))


def _verify_sources():
    """The text of `samebits verify`'s sources (every src/cli file whose path
    says verify: the driver, the runners, the vector I/O)."""
    paths = [p for p in glob.glob(os.path.join(REPO, "src", "cli", "**", "*.c"), recursive=True)
             if "verify" in os.path.relpath(p, os.path.join(REPO, "src", "cli"))]
    assert paths, "no src/cli/*verify*.c"
    return "".join(open(p).read() for p in sorted(paths))


# `samebits verify` cases that replay whole pipelines rather than one op
PIPELINE_CASES = {"autograd", "train_lenet5", "train_fmnist"}


def test_every_op_has_verify_cases_or_a_reason(dump):
    cli = os.environ.get("SAMEBITS_CLI") or os.path.join(
        os.path.dirname(os.path.abspath(_lib.lib_path)), "samebits")
    assert os.path.exists(cli), "%s is missing: build it with `make cli`" % cli
    listed = subprocess.run([cli, "verify", "--list"], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    cases = {line.split(".")[0].split()[0] for line in listed if line.strip()}
    runners = _verify_sources()
    problems = []
    named = set()
    for name, f in dump["op"].items():
        v = f["verify"]
        if v.startswith("exempt"):
            if not re.fullmatch(r"exempt: \S.{8,}", v):
                problems.append("%s: exempt without a reason (%r)" % (name, v))
            continue
        named.add(v)
        if v not in cases:
            problems.append("%s: verify case %r is not in `samebits verify --list`" % (name, v))
        if not re.search(r"\b%s\b" % name, runners):
            problems.append("%s: the verify runners (src/cli/*verify*) never call it" % name)
    unclaimed = cases - named - PIPELINE_CASES
    if unclaimed:
        problems.append("verify cases no table op names: %s" % sorted(unclaimed))
    assert not problems, "\n".join(problems)


def test_output_shapes_come_from_the_shape_rules(dump):
    """Python, autograd and verify size their outputs with the table's shape
    rules instead of restating the formula."""
    rules = {f["shape"] for f in dump["op"].values() if f["shape"]}
    assert rules, "the table names no output-shape rule"

    def text(pattern):
        return "".join(open(p).read() for p in glob.glob(os.path.join(REPO, pattern),
                                                         recursive=True))
    users = {"python/samebits": text("python/samebits/**/*.py"),
             "src/autograd": text("src/autograd/ops_*.c"), "the verify runners": _verify_sources()}
    problems = ["%s never calls %s" % (where, rule) for rule in sorted(rules)
                for where, src in users.items() if not re.search(r"\b%s\b" % rule, src)]
    problems += ["%s is not in _SIGS" % rule for rule in rules if rule not in _lib._SIGS]
    assert not problems, "\n".join(problems)
