#!/usr/bin/env bash
# The portability matrix (docs/PORTABILITY.md): builds samebits in many
# configurations and checks that each one prints exactly the golden bits.
#
#   scripts/portability.sh                 every configuration
#   scripts/portability.sh --subset ci     the representative CI subset
#   scripts/portability.sh --only a,b      the named configurations
#   scripts/portability.sh --list          the configurations, one per line
#   scripts/portability.sh --record-golden rewrite the golden file from the
#                                          reference configuration (gcc-O2)
# Environment: PORT_JOBS (make -j, default nproc), PORT_NO_WERROR=1 (compiler
# warnings do not fail a build), PORT_EXTRA_CFLAGS (added to every build),
# SB_TEST_DATA (the Fashion-MNIST directory).
#
# Each configuration builds into build-port-<build>/ and runs:
#   1. `samebits verify --quick` (the op test vectors), when this samebits
#      has a verify command;
#   2. tests/test_fpenv.c (the floating-point environment guard);
#   3. `samebits train --limit-batches 4` on Fashion-MNIST with the test set
#      cut to its first 1000 images, whose four lines must equal
#      tests/golden/lenet5-limit4-test1000.txt byte for byte;
#   4. in rows whose last column says `fast`: tests/test_kernel_context.c
#      (the target's kernel contexts are complete), then the differential
#      tests of the fast paths against the reference (FAST_TESTS: GEMM with
#      its flexible kernels and gemv_t, conv2d with its implicit GEMM, the
#      pointwise/softmax/optimizer loops, the normalisations), at every ISA
#      level of the target (NEON on aarch64), threads 1, 2 and 3,
#      SB_TEST_QUICK sizes.
# Foreign architectures run under qemu-user with the cross toolchain's
# sysroot, built with NO_ZLIB=1 (no target zlib needed: the data is gunzipped
# here once). One row per configuration: name, PASS/FAIL/SKIP, seconds, and
# what failed. Exit status is non-zero if any row failed.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)

LIMIT=4
TEST_IMAGES=1000
GOLDEN=tests/golden/lenet5-limit${LIMIT}-test${TEST_IMAGES}.txt
JOBS=${PORT_JOBS:-$(nproc 2>/dev/null || echo 2)}
DATA=${SB_TEST_DATA:-/usr/share/datasets/fashion-mnist}
# The build is -Werror; -O3 and LTO see more (false) maybe-uninitialized
# paths than -O2. PORT_NO_WERROR=1 keeps such warnings from failing a row
# so that the bits can still be compared.
# PORT_EXTRA_CFLAGS is added to every build (to try a fix before it lands).
EXTRA="${PORT_EXTRA_CFLAGS:-}"
[ -n "${PORT_NO_WERROR:-}" ] && [ "${PORT_NO_WERROR}" != 0 ] && EXTRA="$EXTRA -Wno-error"

# name | build dir suffix | CC | OPT | qemu | environment | subsets | extra checks
# Rows that share a build suffix reuse that build (run-time settings only).
# Foreign targets (a qemu column) build with NO_ZLIB=1.
configs() {
    cat <<'EOF'
gcc-O2|gcc-O2|gcc|-O2|-|-|ci
gcc-O0|gcc-O0|gcc|-O0|-|-|
gcc-O3|gcc-O3|gcc|-O3|-|-|
gcc-march-native|gcc-native|gcc|-O2 -march=native|-|-|
gcc-lto|gcc-lto|gcc|-O2 -flto=auto|-|-|
clang-O0|clang-O0|clang|-O0|-|-|ci
clang-O2|clang-O2|clang|-O2|-|-|
clang-O3|clang-O3|clang|-O3|-|-|
clang-march-native|clang-native|clang|-O2 -march=native|-|-|
clang-lto|clang-lto|clang|-O2 -flto|-|-|
isa-scalar|gcc-O2|gcc|-O2|-|SB_ISA=scalar|ci
isa-sse2|gcc-O2|gcc|-O2|-|SB_ISA=sse2|ci
isa-avx2|gcc-O2|gcc|-O2|-|SB_ISA=avx2|ci
isa-avx512|gcc-O2|gcc|-O2|-|SB_ISA=avx512|ci
threads-1|gcc-O2|gcc|-O2|-|SB_NUM_THREADS=1|ci
threads-2|gcc-O2|gcc|-O2|-|SB_NUM_THREADS=2|ci
threads-3|gcc-O2|gcc|-O2|-|SB_NUM_THREADS=3|ci
aarch64-neon|aarch64|aarch64-linux-gnu-gcc|-O2|aarch64|-|ci|fast
aarch64-scalar|aarch64|aarch64-linux-gnu-gcc|-O2|aarch64|SB_ISA=scalar|
riscv64|riscv64|riscv64-linux-gnu-gcc|-O2|riscv64|-|
s390x-big-endian|s390x|s390x-linux-gnu-gcc|-O2|s390x|-|ci
i686-sse2|i686|i686-linux-gnu-gcc|-O2|i386|-|
i686-x87-refused|-|i686-linux-gnu-gcc|-|-|-|ci
EOF
}

subset=""; only=""; record=0; list=0
while [ $# -gt 0 ]; do
    case "$1" in
    --subset) subset=${2:-}; shift 2 ;;
    --only) only=${2:-}; shift 2 ;;
    --record-golden) record=1; only=gcc-O2; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "portability.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$subset" ] && [ "$subset" != ci ]; then
    echo "portability.sh: unknown subset '$subset' (known: ci)" >&2; exit 2
fi

selected() { # name subsets
    if [ -n "$only" ]; then case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; fi
    if [ -n "$subset" ]; then case ",$2," in *",$subset,"*) return 0 ;; *) return 1 ;; esac; fi
    return 0
}

if [ $list = 1 ]; then
    configs | while IFS='|' read -r name _ _ _ _ _ subs _; do
        selected "$name" "$subs" && echo "$name"
    done
    exit 0
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
log_dir=build-port-logs
mkdir -p "$log_dir"

# The data every configuration trains on: the training set whole (so the
# shuffled batches are those of a full run) and the first TEST_IMAGES test
# images (evaluating 10000 images under qemu would take minutes), in plain
# IDX so that NO_ZLIB builds read it.
make_data() { scripts/fashion_subset.sh "$DATA" "$work/data" $TEST_IMAGES; }

qemu_cmd() { # arch -> the qemu-user runner with the cross sysroot
    case "$1" in
    aarch64) echo "qemu-aarch64 -L /usr/aarch64-linux-gnu" ;;
    riscv64) echo "qemu-riscv64 -L /usr/riscv64-linux-gnu" ;;
    s390x) echo "qemu-s390x -L /usr/s390x-linux-gnu" ;;
    # 32-bit x86 runs natively through the cross loader when the kernel
    # executes i386 binaries (it does on x86-64 with IA32 emulation): real
    # hardware and real threads. Otherwise qemu-i386 on one thread: there a
    # 2-thread run of the same binary spins at 100% CPU in the thread pool's
    # waits and never ends, while it passes natively in 0.05 s.
    i386)
        if /usr/i686-linux-gnu/lib/ld-linux.so.2 --help >/dev/null 2>&1; then
            echo "/usr/i686-linux-gnu/lib/ld-linux.so.2 --library-path /usr/i686-linux-gnu/lib"
        else
            echo "env SB_NUM_THREADS=1 qemu-i386 -L /usr/i686-linux-gnu"
        fi ;;
    esac
}

declare -A built   # build suffix -> ok | fail
pass=0; fail=0; skip=0
rows=()

row() { # name result seconds notes
    local line
    line=$(printf '%-20s %-5s %7s  %s' "$1" "$2" "$3" "$4")
    echo "$line"
    rows+=("$line")
    case "$2" in PASS) pass=$((pass + 1)) ;; SKIP) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
}

# The libc-only tests a `fast` row builds for its target and runs there.
FAST_TESTS="test_kernel_context test_fast_gemm test_fast_conv test_fast_pointwise test_fast_norm"

build() { # suffix cc opt qemu log
    local suffix=$1 cc=$2 opt=$3 nozlib="" log=$5
    [ "$4" != - ] && nozlib=1
    if [ -n "${built[$suffix]:-}" ]; then [ "${built[$suffix]}" = ok ]; return; fi
    local dir="build-port-$suffix"
    if make -j"$JOBS" BUILD="$dir" CC="$cc" OPT="$opt" NO_ZLIB="$nozlib" EXTRA_CFLAGS="$EXTRA" cli "$dir/port/test_fpenv" $(printf "$dir/port/%s " $FAST_TESTS) > "$log" 2>&1; then
        built[$suffix]=ok; return 0
    fi
    built[$suffix]=fail; return 1
}

# Runs the payload of a configuration; prints the notes, returns non-zero on
# any failure.
payload() { # suffix qemu env log extra-checks
    local dir="build-port-$1" runner="" envs=() notes="" ok=0
    [ "$2" != - ] && runner=$(qemu_cmd "$2")
    [ "$3" != - ] && envs=("$3")
    local log=$4 extra=${5:-}
    local run=(env "${envs[@]}" $runner)
    # 1. op test vectors
    if "${run[@]}" "$dir/samebits" 2>&1 | grep -qw verify; then
        local vargs=()
        local usage
        usage=$("${run[@]}" "$dir/samebits" 2>&1)
        case "$usage" in *--quick*) vargs+=(--quick) ;; esac
        # NO_ZLIB builds cannot read the gzipped system copy of the data.
        case "$usage" in *--data*) vargs+=(--data "$work/data") ;; esac
        if "${run[@]}" "$dir/samebits" verify "${vargs[@]}" >> "$log" 2>&1; then notes="verify ok"
        else notes="verify FAILED"; ok=1; fi
    else
        notes="verify n/a"
    fi
    # 2. the floating-point environment guard
    local fp
    fp=$("${run[@]}" "$dir/port/test_fpenv" 2>> "$log"); local rc=$?
    echo "$fp" >> "$log"
    fp=$(printf '%s\n' "$fp" | tail -n 1 | sed -n 's/^test_fpenv: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')
    if [ $rc -eq 0 ] && [ -n "$fp" ]; then notes="$notes, fpenv ${fp%% *} ok"
    else notes="$notes, fpenv FAILED"; ok=1; fi
    # 3. the short training run against the golden lines
    if "${run[@]}" "$dir/samebits" train --data "$work/data" --limit-batches $LIMIT \
        > "$work/train.out" 2>> "$log"; then
        if [ $record = 1 ]; then
            cp "$work/train.out" "$GOLDEN"; notes="$notes, golden recorded"
        elif cmp -s "$work/train.out" "$GOLDEN"; then
            notes="$notes, train = golden"
        else
            notes="$notes, train DIFFERS from golden"; ok=1
            diff "$GOLDEN" "$work/train.out" >> "$log"
        fi
    else
        notes="$notes, train FAILED"; ok=1
    fi
    # 4. the differential tests of the fast paths (FAST_TESTS)
    if [ "$extra" = fast ]; then
        local t out counts
        for t in $FAST_TESTS; do
            out=$(env SB_TEST_QUICK=1 SB_TEST_THREADS=1,2,3 "${envs[@]}" $runner "$dir/port/$t" 2>> "$log"); rc=$?
            echo "$out" >> "$log"
            counts=$(printf '%s\n' "$out" | tail -n 1 | sed -n "s/^$t: \([0-9]*\) passed, \([0-9]*\) failed\$/\1 \2/p")
            if [ $rc -eq 0 ] && [ -n "$counts" ]; then notes="$notes, ${t#test_} ${counts%% *} ok"
            else notes="$notes, ${t#test_} FAILED"; ok=1; fi
        done
    fi
    echo "$notes"
    return $ok
}

# The reference configuration also reproduces the project's own short golden
# run on the full data (tests/golden/lenet5-limit20.txt), which ties the
# small golden above to it.
reference_check() { # dir log
    "$1/samebits" train --data "$DATA" --limit-batches 20 > "$work/ref.out" 2>> "$2" &&
        cmp -s "$work/ref.out" tests/golden/lenet5-limit20.txt
}

# i686 with x87 float arithmetic must refuse to build, saying why: the
# project's own rule for src/core/fpenv.c with -mfpmath=387 added.
refusal_check() { # cc log
    local cc=$1 log=$2 dir=build-port-i686-x87
    rm -f "$dir/obj/src/core/fpenv.o"
    if make BUILD=$dir CC="$cc" NO_ZLIB=1 EXTRA_CFLAGS=-mfpmath=387 \
        "$dir/obj/src/core/fpenv.o" > "$log" 2>&1; then
        echo "x87 build was NOT refused"; return 1
    fi
    if grep -q "needs SSE2 float arithmetic" "$log"; then echo "refused: $(grep -o 'samebits needs[^"]*' "$log" | head -n 1)"; return 0; fi
    echo "refused, but without the SSE2 message"; return 1
}

have() { command -v "$1" > /dev/null 2>&1; }

if ! make_data; then
    echo "portability.sh: cannot prepare the Fashion-MNIST data from $DATA (install dataset-fashion-mnist)" >&2
    exit 1
fi
if [ $record = 0 ] && [ ! -f "$GOLDEN" ]; then
    echo "portability.sh: $GOLDEN is missing (scripts/portability.sh --record-golden)" >&2; exit 1
fi

since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
secs() { since "$t0"; }

printf '%-20s %-5s %7s  %s\n' configuration result seconds details
start_all=$EPOCHREALTIME
while IFS='|' read -r name suffix cc opt qemu envv subs extra; do
    selected "$name" "$subs" || continue
    t0=$EPOCHREALTIME
    log="$log_dir/$name.log"; : > "$log"
    if ! have "$cc"; then row "$name" SKIP "$(secs)" "$cc not installed (scripts/install-portability-deps.sh)"; continue; fi
    if [ "$suffix" = - ]; then
        if notes=$(refusal_check "$cc" "$log"); then row "$name" PASS "$(secs)" "$notes"
        else row "$name" FAIL "$(secs)" "$notes"; fi
        continue
    fi
    if [ "$qemu" != - ] && ! have "$(qemu_cmd "$qemu" | cut -d' ' -f1)"; then
        row "$name" SKIP "$(secs)" "qemu-user not installed"; continue
    fi
    case "$envv" in
    SB_ISA=*)
        # An ISA this CPU lacks cannot be tested here.
        if [ "$qemu" = - ] && ! grep -qw "$(case ${envv#SB_ISA=} in avx512) echo avx512f;; avx2) echo avx2;; *) echo sse2;; esac)" /proc/cpuinfo; then
            row "$name" SKIP "$(secs)" "this CPU lacks ${envv#SB_ISA=}"; continue
        fi ;;
    esac
    if ! build "$suffix" "$cc" "$opt" "$qemu" "$log_dir/build-$suffix.log"; then
        row "$name" FAIL "$(secs)" "build failed: $(grep -m1 -E 'error:|Error [0-9]' "$log_dir/build-$suffix.log" | cut -c1-110)"
        continue
    fi
    if notes=$(payload "$suffix" "$qemu" "$envv" "$log" "$extra"); then
        if [ "$name" = gcc-O2 ] && [ $record = 0 ]; then
            if reference_check "build-port-$suffix" "$log"; then notes="$notes, limit20 = golden"
            else row "$name" FAIL "$(secs)" "$notes, limit20 DIFFERS"; continue; fi
        fi
        row "$name" PASS "$(secs)" "$notes"
    else
        row "$name" FAIL "$(secs)" "$notes (log: $log)"
    fi
done < <(configs)
total=$(since "$start_all")

{
    echo "# samebits portability matrix, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) cores"
    echo "# $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
    printf '%-20s %-5s %7s  %s\n' configuration result seconds details
    printf '%s\n' "${rows[@]}"
    echo "# $pass passed, $fail failed, $skip skipped in ${total}s"
} > "$log_dir/matrix.txt"
echo "portability: $pass passed, $fail failed, $skip skipped in ${total}s (table: $log_dir/matrix.txt)"
[ $fail -eq 0 ]
