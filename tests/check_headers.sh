#!/bin/sh
# The public headers: the umbrella include/samebits.h includes every
# include/samebits/*.h (except cuda.h, which needs the optional CUDA archive,
# docs/GPU.md), and each header compiles on its own, first thing in a file,
# as C11 and (when a C++ compiler is present) as C++, so none relies on
# another being included before it.
# Prints "check_headers: N passed, N failed".
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "check_headers: $*" >&2; fail=$((fail + 1)); }

for h in "$repo"/include/samebits/*.h; do
    name=samebits/$(basename "$h")
    case "$name" in samebits/cuda.h|samebits/export.h) ;; *)
        if grep -q "^#include \"$name\"" "$repo/include/samebits.h"; then ok
        else bad "include/samebits.h does not include $name"; fi ;;
    esac
    printf '#include "%s"\nint sb_header_check_(void);\nint sb_header_check_(void) { return 0; }\n' \
        "$name" > "$tmp/h.c"
    if "$cc" -std=c11 -Wall -Wextra -Werror -Wstrict-prototypes -I"$repo/include" \
        -c "$tmp/h.c" -o "$tmp/h.o" 2> "$tmp/err"; then ok
    else bad "$name does not compile on its own as C11:"; cat "$tmp/err" >&2; fi
    if command -v "$cxx" > /dev/null; then
        cp "$tmp/h.c" "$tmp/h.cpp"
        if "$cxx" -std=c++17 -Wall -Wextra -Werror -I"$repo/include" \
            -c "$tmp/h.cpp" -o "$tmp/h.o" 2> "$tmp/err"; then ok
        else bad "$name does not compile on its own as C++:"; cat "$tmp/err" >&2; fi
    fi
done
echo "check_headers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
