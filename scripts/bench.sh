#!/bin/sh
# Runs every benchmark of a build: BUILD/bench/bench_* in name order, then
# every bench/*.py (which find the build through SB_BUILD) under the Python of
# the project's PyPI test environment, so that the PyTorch peer is the pinned
# PyTorch 2.x (scripts/python-venv.sh; `make deps` creates it), or under
# Debian's /usr/bin/python3 (PyTorch 1.13) when that environment is missing.
# Prints everything; exits non-zero if a benchmark failed to run (a benchmark
# that finds a result differing from the reference fails too).
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
SB_BUILD=$(cd "$build" && pwd)
export SB_BUILD
status=0
echo "== make bench: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "$build"/bench/bench_*; do
    [ -x "$b" ] || continue
    echo "== $(basename "$b")"
    "$b" || { echo "!! $(basename "$b") failed (exit $?)"; status=1; }
done
py=$("$here/scripts/python-venv.sh" python 2>/dev/null) || {
    py=/usr/bin/python3
    echo "== no PyPI test environment (make deps): the Python benchmarks compare with Debian's PyTorch"
}
for p in "$here"/bench/*.py; do
    [ -f "$p" ] || continue
    echo "== $(basename "$p")"
    "$py" "$p" || { echo "!! $(basename "$p") failed (exit $?)"; status=1; }
done
exit $status
