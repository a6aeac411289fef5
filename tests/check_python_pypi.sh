#!/bin/sh
# The Python checks of tests/check_python.sh (the pytest suite and the LeNet-5
# example against the golden lines) again, under the project's PyPI test
# environment: the pinned PyTorch 2.x, torchvision, numpy and pytest of
# python/requirements-test.txt that `make deps` installs (scripts/python-venv.sh).
# check_python.sh covers Debian's PyTorch 1.13, the oldest supported; the
# same golden lines under both show the bits do not depend on the PyTorch
# version.
# The sanitizer build runs its Python checks under Debian's interpreter only
# (check_python.sh); here it reports 0 checks.
# Prints "check_python_pypi: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
case "$build" in
*asan*) echo "check_python_pypi: sanitizer build: its Python checks run under /usr/bin/python3 (check_python)"
        echo "check_python_pypi: 0 passed, 0 failed"; exit 0 ;;
esac
if ! py=$("$here/../scripts/python-venv.sh" python); then
    echo "check_python_pypi: FAILED: the PyPI test environment is missing (make deps)" >&2
    echo "check_python_pypi: 0 passed, 1 failed"; exit 1
fi
PYTHON=$py CHECK_NAME=check_python_pypi exec "$here/check_python.sh" "$build"
