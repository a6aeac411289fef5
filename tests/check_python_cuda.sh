#!/bin/sh
# The zero-copy path for PyTorch CUDA tensors against the library with the
# CUDA backend ($build/libsamebits_cuda.so, `make cuda-lib`; built by `make
# all` where nvcc is on the PATH): tests/python/test_device_tensors.py and
# test_errors.py load it as SAMEBITS_LIB. Without a GPU this proves that the
# library loads into Python next to PyTorch, that the CPU and mirror paths
# keep their bits with it, and that a CUDA tensor is refused with the
# driver's reason; with a GPU the CUDA tests run too. A build without the
# CUDA backend (no nvcc, the sanitizer build) has nothing to check.
# Prints "check_python_cuda: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
lib="$build/libsamebits_cuda.so"
case "$lib" in /*) ;; *) lib="$(pwd)/$lib" ;; esac
if [ ! -f "$lib" ]; then
    echo "check_python_cuda: skipped: no $lib (this build has no CUDA backend)"
    echo "check_python_cuda: 0 passed, 0 failed"; exit 0
fi
py=${PYTHON:-/usr/bin/python3}
out=$(SAMEBITS_LIB="$lib" PYTHONPATH="$(dirname "$here")/python" PYTHONDONTWRITEBYTECODE=1 \
      timeout 900 "$py" -m pytest -q -p no:cacheprovider \
      "$here/python/test_device_tensors.py" "$here/python/test_errors.py" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 25
summary=$(printf '%s\n' "$out" | tail -n 1)
pass=$(printf '%s\n' "$summary" | grep -oE '[0-9]+ passed' | cut -d' ' -f1)
fail=$(printf '%s\n' "$summary" | grep -oE '[0-9]+ failed' | cut -d' ' -f1)
fail=${fail:-0}
if [ $rc -ne 0 ] && [ "$fail" = 0 ]; then fail=1; fi
echo "check_python_cuda: ${pass:-0} passed, $fail failed"
[ $rc -eq 0 ]
