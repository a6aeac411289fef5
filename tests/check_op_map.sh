#!/bin/sh
# docs/ARCHITECTURE.md's op map ("Where each op lives") against the op table
# and the tree: every op of src/ops/op_table.h has exactly one row, every row
# is an op of the table, every file path the map names exists, and every
# reference and autograd wrapper it names is defined in src/. Regenerate the
# map with tools/op_map.py after adding an op.
# Prints "check_op_map: N passed, N failed".
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root" || exit 1
doc=docs/ARCHITECTURE.md
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
bad() { echo "check_op_map: FAILED: $*" >&2; fail=$((fail + 1)); }

sed -n '/^    OP(sb_/s/^    OP(\(sb_[a-z0-9_]*\),.*/\1/p' src/ops/op_table.h | sort > "$tmp/ops"
sed -n '/<!-- op map begins/,/<!-- op map ends/p' "$doc" > "$tmp/map"
sed -n 's/^| `\(sb_[a-z0-9_]*\)` |.*/\1/p' "$tmp/map" | sort > "$tmp/rows"
if [ ! -s "$tmp/ops" ] || [ ! -s "$tmp/rows" ]; then
    bad "no ops in src/ops/op_table.h or no op map between the markers in $doc"
    echo "check_op_map: $pass passed, $fail failed"; exit 1
fi
for op in $(comm -23 "$tmp/ops" "$tmp/rows"); do bad "$op is in the op table but has no row in $doc (tools/op_map.py)"; done
for op in $(comm -13 "$tmp/ops" "$tmp/rows"); do bad "$doc has a row for $op, which is not in the op table"; done
for op in $(uniq -d "$tmp/rows"); do bad "$op has more than one row in $doc"; done
[ $fail -eq 0 ] && pass=$((pass + 1))

# every path the map names exists
grep -o '`[a-z_]*/[A-Za-z0-9_./-]*`' "$tmp/map" | tr -d '`' | sort -u > "$tmp/paths"
while read -r p; do
    if [ -e "$p" ]; then pass=$((pass + 1)); else bad "$doc names $p, which does not exist"; fi
done < "$tmp/paths"

# every reference and autograd wrapper it names is defined in src/
grep -o '`sb_\(ref_\|ag_\)[a-z0-9_]*`' "$tmp/map" | tr -d '`' | sort -u > "$tmp/fns"
while read -r f; do
    if grep -rqE "^[a-z_].*[ *]$f\(" src; then pass=$((pass + 1)); else bad "$doc names $f, which src/ does not define"; fi
done < "$tmp/fns"

echo "check_op_map: $pass passed, $fail failed"
[ $fail -eq 0 ]
