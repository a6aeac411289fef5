#!/bin/sh
# Installs the Debian packages samebits' build and tests need, if missing.
#   libmpfr-dev, libgmp-dev  - exact reference values for the math tests and
#                              the exhaustive `make verify-math` proof
#   zlib1g-dev               - reading gzip-compressed IDX data files
#   dataset-fashion-mnist    - the Fashion-MNIST IDX files that `make demo`
#                              trains on and the end-to-end tests use
#   fortunes-min             - the text `samebits train --model gpt` trains
#                              on (/usr/share/games/fortunes/literature)
#   python3-torch, python3-numpy, python3-pytest
#                            - the Python package (python/) and its tests,
#                              for the system /usr/bin/python3 (PyTorch 1.13,
#                              the oldest supported)
#   ocl-icd-opencl-dev, ocl-icd-libopencl1
#                            - the OpenCL headers and the Khronos ICD loader:
#                              the library's OpenCL backend (docs/GPU.md)
#   pocl-opencl-icd          - PoCL, OpenCL on the CPU: `make test` runs every
#                              GPU kernel on it (tests/test_opencl.c)
#   clinfo                   - lists the OpenCL platforms and devices
#                              (SB_DEVICE=opencl:N counts them in its order)
#   python3-torchvision      - the torchvision models of the zoo tests
#                              (tests/python/test_zoo.py; random init, no
#                              downloads)
#   python3-venv             - the virtual environment of PyPI packages
#                              (PyTorch 2.x) that scripts/python-venv.sh makes next
#   openmpi-bin, libopenmpi-dev
#                            - mpirun and mpicc: the optional samebits-mpi
#                              command (data-parallel training) and its test;
#                              the library and `samebits` never link MPI
set -e
missing=""
[ -f /usr/include/mpfr.h ] || missing="$missing libmpfr-dev"
[ -f /usr/include/gmp.h ] || [ -f /usr/include/x86_64-linux-gnu/gmp.h ] || missing="$missing libgmp-dev"
[ -f /usr/include/zlib.h ] || missing="$missing zlib1g-dev"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || missing="$missing dataset-fashion-mnist"
[ -f /usr/share/games/fortunes/literature ] || missing="$missing fortunes-min"
/usr/bin/python3 -c "import torch" 2>/dev/null || missing="$missing python3-torch"
/usr/bin/python3 -c "import numpy" 2>/dev/null || missing="$missing python3-numpy"
/usr/bin/python3 -c "import pytest" 2>/dev/null || missing="$missing python3-pytest"
[ -f /usr/include/CL/cl.h ] || missing="$missing ocl-icd-opencl-dev"
ls /usr/lib/*/libOpenCL.so.1 >/dev/null 2>&1 || missing="$missing ocl-icd-libopencl1"
[ -f /etc/OpenCL/vendors/pocl.icd ] || missing="$missing pocl-opencl-icd"
command -v clinfo >/dev/null 2>&1 || missing="$missing clinfo"
/usr/bin/python3 -c "import torchvision" 2>/dev/null || missing="$missing python3-torchvision"
# Debian leaves ensurepip (what `python3 -m venv` needs) to python3-venv
/usr/bin/python3 -c "import ensurepip" 2>/dev/null || missing="$missing python3-venv"
command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
command -v mpicc >/dev/null 2>&1 || missing="$missing libopenmpi-dev"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
else
    echo "samebits needs these Debian packages:$missing" >&2
    echo "install them with: sudo apt-get install$missing" >&2
    exit 1
fi
