#!/bin/sh
# Runs every test binary in BUILD/tests (and BUILD/tests/cuda, which skip
# without a GPU) and every tests/check_*.sh, and prints the grand total as
# "N passed, N failed", and the "<check>: tested with ..." lines that say
# which interpreter a check used. Exits non-zero if any check or binary failed.
build=${1:-build}
passed=0; failed=0; broken=""
here=$(dirname "$0")
for t in "$build"/tests/test_* "$build"/tests/cuda/test_* "$here"/check_*.sh; do
    [ -x "$t" ] || continue
    case "$t" in *.sh) out=$("$t" "$build" 2>&1); rc=$? ;; *) out=$("$t" 2>&1); rc=$? ;; esac
    line=$(printf '%s\n' "$out" | grep -E '^[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ $rc -ne 0 ] || [ -z "$line" ]; then
        printf '%s\n' "$out" | tail -n 40
        broken="$broken $(basename "$t")"
    fi
    # which interpreter and library versions a check ran with (check_python*)
    printf '%s\n' "$out" | grep -E '^[a-z0-9_]+: tested with '
    [ -n "$line" ] && echo "$line"
    p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*passed, \([0-9]*\) failed/\1/p')
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ]; then failed=$((failed + 1)); fi
done
[ -n "$broken" ] && echo "failing binaries:$broken"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ -z "$broken" ]
