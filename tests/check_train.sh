#!/bin/sh
# End-to-end checks of `samebits train`: the short golden run, bitwise-exact
# resume from a checkpoint, and clean refusals of bad data, checkpoints and
# options. Needs the Fashion-MNIST IDX files (Debian: dataset-fashion-mnist).
# Prints "check_train: N passed, N failed".
build=${1:-build}
bin="$build/samebits"
data=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "check_train: FAILED: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

if [ ! -f "$data/train-images-idx3-ubyte.gz" ] && [ ! -f "$data/train-images-idx3-ubyte" ]; then
    echo "check_train: no data at $data (install dataset-fashion-mnist); failing" >&2
    echo "check_train: 0 passed, 1 failed"; exit 1
fi
# Quick (sanitizer) runs train 2 batches per epoch and skip the golden.
if [ -n "$SB_TEST_QUICK" ] && [ "$SB_TEST_QUICK" != 0 ]; then limit=2; else limit=20; fi

# 1. the short golden run
"$bin" train --data "$data" --limit-batches $limit > "$tmp/straight.out" 2> "$tmp/err" || bad "train exited non-zero: $(cat "$tmp/err")"
check "four lines" '[ "$(wc -l < "$tmp/straight.out")" -eq 4 ]'
if [ $limit = 20 ]; then
    check "short golden run matches tests/golden/lenet5-limit20.txt" \
        'cmp -s "$tmp/straight.out" "$here/golden/lenet5-limit20.txt" || { diff "$here/golden/lenet5-limit20.txt" "$tmp/straight.out" >&2; false; }'
fi

# 1b. the same run on the mirror device (the CPU kernels over device memory,
# every batch uploaded, every read through a download) prints the same bits
"$bin" train --data "$data" --limit-batches $limit --device mirror > "$tmp/mirror.out" 2> "$tmp/err" || bad "train --device mirror exited non-zero: $(cat "$tmp/err")"
check "the mirror device run is bitwise identical to the CPU run" 'cmp -s "$tmp/straight.out" "$tmp/mirror.out"'
check "an unknown device is refused with exit 2" '"$bin" train --data "$data" --device tpu > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "cpu, mirror, cuda or opencl" "$tmp/err"'
check "--save off the CPU is refused before training" '"$bin" train --data "$data" --device mirror --save "$tmp/never.safetensors" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "need --device cpu" "$tmp/err" && [ ! -e "$tmp/never.safetensors" ]'

# 2. resume: 1 epoch + save, a new process resumes and trains epoch 2
"$bin" train --data "$data" --limit-batches $limit --epochs 1 --save "$tmp/ck.safetensors" > "$tmp/epoch1.out" 2>&1 || bad "train --save failed"
check "checkpoint written" '[ -s "$tmp/ck.safetensors" ]'
check "no temp file left behind" '[ -z "$(ls "$tmp" | grep tmp)" ]'
"$bin" train --data "$data" --limit-batches $limit --epochs 2 --resume "$tmp/ck.safetensors" > "$tmp/resumed.out" 2> "$tmp/err" || bad "resume failed: $(cat "$tmp/err")"
check "resumed run is bitwise identical to the straight run" 'cmp -s "$tmp/straight.out" "$tmp/resumed.out"'

# hash and eval read the checkpoint back
want=$(sed -n 's/^Hash of the trained model: //p' "$tmp/epoch1.out")
check "samebits hash prints the trained model's hash" '[ -n "$want" ] && "$bin" hash "$tmp/ck.safetensors" | grep -q "^Hash of the model: $want$"'
check "samebits eval scores the checkpoint" '"$bin" eval "$tmp/ck.safetensors" --data "$data" > "$tmp/eval.out" && grep -q "^Test accuracy of the model on the 10000 test images: 0\.[0-9]*$" "$tmp/eval.out" && grep -q "$(grep "accuracy" "$tmp/epoch1.out")" "$tmp/eval.out"'

# 2b. micro-batches (contract section 17): a step of 4 micro-batches of 25
# prints the same four lines at 1, 2 and 3 threads; resuming needs the same
# --micro-batch and is then bitwise exact; one micro-batch per step is the
# whole-batch run.
mlimit=$((limit / 2))
for t in 1 2 3; do
    "$bin" train --data "$data" --limit-batches $mlimit --micro-batch 25 --threads $t > "$tmp/micro$t.out" 2> "$tmp/err" || bad "--micro-batch 25 --threads $t failed: $(cat "$tmp/err")"
done
check "micro-batch run prints four lines" '[ "$(wc -l < "$tmp/micro1.out")" -eq 4 ]'
check "micro-batch run: same lines at threads 1 and 2" 'cmp -s "$tmp/micro1.out" "$tmp/micro2.out"'
check "micro-batch run: same lines at threads 1 and 3" 'cmp -s "$tmp/micro1.out" "$tmp/micro3.out"'
"$bin" train --data "$data" --limit-batches $mlimit --micro-batch 100 > "$tmp/micro100.out" 2>/dev/null
"$bin" train --data "$data" --limit-batches $mlimit > "$tmp/whole.out" 2>/dev/null
check "--micro-batch 100 (= batch size) is the whole-batch run" 'cmp -s "$tmp/micro100.out" "$tmp/whole.out"'
"$bin" train --data "$data" --limit-batches $mlimit --micro-batch 25 --epochs 1 --save "$tmp/micro.safetensors" > /dev/null 2>&1 || bad "micro-batch save failed"
check "checkpoint records micro_batch 25" 'head -c 4096 "$tmp/micro.safetensors" | grep -a -q "\"micro_batch\":\"25\""'
check "resume with another --micro-batch refused" '! "$bin" train --data "$data" --limit-batches $mlimit --micro-batch 50 --resume "$tmp/micro.safetensors" > /dev/null 2> "$tmp/err" && grep -q "micro-batch 25" "$tmp/err"'
check "resume without --micro-batch refused" '! "$bin" train --data "$data" --limit-batches $mlimit --resume "$tmp/micro.safetensors" > /dev/null 2> "$tmp/err" && grep -q "micro-batch" "$tmp/err"'
"$bin" train --data "$data" --limit-batches $mlimit --micro-batch 25 --resume "$tmp/micro.safetensors" > "$tmp/microres.out" 2> "$tmp/err" || bad "micro-batch resume failed: $(cat "$tmp/err")"
check "micro-batch resume is bitwise identical to the straight run" 'cmp -s "$tmp/micro1.out" "$tmp/microres.out"'

# 3. corrupted and truncated checkpoints are refused, clearly
cp "$tmp/ck.safetensors" "$tmp/corrupt.safetensors"
size=$(wc -c < "$tmp/corrupt.safetensors")
printf '\377' | dd of="$tmp/corrupt.safetensors" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
check "corrupted checkpoint refused" '! "$bin" train --data "$data" --limit-batches 1 --epochs 2 --resume "$tmp/corrupt.safetensors" > /dev/null 2> "$tmp/err"'
check "corruption message" 'grep -q "checksum" "$tmp/err"'
head -c $((size / 2)) "$tmp/ck.safetensors" > "$tmp/trunc.safetensors"
check "truncated checkpoint refused" '! "$bin" train --data "$data" --limit-batches 1 --epochs 2 --resume "$tmp/trunc.safetensors" > /dev/null 2> "$tmp/err"'
check "truncation message names the file" 'grep -q "trunc.safetensors" "$tmp/err"'
check "mismatched settings refused" '! "$bin" train --data "$data" --limit-batches 1 --epochs 2 --seed 5 --resume "$tmp/ck.safetensors" > /dev/null 2> "$tmp/err" && grep -q "seed" "$tmp/err"'

# 4. a failed save leaves the previous checkpoint untouched, and a --save
# that cannot be written is refused before training (nothing on stdout:
# not even the initial hash line)
mkdir "$tmp/ro"; cp "$tmp/ck.safetensors" "$tmp/ro/ck.safetensors"; chmod a-w "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
    "$bin" train --data "$data" --limit-batches 1 --epochs 1 --save "$tmp/ro/ck.safetensors" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check "save into a read-only directory fails before training (exit $rc)" '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "checking --save" "$tmp/err"'
    check "previous checkpoint unchanged" 'cmp -s "$tmp/ck.safetensors" "$tmp/ro/ck.safetensors"'
fi
"$bin" train --data "$data" --limit-batches 1 --epochs 1 --save "$tmp/no/such/dir/ck.safetensors" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "save into a missing directory fails before training (exit $rc)" '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "no/such/dir" "$tmp/err"'
"$bin" train --data "$data" --limit-batches 1 --epochs 1 --save "$tmp/ro" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "save onto a directory fails before training (exit $rc)" '[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q "is a directory" "$tmp/err"'

# 4b. the seed is a full u64: 2^64-1 is stored as such (not 2^63-1), shuffles
# and initialises differently from 2^63-1, and resumes only with itself.
# The same save shows stale-temp clean-up: a killed save's temp file (its
# pid no longer exists) is removed; a live writer's (this shell's pid) is not.
sh -c 'exit 0' & dead=$!; wait $dead
printf 'partial' > "$tmp/seed.safetensors.tmp.$dead"
printf 'partial' > "$tmp/seed.safetensors.tmp.$$"
"$bin" train --data "$data" --limit-batches 1 --epochs 1 --seed 18446744073709551615 --save "$tmp/seed.safetensors" > "$tmp/s64.out" 2> "$tmp/err" || bad "seed 2^64-1 failed: $(cat "$tmp/err")"
check "dead writer's temp file removed" '[ ! -e "$tmp/seed.safetensors.tmp.$dead" ]'
check "live writer's temp file kept" '[ -e "$tmp/seed.safetensors.tmp.$$" ]'
rm -f "$tmp/seed.safetensors.tmp.$$"
check "checkpoint metadata holds seed 18446744073709551615" 'head -c 4096 "$tmp/seed.safetensors" | grep -a -q "\"seed\":\"18446744073709551615\""'
"$bin" train --data "$data" --limit-batches 1 --epochs 1 --seed 9223372036854775807 > "$tmp/s63.out" 2>/dev/null
check "seeds 2^64-1 and 2^63-1 give different initial models" '[ "$(head -n 1 "$tmp/s64.out")" != "$(head -n 1 "$tmp/s63.out")" ]'
check "resume with seed 2^64-1" '"$bin" train --data "$data" --limit-batches 1 --epochs 2 --seed 18446744073709551615 --resume "$tmp/seed.safetensors" > /dev/null 2>&1'
check "resume with seed 2^63-1 refused" '! "$bin" train --data "$data" --limit-batches 1 --epochs 2 --seed 9223372036854775807 --resume "$tmp/seed.safetensors" > /dev/null 2> "$tmp/err" && grep -q "18446744073709551615" "$tmp/err"'

# 5. bad data and options
mkdir "$tmp/data"
check "missing data refused" '! "$bin" train --data "$tmp/data" > /dev/null 2> "$tmp/err" && grep -q "$tmp/data" "$tmp/err"'
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    gzip -dc "$data/$f.gz" > "$tmp/data/$f"
done
head -c 5000 "$tmp/data/t10k-images-idx3-ubyte" > "$tmp/data/t" && mv "$tmp/data/t" "$tmp/data/t10k-images-idx3-ubyte"
check "truncated data refused" '! "$bin" train --data "$tmp/data" > /dev/null 2> "$tmp/err" && grep -q "truncated" "$tmp/err"'
# Every option value is checked before anything runs: exit 2 (a usage
# error), a message naming the option, nothing on stdout. Each of these was
# once clamped or wrapped silently (a batch size that trained nothing, a
# seed cut to 2^63-1, an lr of 0 in float32, 4294967297 threads as 1,
# epochs that never end).
bad_option() { # $1: expected text in the message; the rest: train's options
    want=$1; shift
    "$bin" train --data "$data" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check "train $* exits 2 (got $rc)" '[ $rc -eq 2 ]'
    check "train $*: message names $want" 'grep -q -e "$want" "$tmp/err" || { cat "$tmp/err" >&2; false; }'
    check "train $*: nothing on stdout" '[ ! -s "$tmp/out" ]'
}
bad_option "--batch-size" --batch-size 0
bad_option "--batch-size = 99999999999999999999 is out of range" --batch-size 99999999999999999999
bad_option "--batch-size" --batch-size 9223372036854775807
bad_option "--seed = 18446744073709551616 is out of range" --seed 18446744073709551616
bad_option "--seed" --seed -1
bad_option "--lr = 1e-50 is rounded to 0 in float32" --lr 1e-50
bad_option "--lr = 1e-40 is subnormal in float32" --lr 1e-40
bad_option "--lr" --lr nan
bad_option "--lr" --lr inf
bad_option "--lr" --lr 0
bad_option "--lr" --lr 0.01x
bad_option "--threads = 4294967297 is out of range 1..256" --threads 4294967297
bad_option "--threads" --threads 0
bad_option "--epochs = 99999999999999999999 is out of range 1..1000000" --epochs 99999999999999999999
bad_option "--epochs" --epochs 1000001
bad_option "--epochs" --epochs " 3"
bad_option "--limit-batches" --limit-batches 1x
bad_option "--limit-batches" --limit-batches
bad_option "unknown option '--bogus'" --bogus
bad_option "--micro-batch = 30 must divide --batch-size = 100" --micro-batch 30
bad_option "--micro-batch" --micro-batch 0
bad_option "--micro-batch" --micro-batch 101
bad_option "--save needs a non-empty value" --save ""
"$bin" hash "$tmp/ck.safetensors" --data x > /dev/null 2> "$tmp/err"; rc=$?
check "hash takes no --data (exit $rc)" '[ $rc -eq 2 ] && grep -q "unknown option" "$tmp/err"'

# 6. a path that is not a regular file is refused at once, never read (a
# FIFO would block forever); `timeout` turns a hang into exit 124.
mkfifo "$tmp/fifo"
timeout 20 "$bin" train --data "$data" --limit-batches 1 --epochs 2 --resume "$tmp/fifo" > /dev/null 2> "$tmp/err"; rc=$?
check "--resume FIFO refused with exit 1 (got $rc)" '[ $rc -eq 1 ] && grep -q "fifo.* is a FIFO (named pipe), not a regular file" "$tmp/err"'
mkdir "$tmp/fifodata"
for f in train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do cp "$tmp/data/$f" "$tmp/fifodata/$f"; done
mkfifo "$tmp/fifodata/train-images-idx3-ubyte"
timeout 20 "$bin" train --data "$tmp/fifodata" > /dev/null 2> "$tmp/err"; rc=$?
check "FIFO as IDX data refused with exit 1 (got $rc)" '[ $rc -eq 1 ] && grep -q "is a FIFO" "$tmp/err"'
timeout 20 "$bin" hash "$tmp" > /dev/null 2> "$tmp/err"; rc=$?
check "directory as checkpoint refused (got $rc)" '[ $rc -eq 1 ] && grep -q "is a directory" "$tmp/err"'
timeout 20 "$bin" hash-file "$tmp/fifo" > /dev/null 2> "$tmp/err"; rc=$?
check "hash-file of a FIFO refused (got $rc)" '[ $rc -eq 1 ] && grep -q "is a FIFO" "$tmp/err"'

echo "check_train: $pass passed, $fail failed"
[ $fail -eq 0 ]
