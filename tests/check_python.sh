#!/bin/sh
# The Python package (python/samebits): its pytest suite (tests/python/),
# then examples/lenet_training.py --limit-batches 20, whose four lines must be
# tests/golden/lenet5-limit20.txt and what `samebits train --limit-batches 20`
# prints live, then examples/resnet18_fashion.py at 1 and 3 threads against
# tests/golden/example-resnet18_fashion.txt. Runs the system Python (/usr/bin/python3, which has Debian's
# python3-torch 1.13, -numpy and -pytest; override with $PYTHON) against
# $build/libsamebits.so. tests/check_python_pypi.sh runs this again under the
# project's PyPI test environment (PyTorch 2.x, scripts/python-venv.sh) with
# CHECK_NAME=check_python_pypi.
# A sanitizer build (build-asan: make test-asan) runs the Python files that
# hand C raw buffers hostile input (ASAN_FILES below) with the compiler's
# libasan preloaded into Python (leak checking off: Python and PyTorch keep
# allocations until exit), so a read or write past a buffer aborts the run.
# Prints "check_python: tested with ..." (the interpreter, its torch and numpy
# versions; tests/run.sh shows the line) and "check_python: N passed, N failed".
build=${1:-build}
name=${CHECK_NAME:-check_python}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
data=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
lib="$build/libsamebits.so"
case "$lib" in /*) ;; *) lib="$(pwd)/$lib" ;; esac
ASAN_FILES="test_optim_state.py test_c_types.py test_bad_inputs.py"

sanitized=0
if case "$build" in *asan*) true ;; *) false ;; esac || \
   { command -v ldd > /dev/null && ldd "$lib" 2>/dev/null | grep -q 'libasan'; }; then
    sanitized=1
fi
if [ -n "$PYTHON" ]; then py=$PYTHON
elif [ -x /usr/bin/python3 ]; then py=/usr/bin/python3
else py=python3; fi
if ! "$py" -c "import torch, numpy, pytest" 2>/dev/null; then
    echo "$name: $py lacks torch, numpy or pytest (Debian: python3-torch python3-numpy python3-pytest; make deps)" >&2
    echo "$name: 0 passed, 1 failed"; exit 1
fi
"$py" -c "import sys, torch, numpy; print('$name: tested with %s: Python %s, torch %s, numpy %s' % (sys.executable, sys.version.split()[0], torch.__version__, numpy.__version__))"
if [ ! -f "$lib" ]; then
    echo "$name: no $lib (make lib)" >&2
    echo "$name: 0 passed, 1 failed"; exit 1
fi
export SAMEBITS_LIB="$lib" SAMEBITS_CLI="$build/samebits" SB_TEST_DATA="$data" PYTHONDONTWRITEBYTECODE=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# a hang (e.g. a thread-pool deadlock) must fail the check, not stall make test;
# the limit is far above the suite's time on an idle machine (minutes) so that
# a loaded machine does not fail it
if command -v timeout > /dev/null; then to="timeout 1800"; else to=; fi
pass=0; fail=0

# 1. the pytest suite (a sanitizer build: ASAN_FILES under libasan): its counts join ours
if [ $sanitized = 1 ]; then
    asan_rt=$(${CC:-cc} -print-file-name=libasan.so 2>/dev/null)
    case "$asan_rt" in
        /*) ;;
        *) echo "$name: FAILED: ${CC:-cc} -print-file-name=libasan.so found no ASan runtime to preload" >&2
           echo "$name: 0 passed, 1 failed"; exit 1 ;;
    esac
    targets=""
    for f in $ASAN_FILES; do targets="$targets $here/python/$f"; done
    # shellcheck disable=SC2086
    LD_PRELOAD="$asan_rt" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
        $to "$py" -m pytest -q -p no:cacheprovider $targets > "$tmp/pytest.out" 2>&1
    rc=$?
else
    $to "$py" -m pytest -q -p no:cacheprovider "$here/python" > "$tmp/pytest.out" 2>&1
    rc=$?
fi
summary=$(grep -E '^=*.*[0-9]+ (passed|failed)' "$tmp/pytest.out" | tail -n 1)
p=$(printf '%s' "$summary" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) passed.*/\1/p; s/^\([0-9][0-9]*\) passed.*/\1/p' | head -n 1)
f=$(printf '%s' "$summary" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) failed.*/\1/p; s/^\([0-9][0-9]*\) failed.*/\1/p' | head -n 1)
e=$(printf '%s' "$summary" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) error.*/\1/p' | head -n 1)
pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0} + ${e:-0}))
if [ $rc -ne 0 ]; then
    tail -n 60 "$tmp/pytest.out" >&2
    [ "${f:-0}" = 0 ] && [ "${e:-0}" = 0 ] && fail=$((fail + 1))
fi

# 2. the LeNet-5 example against the golden lines and the live CLI (in parallel);
#    the plain build runs it (under ASan it would only be slower)
if [ $sanitized = 1 ]; then
    :
elif [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
    echo "$name: FAILED: no data at $data (install dataset-fashion-mnist)" >&2
    fail=$((fail + 1))
else
    $to "$build/samebits" train --data "$data" --limit-batches 20 > "$tmp/cli.out" 2> /dev/null &
    cli_pid=$!
    if $to "$py" "$repo/examples/lenet_training.py" --data "$data" --limit-batches 20 \
        > "$tmp/py.out" 2> "$tmp/py.err"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "$name: FAILED: lenet_training.py exited non-zero:" >&2; cat "$tmp/py.err" >&2; fi
    wait $cli_pid
    if cmp -s "$tmp/py.out" "$here/golden/lenet5-limit20.txt"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "$name: FAILED: lenet_training.py --limit-batches 20 differs from tests/golden/lenet5-limit20.txt:" >&2
         diff "$here/golden/lenet5-limit20.txt" "$tmp/py.out" >&2; fi
    if [ -s "$tmp/cli.out" ] && cmp -s "$tmp/py.out" "$tmp/cli.out"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "$name: FAILED: lenet_training.py and samebits train --limit-batches 20 differ:" >&2
         diff "$tmp/cli.out" "$tmp/py.out" >&2; fi
    # the example's own report: the converted model is thread-count invariant
    if grep -q "converted samebits model: bitwise identical" "$tmp/py.err"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "$name: FAILED: the converted model was not thread-count invariant:" >&2; cat "$tmp/py.err" >&2; fi

    # 3. torchvision's resnet18 on Fashion-MNIST (examples/resnet18_fashion.py)
    #    at 1 and 3 threads, in parallel: both must print the golden lines.
    #    The other ISA levels of resnet18 are in `make test-zoo` (the portable
    #    ones take minutes per run here).
    if "$py" -c "import torchvision" 2>/dev/null; then
        resnet="$repo/examples/resnet18_fashion.py --data $data --epochs 1 --limit-batches 4 --batch-size 32 --lr 0.001 --test-limit 200"
        SB_NUM_THREADS=1 $to "$py" $resnet > "$tmp/r1.out" 2> "$tmp/r1.err" &
        r1_pid=$!
        SB_NUM_THREADS=3 $to "$py" $resnet > "$tmp/r3.out" 2> "$tmp/r3.err"
        wait $r1_pid
        for t in 1 3; do
            if cmp -s "$tmp/r$t.out" "$here/golden/example-resnet18_fashion.txt"; then pass=$((pass + 1))
            else fail=$((fail + 1)); echo "$name: FAILED: resnet18_fashion.py at $t threads differs from tests/golden/example-resnet18_fashion.txt:" >&2
                 diff "$here/golden/example-resnet18_fashion.txt" "$tmp/r$t.out" >&2; tail -n 20 "$tmp/r$t.err" >&2; fi
        done
    else
        fail=$((fail + 1)); echo "$name: FAILED: $py has no torchvision (Debian: python3-torchvision; make deps)" >&2
    fi
fi

echo "$name: $pass passed, $fail failed"
[ $fail -eq 0 ]
