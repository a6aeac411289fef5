#!/bin/sh
# The layering of src/ (docs/ARCHITECTURE.md, "Layers"): a lower layer never
# depends on a higher one.
#
#   0 core   1 math, hash, rng   2 ref   3 cpu, cuda, opencl, gpu, backend
#   4 ops   5 autograd   6 nn, optim   7 train, io, dist   8 cli, mpi
#
# Three checks, each over the whole tree:
#   include  - every #include "dir/file" in src/ names a layer <= its own;
#   link     - no object of a lower layer calls a function defined in a
#              higher one (nm over BUILD/obj/src; catches calls through the
#              public headers too); the compiled op table (src/ops/op_table.c),
#              which takes the address of every function it lists, is exempt;
#   declare  - no header of a lower layer declares a function that a higher
#              layer defines (the declaration belongs with its definition).
# Known violations are listed in tests/layers_allowlist.txt, one per line
# with the branch that removes it; an allowlisted line that no longer occurs
# fails too, so the list only shrinks. Prints "check_layers: N passed, N failed".
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
allow="$here/layers_allowlist.txt"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

layer_of() {
    case "$1" in
        core) echo 0 ;; math|hash|rng) echo 1 ;; ref) echo 2 ;;
        cpu|cuda|opencl|gpu|backend) echo 3 ;; ops) echo 4 ;; autograd) echo 5 ;;
        nn|optim) echo 6 ;; train|io|dist) echo 7 ;; cli|mpi) echo 8 ;; *) echo "" ;;
    esac
}

: > "$tmp/found"
# 0. every directory of src/ has a layer
for d in "$root"/src/*/; do
    d=$(basename "$d")
    if [ -z "$(layer_of "$d")" ]; then
        echo "check_layers: FAILED: src/$d has no layer: add it to tests/check_layers.sh and docs/ARCHITECTURE.md" >&2
        fail=$((fail + 1))
    else pass=$((pass + 1)); fi
done

# 1. include lines: "include src/FILE -> INCLUDED"
cd "$root"
for f in src/*/*.c src/*/*.h src/*/*.cu src/*/*.cuh; do
    [ -f "$f" ] || continue
    dir=$(echo "$f" | cut -d/ -f2); mine=$(layer_of "$dir")
    sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        case "$inc" in */*) ;; *) continue ;; esac
        their=$(layer_of "${inc%%/*}")
        [ -n "$their" ] && [ "$their" -gt "$mine" ] && echo "include $f -> $inc"
    done
done >> "$tmp/found"

# 2./3. symbols, from the objects this build made
objs=$(find "$build/obj/src" -name '*.o' 2>/dev/null | sort)
if [ -z "$objs" ]; then
    echo "check_layers: FAILED: no objects under $build/obj/src (build first)" >&2
    fail=$((fail + 1))
else
    # "SYMBOL SRCFILE" for every function an object defines
    for o in $objs; do
        src=${o#"$build/obj/"}; src=${src%.o}
        for ext in c cu; do [ -f "$src.$ext" ] && src="$src.$ext" && break; done
        [ -f "$src" ] || continue # a stale object whose source is gone
        nm -g --defined-only "$o" 2>/dev/null | awk -v s="$src" '$2 == "T" { print $3, s }'
    done | sort -u > "$tmp/defs"
    for o in $objs; do
        src=${o#"$build/obj/"}; src=${src%.o}
        for ext in c cu; do [ -f "$src.$ext" ] && src="$src.$ext" && break; done
        [ -f "$src" ] || continue # a stale object whose source is gone
        # The compiled op table takes the address of every public function
        # it lists, from every layer, to tie the table to the declarations
        # (src/ops/op_table.c); that is its purpose, not a dependency.
        [ "$src" = src/ops/op_table.c ] && continue
        mine=$(layer_of "$(echo "$src" | cut -d/ -f2)")
        nm -u "$o" 2>/dev/null | awk '{ print $2 }' | grep '^sb_' | sort -u > "$tmp/undef"
        join "$tmp/undef" "$tmp/defs" | while read -r sym def; do
            their=$(layer_of "$(echo "$def" | cut -d/ -f2)")
            [ "$their" -gt "$mine" ] && echo "link $src -> $sym ($def)"
        done
    done >> "$tmp/found"
    # declarations: identifiers followed by "(" on header lines that declare
    # (not macros, not comments), looked up among the definitions
    for h in src/*/*.h; do
        dir=$(echo "$h" | cut -d/ -f2); mine=$(layer_of "$dir")
        sed -e 's://.*$::' -e '/^[ \t]*#/d' -e '/^[ \t]*\*/d' -e '/^[ \t]*\/\*/d' "$h" |
            grep -o '\bsb_[a-z0-9_]*[ \t]*(' | sed 's/[ \t]*($//' | sort -u |
            join - "$tmp/defs" | while read -r sym def; do
                their=$(layer_of "$(echo "$def" | cut -d/ -f2)")
                [ "$their" -gt "$mine" ] && echo "declare $h -> $sym ($def)"
            done
    done >> "$tmp/found"
fi

sort -u "$tmp/found" > "$tmp/found.s"
# allowlist lines: "KIND FILE -> WHAT ... # removed by BRANCH"
sed -e 's/[ \t]*#.*$//' -e '/^[ \t]*$/d' "$allow" | sort -u > "$tmp/allowed"
comm -23 "$tmp/found.s" "$tmp/allowed" > "$tmp/new"
# an allowlisted link of an object this build did not make (the CUDA backend
# without nvcc) cannot be seen, so it is not "gone"
comm -13 "$tmp/found.s" "$tmp/allowed" | while read -r kind file rest; do
    if [ "$kind" = link ] && [ ! -f "$build/obj/${file%.*}.o" ]; then continue; fi
    echo "$kind $file $rest"
done > "$tmp/gone"
known=$(comm -12 "$tmp/found.s" "$tmp/allowed" | wc -l)
if [ -s "$tmp/new" ]; then
    echo "check_layers: FAILED: a lower layer depends on a higher one (see the layer table in tests/check_layers.sh):" >&2
    sed 's/^/  /' "$tmp/new" >&2
    fail=$((fail + $(wc -l < "$tmp/new")))
else pass=$((pass + 1)); fi
if [ -s "$tmp/gone" ]; then
    echo "check_layers: FAILED: fixed, so remove from tests/layers_allowlist.txt:" >&2
    sed 's/^/  /' "$tmp/gone" >&2
    fail=$((fail + $(wc -l < "$tmp/gone")))
else pass=$((pass + 1)); fi
echo "check_layers: $known known violation(s) left in tests/layers_allowlist.txt" >&2
echo "check_layers: $pass passed, $fail failed"
[ $fail -eq 0 ]
