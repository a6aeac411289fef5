#!/bin/sh
# The shared library exports exactly the public API: every function declared
# in include/samebits/*.h (their declarations carry SB_API) and nothing else
# (internal functions such as sb_ref_*, sb_cpu_* and sb_fail stay hidden by
# -fvisibility=hidden). Fails in both directions: a symbol exported but not
# declared, and a function declared but not exported (e.g. a declaration
# missing SB_API). The CUDA header's functions count only when the CUDA
# backend is in that library. Names beginning with "_" belong to the
# toolchain (_init, _fini, sanitizer runtime) and are not ours.
# Prints "check_exports: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
include="$(dirname "$here")/include/samebits"
lib="$build/libsamebits.so"
if [ ! -f "$lib" ]; then
    echo "check_exports: no $lib (make lib)" >&2
    echo "check_exports: 0 passed, 1 failed"; exit 1
fi
if ! command -v nm > /dev/null; then
    echo "check_exports: nm not found (binutils)" >&2
    echo "check_exports: 0 passed, 1 failed"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Exported: defined dynamic symbols, not the toolchain's.
if ! nm -D --defined-only "$lib" > "$tmp/nm"; then
    echo "check_exports: nm -D failed on $lib" >&2
    echo "check_exports: 0 passed, 1 failed"; exit 1
fi
awk 'NF >= 3 { print $3 }' "$tmp/nm" | sed 's/@.*//' | grep -v '^_' | sort -u > "$tmp/exported"

# Declared: a function declaration in the public headers starts at column 0
# with its return type, with or without SB_API (so that a missing SB_API
# shows up as "declared but not exported").
headers=$(ls "$include"/*.h)
if ! grep -q '^sb_cuda_' "$tmp/exported"; then
    headers=$(printf '%s\n' $headers | grep -v '/cuda\.h$')
fi
# shellcheck disable=SC2086
grep -hE '^(SB_API )?((const|unsigned|struct|enum) )*[A-Za-z_][A-Za-z_0-9]*[ *]+sb_[a-z0-9_]+\(' \
    $headers | sed -E 's/^[^(]*[ *](sb_[a-z0-9_]+)\(.*/\1/' | sort -u > "$tmp/declared"

comm -23 "$tmp/exported" "$tmp/declared" > "$tmp/undeclared"
comm -13 "$tmp/exported" "$tmp/declared" > "$tmp/unexported"
ok=$(comm -12 "$tmp/exported" "$tmp/declared" | wc -l)
bad=0
while read -r s; do
    echo "check_exports: $s is exported by $lib but declared in no public header (an internal function needs no SB_API)" >&2
    bad=$((bad + 1))
done < "$tmp/undeclared"
while read -r s; do
    echo "check_exports: $s is declared in include/samebits/ but not exported by $lib (its declaration needs SB_API, or it is not defined)" >&2
    bad=$((bad + 1))
done < "$tmp/unexported"
# The same rule in the text: a declaration without SB_API would be hidden as
# soon as the library is rebuilt.
# shellcheck disable=SC2086
grep -nE '^((const|unsigned|struct|enum) )*[A-Za-z_][A-Za-z_0-9]*[ *]+sb_[a-z0-9_]+\(' \
    $(ls "$include"/*.h) | grep -v ':typedef ' > "$tmp/unmarked"
while read -r s; do
    echo "check_exports: declaration without SB_API: $s" >&2
    bad=$((bad + 1))
done < "$tmp/unmarked"
if [ "$ok" -eq 0 ]; then
    echo "check_exports: no public function found exported (header parsing broken?)" >&2
    bad=$((bad + 1))
fi
echo "check_exports: $((ok)) passed, $bad failed"
[ "$bad" -eq 0 ]
