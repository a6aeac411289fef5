#!/bin/sh
# `pip install .` from the repository root, as a PyTorch user installs
# samebits: into a throwaway virtual environment of /usr/bin/python3 (seeing
# Debian's numpy through --system-site-packages), with no network
# (--no-index, --no-build-isolation: the system's pip and setuptools). The
# build step (setup.py) runs `make lib` in $build, so the library under test
# is the one shipped; then, from another directory and without SAMEBITS_LIB,
# the installed package must load the library bundled inside it and run an op.
# The sanitizer build is skipped (its library needs libasan preloaded).
# Prints "check_pip_install: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
case "$build" in
*asan*) echo "check_pip_install: sanitizer build: skipped (the plain build checks pip install)"
        echo "check_pip_install: 0 passed, 0 failed"; exit 0 ;;
esac
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
if /usr/bin/python3 -m venv --without-pip --system-site-packages "$tmp/venv" &&
   (cd "$repo" && SAMEBITS_BUILD="$build" "$tmp/venv/bin/python" -m pip install --quiet \
        --no-index --no-build-isolation --disable-pip-version-check . ) > "$tmp/pip.out" 2>&1; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "check_pip_install: FAILED: pip install . did not succeed:" >&2
    tail -n 30 "$tmp/pip.out" >&2
fi
# the installed package, from elsewhere: its own library, one op, one hash
mkdir "$tmp/elsewhere"
if (cd "$tmp/elsewhere" && env -u SAMEBITS_LIB PYTHONDONTWRITEBYTECODE=1 "$tmp/venv/bin/python" -c '
import os, sys
import numpy as np
import samebits
pkg = os.path.dirname(os.path.abspath(samebits.__file__))
assert pkg.startswith(sys.prefix), "samebits imported from %s, not the install" % pkg
assert samebits.lib_path == os.path.join(pkg, "libsamebits.so"), \
    "loaded %s, not the bundled library" % samebits.lib_path
x = np.array([1.5, -2.0, 0.25], dtype=np.float32)
y = samebits.ops.add(x, x)
assert y.tolist() == [3.0, -4.0, 0.5], y
') 2> "$tmp/run.err"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "check_pip_install: FAILED: the installed package did not run:" >&2
    cat "$tmp/run.err" >&2
fi
echo "check_pip_install: $pass passed, $fail failed"
[ $fail -eq 0 ]
