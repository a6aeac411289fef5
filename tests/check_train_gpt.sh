#!/bin/sh
# End-to-end checks of the GPT commands: `samebits train --model gpt` prints
# the golden lines (tests/golden/gpt-default.txt) at threads 1 and 3 and at
# two instruction-set levels; `samebits generate` gives the same text and
# logits with its KV cache as recomputing every prefix (--no-cache), from a
# checkpoint and from a seed; bad options, prompts and files are refused.
# Needs the corpus of Debian's fortunes-min. Prints "check_train_gpt: N passed, N failed".
build=${1:-build}
bin="$build/samebits"
corpus=${SB_TEST_CORPUS:-/usr/share/games/fortunes/literature}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "check_train_gpt: FAILED: $*" >&2; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

if [ ! -f "$corpus" ]; then
    echo "check_train_gpt: no corpus at $corpus (install fortunes-min); failing" >&2
    echo "check_train_gpt: 0 passed, 1 failed"; exit 1
fi
# Quick (sanitizer) runs train 3 steps and skip the golden.
if [ -n "$SB_TEST_QUICK" ] && [ "$SB_TEST_QUICK" != 0 ]; then steps="--steps 3"; else steps=""; fi
# A second level below this machine's best: avx2 under avx512, sse2 under
# avx2, else scalar. Two more steps run at the scalar level.
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then second=avx2
elif grep -q avx2 /proc/cpuinfo 2>/dev/null; then second=sse2
else second=scalar; fi

# 1. the golden run at threads 1 and 3 at the best level, and at 3 threads
# at the second level
runs="1:best 3:best 3:$second"
for run in $runs; do
    t=${run%%:*}; level=${run#*:}
    if [ "$level" = best ]; then isa=""; else isa=$level; fi
    SB_ISA=$isa "$bin" train --model gpt --corpus "$corpus" --threads $t $steps > "$tmp/run-$t-$level.out" 2> "$tmp/err" \
        || bad "train --model gpt --threads $t (SB_ISA=$level) exited non-zero: $(cat "$tmp/err")"
done
check "five lines (corpus and four hashes)" '[ "$(wc -l < "$tmp/run-1-best.out")" -eq 5 ]'
check "the corpus line names its sha256" 'grep -q "^Corpus: [0-9]* bytes, [0-9]* symbols, sha256 [0-9a-f]\{64\}$" "$tmp/run-1-best.out"'
for run in $runs; do
    t=${run%%:*}; level=${run#*:}
    check "threads $t, level $level gives the threads 1 lines" 'cmp -s "$tmp/run-1-best.out" "$tmp/run-$t-$level.out"'
done
# 1b. two steps at the scalar level (3 threads) and the best (1 thread)
"$bin" train --model gpt --corpus "$corpus" --steps 2 --threads 1 > "$tmp/short-best.out" 2>/dev/null
SB_ISA=scalar "$bin" train --model gpt --corpus "$corpus" --steps 2 --threads 3 > "$tmp/short-scalar.out" 2>/dev/null
check "two steps: scalar with 3 threads = the best level with 1" '[ -s "$tmp/short-best.out" ] && cmp -s "$tmp/short-best.out" "$tmp/short-scalar.out"'
if [ -z "$steps" ]; then
    check "the run matches tests/golden/gpt-default.txt" \
        'cmp -s "$tmp/run-1-best.out" "$here/golden/gpt-default.txt" || { diff "$here/golden/gpt-default.txt" "$tmp/run-1-best.out" >&2; false; }'
fi
check "another seed gives another initial model" \
    '"$bin" train --model gpt --corpus "$corpus" --steps 1 --seed 1 2>/dev/null | sed -n 2p > "$tmp/s1"; [ -s "$tmp/s1" ] && ! grep -q -F -f "$tmp/s1" "$tmp/run-1-best.out"'
check "--model lenet5 is the LeNet-5 run's option parser" \
    '"$bin" train --model lenet5 --bogus > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "unknown option" "$tmp/err"'

# 2. generation: the cache gives the recomputed prefix's bits
"$bin" train --model gpt --corpus "$corpus" --steps 3 --save "$tmp/gpt.safetensors" > /dev/null 2>&1 || bad "train --save failed"
gen() { "$bin" generate --corpus "$corpus" --prompt "The " --tokens 24 "$@"; }
gen --checkpoint "$tmp/gpt.safetensors" --top-k 10 --sample-seed 3 > "$tmp/g1" 2> "$tmp/err" || bad "generate failed: $(cat "$tmp/err")"
gen --checkpoint "$tmp/gpt.safetensors" --top-k 10 --sample-seed 3 --no-cache --threads 3 > "$tmp/g2" 2>/dev/null
SB_ISA=scalar gen --checkpoint "$tmp/gpt.safetensors" --top-k 10 --sample-seed 3 --threads 1 > "$tmp/g3" 2>/dev/null
check "generate prints the text and the logits' hash" '[ "$(wc -l < "$tmp/g1")" -ge 2 ] && head -c 4 "$tmp/g1" | grep -q "^The " && tail -n 1 "$tmp/g1" | grep -q "^Hash of the logits: [0-9a-f]\{64\}$"'
check "generate with the cache = recomputing every prefix" 'cmp -s "$tmp/g1" "$tmp/g2"'
check "generate at SB_ISA=scalar, 1 thread: the same" 'cmp -s "$tmp/g1" "$tmp/g3"'
gen --seed 5 --temperature 0.7 --top-p 0.9 > "$tmp/s1" 2>/dev/null; gen --seed 5 --temperature 0.7 --top-p 0.9 --no-cache > "$tmp/s2" 2>/dev/null
check "generate from a seed-initialised model, top-p: cache = no cache" '[ -s "$tmp/s1" ] && cmp -s "$tmp/s1" "$tmp/s2"'
gen --checkpoint "$tmp/gpt.safetensors" --top-k 10 --sample-seed 4 > "$tmp/g4" 2>/dev/null
check "another --sample-seed draws another text" '! cmp -s "$tmp/g1" "$tmp/g4"'

# 3. refusals: exit 2 for bad options, 1 for bad files; nothing on stdout
refuse() { # $1 exit code, $2 expected text, rest: the command's arguments
    code=$1; want=$2; shift 2
    "$bin" "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    check "$* exits $code (got $rc)" '[ $rc -eq $code ]'
    check "$*: message names $want" 'grep -q -e "$want" "$tmp/err" || { cat "$tmp/err" >&2; false; }'
    check "$*: nothing on stdout" '[ ! -s "$tmp/out" ]'
}
refuse 2 "must be lenet5 or gpt" train --model transformer
refuse 2 "--model needs a value" train --model
refuse 2 "--steps" train --model gpt --corpus "$corpus" --steps 0
refuse 2 "--heads" train --model gpt --corpus "$corpus" --heads x
refuse 1 "d_model" train --model gpt --corpus "$corpus" --d-model 10 --heads 4
refuse 1 "no/such/file" train --model gpt --corpus "$tmp/no/such/file"
: > "$tmp/empty"
refuse 1 "is empty" train --model gpt --corpus "$tmp/empty"
printf 'tiny corpus' > "$tmp/tiny"
refuse 2 "too small" train --model gpt --corpus "$tmp/tiny"
refuse 2 "--prompt" generate --corpus "$corpus"
refuse 2 "not in the corpus" generate --corpus "$corpus" --prompt "$(printf 'caf\303\251')"
refuse 2 "pass the context" generate --corpus "$corpus" --prompt "The " --tokens 61
refuse 2 "--top-p" generate --corpus "$corpus" --prompt "The " --top-p 0
refuse 2 "--temperature" generate --corpus "$corpus" --prompt "The " --temperature -1
refuse 1 "no/such/checkpoint" generate --corpus "$corpus" --prompt "The " --checkpoint "$tmp/no/such/checkpoint"
refuse 1 "d-model\|shape\|tok_emb" generate --corpus "$corpus" --prompt "The " --checkpoint "$tmp/gpt.safetensors" --d-model 32

echo "check_train_gpt: $pass passed, $fail failed"
[ $fail -eq 0 ]
