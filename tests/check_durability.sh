#!/bin/sh
# Checkpoint durability under SIGKILL: starts a process that saves checkpoints
# to one path in a loop (build/tests/test_checkpoint_durability --save-loop),
# kills it with SIGKILL at a random moment, and checks that the file on disk
# either does not exist yet or loads and equals one of the saved states
# (--verify). After all kills, one more save to the same path must leave no
# *.tmp.* file behind (a dead writer's temp files are removed by the next save).
#
#   tests/check_durability.sh [BUILD] [KILLS]
#
# KILLS defaults to 10 (the `make test` quick run); docs/FORMATS.md records a
# full run (KILLS=200). Prints "kills K, damaged D, stray temp files S" and
# "check_durability: N passed, N failed".
build=${1:-build}
kills=${2:-${SB_DURABILITY_KILLS:-10}}
name=check_durability
bin="$build/tests/test_checkpoint_durability"
[ -x "$bin" ] || { echo "$name: $bin missing (make tests)"; echo "$name: 0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ck="$tmp/ck.safetensors"
passed=0; failed=0; damaged=0; landed=0; inside=0

# A random delay in seconds, 0.000 .. 0.599 (awk: no $RANDOM in POSIX sh).
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
delays=$(awk -v n="$kills" -v s="$seed" 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%.3f\n", rand() * 0.6 }')

for d in $delays; do
    "$bin" --save-loop "$ck" 2> "$tmp/saver.err" &
    pid=$!
    sleep "$d"
    kill -KILL "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    [ -e "$ck.tmp.$pid" ] && inside=$((inside + 1)) # killed inside a save: its temp file remains
    if [ -s "$tmp/saver.err" ]; then
        echo "$name: the saver failed by itself: $(cat "$tmp/saver.err")"; failed=$((failed + 1))
    fi
    if [ -e "$ck" ]; then
        landed=$((landed + 1))
        if ! "$bin" --verify "$ck" 2> "$tmp/verify.err"; then
            damaged=$((damaged + 1))
            echo "$name: after a kill at ${d}s: $(cat "$tmp/verify.err")"
            cp "$ck" "$tmp/damaged.$damaged" 2> /dev/null
        fi
    fi
done
strays_after_kills=$(ls "$tmp" | grep -c '\.tmp\.')

# One clean save (a short-lived saver, killed only after it wrote a new file).
before=$(ls -l --time-style=+%s.%N "$ck" 2> /dev/null)
"$bin" --save-loop "$ck" 2> "$tmp/saver.err" &
pid=$!
for _ in $(seq 1 100); do
    sleep 0.05
    now=$(ls -l --time-style=+%s.%N "$ck" 2> /dev/null)
    [ -n "$now" ] && [ "$now" != "$before" ] && break
done
kill -KILL "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
# The saver may have been killed inside its next save: that temp is its own,
# so count only temp files of the processes killed before the clean save.
strays=$(ls "$tmp" | grep '\.tmp\.' | grep -vc "\.tmp\.$pid\$")

if [ "$damaged" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
if [ "$strays" -eq 0 ]; then passed=$((passed + 1)); else
    echo "$name: $strays temp files of killed writers remain after the next save: $(ls "$tmp" | grep '\.tmp\.' | tr '\n' ' ')"
    failed=$((failed + 1))
fi
echo "$name: kills $kills ($inside inside a save), checkpoint present after $landed, damaged $damaged, stray temp files after the kills $strays_after_kills, after the next save $strays"
echo "$name: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
