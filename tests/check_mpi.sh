#!/bin/sh
# End-to-end checks of data-parallel training over MPI (build/samebits-mpi,
# contract section 17): the same four lines from one process with
# micro-batch accumulation and from mpirun with 1, 2 and 4 ranks; a
# checkpoint written by 4 ranks resumed on 2 equals the uninterrupted run;
# a mismatched setting and a killed rank each stop every rank with an error
# and leave the last good checkpoint as it was.
# Skipped (0 passed, 0 failed) when samebits-mpi was not built (no mpicc).
# Prints "check_mpi: N passed, N failed".
build=${1:-build}
bin="$build/samebits"; mpibin="$build/samebits-mpi"
data=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "check_mpi: FAILED: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

if [ ! -x "$mpibin" ] || ! command -v mpirun > /dev/null 2>&1; then
    echo "check_mpi: samebits-mpi or mpirun missing (MPI not built): skipped"
    echo "check_mpi: 0 passed, 0 failed"; exit 0
fi
if [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
    echo "check_mpi: no data at $data (install dataset-fashion-mnist); failing" >&2
    echo "check_mpi: 0 passed, 1 failed"; exit 1
fi
# mpirun refuses root unless told; 4 ranks on a 2-core machine need
# --oversubscribe. Open MPI's own allocations are not ours to leak-check.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpirun_n() { n=$1; shift; timeout 300 mpirun --oversubscribe -n "$n" "$@"; }

# A small data set (plain IDX, the first N images), so that 4 ranks on 2
# cores start quickly: 1600 training and 200 test images.
subset() { # name count magic-dims header-bytes row-bytes
    src="$data/$1"; n=$2
    be=$(printf '\\%03o\\%03o\\%03o\\%03o' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))
    { printf "$3$be$4"
      if [ -f "$src" ]; then cat "$src"; else gzip -dc "$src.gz"; fi | tail -c +$(( $5 + 1 )) | head -c $(( n * $6 ))
    } > "$tmp/data/$1"
}
mkdir "$tmp/data"
subset train-images-idx3-ubyte 1600 '\000\000\010\003' '\000\000\000\034\000\000\000\034' 16 784
subset train-labels-idx1-ubyte 1600 '\000\000\010\001' '' 8 1
subset t10k-images-idx3-ubyte 200 '\000\000\010\003' '\000\000\000\034\000\000\000\034' 16 784
subset t10k-labels-idx1-ubyte 200 '\000\000\010\001' '' 8 1
d="$tmp/data"
# 2 epochs of 3 steps of 100 samples, each step 4 micro-batches of 25.
run="train --data $d --limit-batches 3 --micro-batch 25 --threads 1"

"$bin" $run > "$tmp/one.out" 2> "$tmp/err" || bad "one process failed: $(cat "$tmp/err")"
check "one process prints four lines" '[ "$(wc -l < "$tmp/one.out")" -eq 4 ]'
for r in 1 2 4; do
    mpirun_n $r "$mpibin" $run > "$tmp/r$r.out" 2> "$tmp/err" || bad "mpirun -n $r failed: $(cat "$tmp/err")"
    check "mpirun -n $r prints the four lines of one process with accumulation" \
        'cmp -s "$tmp/one.out" "$tmp/r$r.out" || { diff "$tmp/one.out" "$tmp/r$r.out" >&2; false; }'
done
mpirun_n 3 "$mpibin" $run > /dev/null 2> "$tmp/err"; rc=$?
check "3 ranks for 4 micro-batches refused (exit $rc)" '[ $rc -ne 0 ] && grep -q "cannot be shared by 3 processes" "$tmp/err"'

# elastic resume: epoch 1 on 4 ranks, epoch 2 on 2 ranks
mpirun_n 4 "$mpibin" $run --epochs 1 --save "$tmp/ck.safetensors" > /dev/null 2> "$tmp/err" || bad "4-rank save failed: $(cat "$tmp/err")"
check "rank 0 wrote the checkpoint, no temp file left" '[ -s "$tmp/ck.safetensors" ] && [ -z "$(ls "$tmp" | grep tmp)" ]'
mpirun_n 2 "$mpibin" $run --resume "$tmp/ck.safetensors" > "$tmp/resumed.out" 2> "$tmp/err" || bad "2-rank resume failed: $(cat "$tmp/err")"
check "4-rank checkpoint resumed on 2 ranks equals the uninterrupted run" 'cmp -s "$tmp/one.out" "$tmp/resumed.out"'
cp "$tmp/ck.safetensors" "$tmp/good.safetensors"

# a mismatched setting (rank 1 has another seed): every rank stops with
# the message, exit non-zero, the checkpoint untouched
mpirun_n 1 "$mpibin" $run --seed 1 --save "$tmp/ck.safetensors" : -n 1 "$mpibin" $run --seed 2 --save "$tmp/ck.safetensors" \
    > "$tmp/out" 2> "$tmp/err"; rc=$?
check "mismatched seed: exit non-zero (got $rc)" '[ $rc -ne 0 ]'
check "mismatched seed: rank 0 says why" 'grep -q "rank 0: starting: the build, settings or data of rank 1 differs from rank 0" "$tmp/err" || { cat "$tmp/err" >&2; false; }'
check "mismatched seed: rank 1 says why" 'grep -q "rank 1: starting: the build, settings or data of rank 1 differs" "$tmp/err"'
check "mismatched seed: nothing printed on stdout" '[ ! -s "$tmp/out" ]'
check "mismatched seed: checkpoint untouched" 'cmp -s "$tmp/ck.safetensors" "$tmp/good.safetensors"'

# a rank that dies mid-run (SIGKILL at its 2nd gradient sum)
SB_TEST_MPI_KILL=1:2 mpirun_n 2 "$mpibin" $run --save "$tmp/ck.safetensors" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "killed rank: exit non-zero (got $rc)" '[ $rc -ne 0 ] && [ $rc -ne 124 ]'
check "killed rank: mpirun names it" 'grep -q "rank 1" "$tmp/err" && grep -qi "signal 9\|killed" "$tmp/err" || { cat "$tmp/err" >&2; false; }'
check "killed rank: no results printed" '! grep -q "trained model" "$tmp/out"'
check "killed rank: checkpoint untouched, no temp file" 'cmp -s "$tmp/ck.safetensors" "$tmp/good.safetensors" && [ -z "$(ls "$tmp" | grep "ck.safetensors.tmp")" ]'

echo "check_mpi: $pass passed, $fail failed"
[ $fail -eq 0 ]
