#!/bin/sh
# Installs what `make bench` compares against, if missing:
#   libopenblas-dev - OpenBLAS (cblas.h, -lopenblas), the CPU baseline
#   libblis-pthread-dev - BLIS, SGEMM's second peer (bench_sgemm opens
#                     libblis.so.4 itself; OpenBLAS stays the system BLAS,
#                     its alternatives priority being higher)
#   python3-torch   - PyTorch for bench/*.py, for the system /usr/bin/python3
set -e
missing=""
# True when any of the paths (globs expanded) exists.
have() {
    for f in "$@"; do [ -e "$f" ] && return 0; done
    return 1
}
# Another package (libblas-dev, the reference BLAS) also installs cblas.h,
# so look for OpenBLAS's own link library, which the benchmarks link.
have /usr/lib/*/libopenblas.so /usr/lib/libopenblas.so || missing="$missing libopenblas-dev"
have /usr/lib/*/libblis.so.4 /usr/lib/*/blis-*/libblis.so.4 || missing="$missing libblis-pthread-dev"
/usr/bin/python3 -c "import torch" 2>/dev/null || missing="$missing python3-torch"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
else
    echo "make bench needs these Debian packages:$missing" >&2
    echo "install them with: sudo apt-get install$missing" >&2
    exit 1
fi
