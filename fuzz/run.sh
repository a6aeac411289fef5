#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for SECONDS (default 60) from a seed corpus: the committed
# seeds in fuzz/corpus/<target>/ plus files this script generates with
# samebits' own writer.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      e.g. fuzz/run.sh 120 fuzz_idx
#
# Needs clang with its libFuzzer runtime (Debian: clang-14 ships
# libclang_rt.fuzzer in libclang-common-14-dev). Output, corpora and any
# crash-* reproducers go to build-fuzz/ (override with FUZZ_BUILD=dir).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-"fuzz_idx fuzz_safetensors fuzz_json fuzz_trace fuzz_verify fuzz_cli_options fuzz_checkpoint_meta"}
out=${FUZZ_BUILD:-build-fuzz}
cc=${CLANG:-clang}
for t in fuzz_idx fuzz_safetensors fuzz_json fuzz_trace fuzz_verify fuzz_cli_options fuzz_checkpoint_meta; do
    mkdir -p "$out/corpus/$t"
    if [ -d "fuzz/corpus/$t" ]; then cp fuzz/corpus/"$t"/* "$out/corpus/$t/"; fi
done
lib="src/io/idx.c src/io/safetensors.c src/io/json.c src/io/atomic_file.c src/io/regular_file.c src/io/trace_reader.c src/core/status.c src/core/tensor.c src/core/arena.c src/hash/sha256.c src/io/trace_writer.c src/autograd/trace_hook.c src/core/fpenv.c src/io/parse_number.c src/train/checkpoint_meta.c src/cli/options.c src/cli/train_options.c"
flags="-std=c11 -g -O1 -ffp-contract=off -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -fno-omit-frame-pointer"
san="-fsanitize=address,undefined -fno-sanitize-recover=all"

# The sources above are compiled with the sanitizers and coverage; what they
# call beyond them (tensor release through the device backends, the op table
# the trace writer checks names against) comes from the plain library build,
# without OpenCL (instrumenting the SIMD kernels too makes clang take tens of
# minutes on a single file). The linker takes from the archive only what the
# instrumented sources leave undefined.
make -s BUILD="$out/lib" SB_CUDA=0 SB_OPENCL=0 "$out/lib/libsamebits.a"
plain="$out/lib/libsamebits.a"

$cc $flags $san -o "$out/make_seeds" fuzz/make_seeds.c $lib "$plain" -lz -lm -pthread
"$out/make_seeds" "$out/corpus/fuzz_idx" "$out/corpus/fuzz_safetensors" "$out/corpus/fuzz_json" "$out/corpus/fuzz_trace"

# fuzz_verify runs the ops from the plain library build (its parser and
# runners are instrumented). Its seeds are the lines of the committed
# vectors and the hostile lines of tests/check_verify.sh.
case " $targets " in *" fuzz_verify "*)
    grep -v '^#' tests/vectors/ops.txt | split -l 1 - "$out/corpus/fuzz_verify/ops-"
    z=$(printf '%064d' 0)
    for line in "ssum 1 quick n=4611686018427387904,inc=4" "sgemm 1 quick m=4294967296,n=1,k=4294967296" \
                "autograd 1 quick n=65536,c=65536,hw=4294967296" "conv2d 1 quick x=1x1x1x1,w=1x1x1x1,pad=4000x4000,bias=0" \
                "matmul 1 quick a=16777216x1,b=1x16777216"; do
        printf '%s forward=%s\n' "$line" "$z" > "$out/corpus/fuzz_verify/hostile-${line%% *}"
    done ;;
esac

for t in $targets; do
    if [ "$t" = fuzz_verify ]; then
        $cc $flags $san -fsanitize=fuzzer -o "$out/$t" fuzz/fuzz_verify.c src/cli/verify_file.c \
            src/cli/verify_runners.c "$plain" -lz -lm -pthread
    else
        $cc $flags $san -fsanitize=fuzzer -o "$out/$t" "fuzz/$t.c" $lib "$plain" -lz -lm -pthread
    fi
    echo "== $t: ${secs}s"
    # Crashes stop the run with a non-zero status and leave crash-* files.
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$out/$t" -max_total_time="$secs" -max_len=8192 -rss_limit_mb=4096 \
        -artifact_prefix="$out/$t-" -print_final_stats=1 "$out/corpus/$t"
done
