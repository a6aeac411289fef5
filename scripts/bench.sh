#!/bin/sh
# Runs every benchmark of a build: BUILD/bench/bench_* in name order, then
# every bench/*.py with the system python3 (which finds the build through
# SB_BUILD). Prints everything; exits non-zero if a benchmark failed to run
# (a benchmark that finds a result differing from the reference fails too).
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
for p in "$here"/bench/*.py; do
    [ -f "$p" ] || continue
    echo "== $(basename "$p")"
    /usr/bin/python3 "$p" || { echo "!! $(basename "$p") failed (exit $?)"; status=1; }
done
exit $status
