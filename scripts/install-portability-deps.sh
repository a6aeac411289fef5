#!/bin/sh
# Installs what the portability matrix (scripts/portability.sh) needs beyond
# the ordinary build (scripts/install-deps.sh), if missing:
#   qemu-user                        runs the foreign binaries (qemu-aarch64,
#                                    qemu-riscv64, qemu-s390x, qemu-i386)
#   gcc-<arch>-linux-gnu,            cross compilers and their C libraries
#   libc6-dev-<arch>-cross           for aarch64 (arm64), riscv64, s390x, i686 (i386)
#   clang, lld, llvm                 the clang rows (LTO needs the LLVM gold
#                                    plugin and llvm-ar's archive support)
# Cross targets are built without zlib (make NO_ZLIB=1), so no foreign zlib
# is needed. As root it installs with apt-get; otherwise it prints the
# command and fails.
set -e
missing=""
need() { # command package
    command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need_file() { # file package
    [ -e "$1" ] || missing="$missing $2"
}
need qemu-aarch64 qemu-user
need clang clang
need ld.lld lld
need llvm-ar llvm
need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need riscv64-linux-gnu-gcc gcc-riscv64-linux-gnu
need s390x-linux-gnu-gcc gcc-s390x-linux-gnu
need i686-linux-gnu-gcc gcc-i686-linux-gnu
need_file /usr/aarch64-linux-gnu/include/stdio.h libc6-dev-arm64-cross
need_file /usr/riscv64-linux-gnu/include/stdio.h libc6-dev-riscv64-cross
need_file /usr/s390x-linux-gnu/include/stdio.h libc6-dev-s390x-cross
need_file /usr/i686-linux-gnu/include/stdio.h libc6-dev-i386-cross
# One package can be named twice (qemu-user for several commands).
missing=$(printf '%s\n' $missing | sort -u | tr '\n' ' ')
missing=${missing% }
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: $missing"
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
else
    echo "the portability matrix needs these Debian packages: $missing" >&2
    echo "install them with: sudo apt-get install $missing" >&2
    exit 1
fi
