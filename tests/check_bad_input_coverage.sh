#!/bin/sh
# Every function declared in include/samebits/*.h is either exercised by the
# bad-input suite (tests/test_bad_input.c, which lists what it ran with
# --list) or named in tests/bad_input_exempt.txt with a reason. A new public
# function without either fails here. Also fails on stale or reasonless
# exemptions, and on an exemption for a function the suite covers.
build=${1:-build}
here=$(dirname "$0")
name=check_bad_input_coverage
bin="$build/tests/test_bad_input"
exempt="$here/bad_input_exempt.txt"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Declarations: a line that starts (after an optional export macro) with a
# return type and names sb_xxx( - comments and prototypes' continuation
# lines do not start that way.
sed -n 's/^\(SB_API \)\{0,1\}[A-Za-z_][A-Za-z0-9_ ]*[ *]\(sb_[a-z0-9_]*\)(.*/\2/p' \
    "$here"/../include/samebits/*.h | sort -u > "$tmp/declared"
if ! "$bin" --list > "$tmp/covered.raw" 2>/dev/null; then
    echo "$name: $bin --list failed (run make tests first)"
    echo "$name: 0 passed, 1 failed"; exit 1
fi
sort -u "$tmp/covered.raw" > "$tmp/covered"
grep -v '^#' "$exempt" | grep -v '^[[:space:]]*$' > "$tmp/exempt.lines"
cut -d' ' -f1 "$tmp/exempt.lines" | sort -u > "$tmp/exempt"
# Is $1 exempt, by its name or by a prefix entry such as sb_cuda_* ?
is_exempt() {
    grep -qx "$1" "$tmp/exempt" && return 0
    while read -r e; do
        case "$e" in *'*') case "$1" in "${e%\*}"*) return 0 ;; esac ;; esac
    done < "$tmp/exempt"
    return 1
}

passed=0; failed=0
fail() { echo "$name: $*"; failed=$((failed + 1)); }
while read -r f; do
    if grep -qx "$f" "$tmp/covered"; then
        if is_exempt "$f"; then fail "$f is covered, so its exemption must go"; else passed=$((passed + 1)); fi
    elif is_exempt "$f"; then
        passed=$((passed + 1))
    else
        fail "$f is declared in include/samebits but has no bad-input case and no exemption"
    fi
done < "$tmp/declared"
while read -r f reason; do
    case "$f" in
    *'*') grep -q "^${f%\*}" "$tmp/declared" || fail "exemption for $f, which matches no declared function" ;;
    *) grep -qx "$f" "$tmp/declared" || fail "exemption for $f, which no header declares" ;;
    esac
    [ -n "$reason" ] || fail "exemption for $f gives no reason"
done < "$tmp/exempt.lines"
while read -r f; do
    grep -qx "$f" "$tmp/declared" || fail "the suite lists $f, which no header declares"
done < "$tmp/covered"
echo "$name: $(wc -l < "$tmp/declared") declared, $(wc -l < "$tmp/covered") covered, $(wc -l < "$tmp/exempt") exempt"
echo "$name: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
