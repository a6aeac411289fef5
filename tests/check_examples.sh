#!/bin/sh
# The tutorial example trains to the recorded bits (its last line).
# Prints "check_examples: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
got=$("$build/examples/train_mlp" | tail -n 1)
if [ "$got" = "$(cat "$here/golden/example-train_mlp.txt")" ]; then
    echo "check_examples: 1 passed, 0 failed"
else
    echo "check_examples: train_mlp printed '$got', expected '$(cat "$here/golden/example-train_mlp.txt")'" >&2
    echo "check_examples: 0 passed, 1 failed"; exit 1
fi
