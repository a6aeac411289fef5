#!/bin/sh
# End-to-end checks of `samebits verify` and of traces: the built-in vectors
# pass and equal tests/vectors/ops.txt; a vector file with one corrupted
# expectation fails and names that op; two identical training runs give
# identical traces; a one-ulp injection in the middle of a run is found by
# trace-diff at exactly that step and op; damaged traces are refused cleanly.
# The training parts need Fashion-MNIST (skipped, not failed, without it:
# tests/test_trace.c covers the same ground on synthetic data).
# Prints "check_verify: N passed, N failed".
build=${1:-build}
bin="$build/samebits"
data=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "check_verify: FAILED: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }
quick=""
if [ -n "$SB_TEST_QUICK" ] && [ "$SB_TEST_QUICK" != 0 ]; then quick=--quick; fi

# 1. the built-in vectors pass here, and are the committed text file
"$bin" verify $quick > "$tmp/verify.out" 2>&1; rc=$?
check "samebits verify $quick passes" '[ $rc -eq 0 ] && grep -q "^verdict: PASS" "$tmp/verify.out" || { tail -20 "$tmp/verify.out" >&2; false; }'
check "no FAIL lines" '! grep -q "^FAIL" "$tmp/verify.out"'
check "per-op lines" '[ "$(grep -c "^PASS  " "$tmp/verify.out")" -gt 100 ]'
check "conv2d backward is covered" 'grep -q "^PASS  conv2d.backward_weight (x=2x4x9x7,w=6x2x3x3,stride=2x1" "$tmp/verify.out"'
check "embedded vectors equal tests/vectors/ops.txt (regenerate src/cli/verify_vectors.c with --emit-c)" \
    '"$bin" verify --print-vectors | cmp -s - "$here/vectors/ops.txt"'
"$bin" verify --emit-c "$here/vectors/ops.txt" > "$tmp/vv.c"
check "src/cli/verify_vectors.c is what --emit-c makes of tests/vectors/ops.txt" 'cmp -s "$tmp/vv.c" "$here/../src/cli/verify_vectors.c"'
if [ -z "$quick" ] && [ -f "$data/train-images-idx3-ubyte.gz" ]; then
    check "--generate (the reference path) reproduces tests/vectors/ops.txt" \
        '"$bin" verify --generate --data "$data" 2> "$tmp/err" | cmp -s - "$here/vectors/ops.txt" || { cat "$tmp/err" >&2; false; }'
fi
if [ -z "$quick" ]; then
    "$bin" verify --all-isa --quick > "$tmp/all.out" 2>&1; rc=$?
    check "verify --all-isa --quick: every ISA and thread count passes" '[ $rc -eq 0 ] && grep -q "^PASS  scalar, 1 thread" "$tmp/all.out" && ! grep -q FAIL "$tmp/all.out" || { cat "$tmp/all.out" >&2; false; }'
fi
check "--quick is a strict subset" '[ "$("$bin" verify --quick --list | wc -l)" -lt "$("$bin" verify --list | wc -l)" ]'

# 2. one corrupted expectation fails and is named
awk '$1 == "conv2d" && $2 == "17" { i = index($0, "backward_weight=") + 16; c = substr($0, i, 1);
        $0 = substr($0, 1, i - 1) (c == "0" ? "1" : "0") substr($0, i + 1) } { print }' \
    "$here/vectors/ops.txt" > "$tmp/corrupt.txt"
check "the corrupted copy differs in one line" '[ "$(diff "$here/vectors/ops.txt" "$tmp/corrupt.txt" | grep -c "^>")" -eq 1 ]'
"$bin" verify --quick --vectors "$tmp/corrupt.txt" > "$tmp/corrupt.out" 2>&1; rc=$?
check "corrupted vector: exit status 1" '[ $rc -eq 1 ]'
check "corrupted vector: the op is named FAIL" 'grep -q "^FAIL  conv2d.backward_weight (x=2x4x9x7" "$tmp/corrupt.out"'
check "corrupted vector: only that output fails" '[ "$(grep -c "^FAIL" "$tmp/corrupt.out")" -eq 1 ]'
check "corrupted vector: the verdict names it" 'grep -q "^verdict: FAIL (1 of [0-9]* failed: conv2d.backward_weight)$" "$tmp/corrupt.out"'
printf 'conv2d 1 quick x=2x3 forward=abc\n' > "$tmp/malformed.txt"
check "malformed vector file: exit 2 and a message" '"$bin" verify --vectors "$tmp/malformed.txt" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "malformed.txt:1" "$tmp/err"'
printf 'conv2d 1 quick x=2x3x4x4,w=2x3x9x9 forward=%064d\n' 0 > "$tmp/badshape.txt"
check "a vector whose op refuses its shapes fails cleanly" '"$bin" verify --vectors "$tmp/badshape.txt" > "$tmp/out" 2>&1; [ $? -eq 1 ] && grep -q "^FAIL  conv2d.forward" "$tmp/out"'
check "missing vector file: exit 2" '"$bin" verify --vectors "$tmp/nope.txt" > /dev/null 2>&1; [ $? -eq 2 ]'
# hostile vector files: refused with exit 2 and the line named, never a crash
# or an unbounded allocation (sizes are checked without overflow)
z=$(printf '%064d' 0)
hostile() { # NAME LINE NEEDLE: the file holding LINE exits 2 naming line 1 and NEEDLE
    h_name=$1; h_needle=$3
    printf '%s forward=%s\n' "$2" "$z" > "$tmp/$h_name.txt"
    timeout 60 "$bin" verify --vectors "$tmp/$h_name.txt" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check "hostile vector ($h_name): exit 2, names the line and '$h_needle'" \
        '[ $rc -eq 2 ] && grep -q "$h_name.txt:1: .*$h_needle" "$tmp/err" || { echo "rc=$rc"; cat "$tmp/err"; false; } >&2'
}
hostile ssum_overflow "ssum 1 quick n=4611686018427387904,inc=4" "n/inc"
hostile sgemm_overflow "sgemm 1 quick m=4294967296,n=1,k=4294967296" "m/n/k/pad"
hostile autograd_overflow "autograd 1 quick n=65536,c=65536,hw=4294967296" "n/c/hw"
hostile huge_output "conv2d 1 quick x=1x1x1x1,w=1x1x1x1,pad=4000x4000,bias=0" "more than 16777216 elements"
hostile huge_matmul "matmul 1 quick a=16777216x1,b=1x16777216" "more than 16777216 elements"
# the memory budget: a vector of ~2 MiB of tensors runs by default, is
# refused under --max-memory 1, and the message names the option
printf 'math 100 quick fn=expf,n=200000 scalar=%s\n' "$z" > "$tmp/budget.txt"
check "a 2 MiB vector runs under the default budget (a hash mismatch: exit 1)" \
    '"$bin" verify --vectors "$tmp/budget.txt" > "$tmp/out" 2> "$tmp/err"; [ $? -eq 1 ] && grep -q "^FAIL  math" "$tmp/out"'
check "--max-memory 1: the same vector is refused, exit 2, naming the option" \
    '"$bin" verify --max-memory 1 --vectors "$tmp/budget.txt" > "$tmp/out" 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "budget.txt:1: .*--max-memory 1 MiB" "$tmp/err"'
check "--max-memory 0 is a usage error" '"$bin" verify --max-memory 0 > /dev/null 2>&1; [ $? -eq 2 ]'
check "--max-memory x is a usage error" '"$bin" verify --max-memory x > /dev/null 2>&1; [ $? -eq 2 ]'
check "the built-in vectors run within --max-memory 2" '"$bin" verify --quick --max-memory 2 > /dev/null 2>&1'
# non-regular files are refused at once instead of blocking
mkfifo "$tmp/fifo"
check "a FIFO as vector file: exit 2 without blocking" \
    'timeout 10 "$bin" verify --vectors "$tmp/fifo" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "a FIFO (named pipe), not a regular file" "$tmp/err"'
check "a directory as vector file: exit 2" \
    '"$bin" verify --vectors "$tmp" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "a directory" "$tmp/err"'
check "a FIFO as trace: exit 2 without blocking" \
    'timeout 10 "$bin" trace-diff "$tmp/fifo" "$tmp/fifo" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "a FIFO (named pipe), not a regular file" "$tmp/err"'
check "trace-diff --max-record-mib 0: usage error" '"$bin" trace-diff --max-record-mib 0 a b > /dev/null 2>&1; [ $? -eq 2 ]'

# 3. traces of training runs
if [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
    echo "check_verify: no Fashion-MNIST at $data: trace checks skipped (tests/test_trace.c still runs)" >&2
else
    run() { "$bin" train --data "$data" --epochs 1 --limit-batches 3 --batch-size 20 "$@" 2> "$tmp/err"; }
    run --trace "$tmp/a.trace" > "$tmp/a.out" || bad "traced run failed: $(cat "$tmp/err")"
    run --trace "$tmp/b.trace" > "$tmp/b.out" || bad "second traced run failed"
    run > "$tmp/plain.out" || bad "untraced run failed"
    check "tracing changes no result" 'cmp -s "$tmp/a.out" "$tmp/plain.out"'
    check "no temp file left behind" '[ -z "$(ls "$tmp" | grep "\.tmp\.")" ]'
    "$bin" trace-diff "$tmp/a.trace" "$tmp/b.trace" > "$tmp/diff.out"; rc=$?
    check "identical runs: exit 0" '[ $rc -eq 0 ]'
    check "identical runs: message" 'grep -q "^traces identical: [0-9]* ops$" "$tmp/diff.out"'
    check "--max-record-mib 1 reads LeNet-5 records (batch 20)" '"$bin" trace-diff --max-record-mib 1 "$tmp/a.trace" "$tmp/b.trace" > /dev/null'
    "$bin" trace-diff --list "$tmp/a.trace" > "$tmp/list.out"
    check "45 ops per LeNet-5 step (12 forward, 23 backward, 10 parameters)" '[ "$(grep -c "^step 1 " "$tmp/list.out")" -eq 45 ]'
    # inject one ulp in the middle: step 1, op 9 (the second linear layer's output)
    want=$(sed -n 's/^step 1 op 9 \([^ ]*\) \([^ ]*\) .*/\1), shape \2/p' "$tmp/list.out")
    SB_TRACE_INJECT=1:9 run --trace "$tmp/c.trace" > "$tmp/c.out" || bad "injected run failed"
    check "the injected change propagates to the trained model" '! cmp -s "$tmp/a.out" "$tmp/c.out"'
    "$bin" trace-diff "$tmp/a.trace" "$tmp/c.trace" > "$tmp/diff.out"; rc=$?
    check "injected run: exit 1" '[ $rc -eq 1 ]'
    check "injected run: names step 1, op 9 ($want)" '[ -n "$want" ] && grep -q "^first difference: step 1, op 9 ($want" "$tmp/diff.out" || { cat "$tmp/diff.out" >&2; false; }'
    check "injected run: the element, in hex and decimal" 'grep -q "^  first differing element: flat index [0-9]*, index \[[0-9, ]*\]$" "$tmp/diff.out" && grep -q "^  A: 0x[0-9a-f]\{8\}  [-0-9.e+]*$" "$tmp/diff.out" && grep -q "^  B: 0x" "$tmp/diff.out"'
    check "injected run: one ulp apart" 'a=$(sed -n "s/^  A: 0x\([0-9a-f]*\) .*/\1/p" "$tmp/diff.out"); b=$(sed -n "s/^  B: 0x\([0-9a-f]*\) .*/\1/p" "$tmp/diff.out"); [ $((0x$a ^ 0x$b)) -eq 1 ]'
    SB_TRACE_INJECT=2:0 run --trace "$tmp/h.trace" --trace-hashes-only > /dev/null || bad "hashes-only run failed"
    "$bin" trace-diff "$tmp/a.trace" "$tmp/h.trace" > "$tmp/diff.out"; rc=$?
    check "hashes-only trace: first difference still found" '[ $rc -eq 1 ] && grep -q "^first difference: step 2, op 0 (conv2d" "$tmp/diff.out" && grep -q "hashes-only" "$tmp/diff.out"'
    check "bad SB_TRACE_INJECT refused" 'SB_TRACE_INJECT=x run --trace "$tmp/x.trace" > /dev/null; [ $? -ne 0 ] && grep -q "SB_TRACE_INJECT" "$tmp/err" && [ ! -e "$tmp/x.trace" ]'

    # 4. damaged traces: exit 2 with a clear message, never a false "difference"
    size=$(wc -c < "$tmp/a.trace")
    cp "$tmp/a.trace" "$tmp/flip.trace"
    printf '\377' | dd of="$tmp/flip.trace" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
    "$bin" trace-diff "$tmp/a.trace" "$tmp/flip.trace" > /dev/null 2> "$tmp/err"; rc=$?
    check "corrupted trace: exit 2" '[ $rc -eq 2 ]'
    check "corrupted trace: message names the file" 'grep -q "flip.trace" "$tmp/err"'
    head -c $((size - 10)) "$tmp/a.trace" > "$tmp/trunc.trace"
    "$bin" trace-diff "$tmp/trunc.trace" "$tmp/a.trace" > /dev/null 2> "$tmp/err"; rc=$?
    check "truncated trace: exit 2, says truncated" '[ $rc -eq 2 ] && grep -q "truncated" "$tmp/err"'
    check "not a trace: exit 2" '"$bin" trace-diff "$here/vectors/ops.txt" "$tmp/a.trace" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "bad magic" "$tmp/err"'
    check "missing trace: exit 2" '"$bin" trace-diff "$tmp/none.trace" "$tmp/a.trace" > /dev/null 2>&1; [ $? -eq 2 ]'
fi
check "trace-diff usage: exit 2" '"$bin" trace-diff > /dev/null 2>&1; [ $? -eq 2 ]'

echo "check_verify: $pass passed, $fail failed"
[ $fail -eq 0 ]
