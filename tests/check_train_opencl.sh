#!/bin/sh
# `samebits train --device opencl` against the CPU's golden lines: LeNet-5
# trained for 4 batches per epoch (2 epochs) on the OpenCL device, every
# kernel of the training step on the device, evaluated on the first 1000
# test images, must print tests/golden/lenet5-limit4-test1000.txt byte for
# byte (the portability matrix's golden: the same four lines on every
# machine). Quick (sanitizer) runs train 1 batch per epoch and compare with
# the CPU's run of the same settings. Runs when the build has the OpenCL
# backend ($build/tests/test_opencl exists); then a machine without an
# OpenCL platform FAILS here, loudly (CI installs PoCL). Needs the
# Fashion-MNIST IDX files (Debian: dataset-fashion-mnist).
# Prints "check_train_opencl: N passed, N failed".
build=${1:-build}
bin="$build/samebits"
data=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "check_train_opencl: FAILED: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

if [ ! -x "$build/tests/test_opencl" ]; then
    echo "check_train_opencl: this build has no OpenCL backend (SB_OPENCL=0 or no <CL/cl.h>): nothing to run"
    echo "check_train_opencl: 0 passed, 0 failed"; exit 0
fi
if [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
    echo "check_train_opencl: no data at $data (install dataset-fashion-mnist); failing" >&2
    echo "check_train_opencl: 0 passed, 1 failed"; exit 1
fi
"$here/../scripts/fashion_subset.sh" "$data" "$tmp/data" 1000 || bad "could not cut the test set to 1000 images"

# Under LeakSanitizer (the sanitizer build): an OpenCL driver that compiles
# kernels in-process (PoCL with its LLVM) keeps allocations until exit.
printf 'leak:libpocl\nleak:libLLVM\nleak:libOpenCL\n' > "$tmp/lsan.supp"
export LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

if [ -n "$SB_TEST_QUICK" ] && [ "$SB_TEST_QUICK" != 0 ]; then limit=1; else limit=4; fi
"$bin" train --data "$tmp/data" --limit-batches $limit > "$tmp/cpu.out" 2> "$tmp/err" || bad "the CPU run exited non-zero: $(cat "$tmp/err")"
if ! "$bin" train --data "$tmp/data" --limit-batches $limit --device opencl > "$tmp/opencl.out" 2> "$tmp/err"; then
    bad "samebits train --device opencl exited non-zero: $(cat "$tmp/err")"
    echo "*** check_train_opencl: no usable OpenCL device? Install PoCL (pocl-opencl-icd, or make deps)." >&2
fi
check "the opencl run prints four lines" '[ "$(wc -l < "$tmp/opencl.out")" -eq 4 ]'
check "the opencl run prints the CPU run's lines" 'cmp -s "$tmp/cpu.out" "$tmp/opencl.out" || { diff "$tmp/cpu.out" "$tmp/opencl.out" >&2; false; }'
if [ $limit = 4 ]; then
    check "the opencl run matches tests/golden/lenet5-limit4-test1000.txt" \
        'cmp -s "$tmp/opencl.out" "$here/golden/lenet5-limit4-test1000.txt" || { diff "$here/golden/lenet5-limit4-test1000.txt" "$tmp/opencl.out" >&2; false; }'
fi
echo "check_train_opencl: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
