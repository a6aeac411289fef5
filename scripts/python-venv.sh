#!/bin/sh
# The project's Python test environment: a virtual environment of Debian's
# /usr/bin/python3 with the exact PyPI versions in python/requirements-test.txt
# (PyTorch 2.x, torchvision, numpy, pytest). Debian's own torch 1.13 stays the
# other tested interpreter (/usr/bin/python3 itself).
#
#   scripts/python-venv.sh ensure   create it unless it exists and matches the pins
#   scripts/python-venv.sh python   print its interpreter's path (exit 1 if not ready)
#   scripts/python-venv.sh dir      print its directory
#
# Where: $SB_VENV if set, else ${XDG_CACHE_HOME:-~/.cache}/samebits/venv-<hash>,
# the hash being of the pins and the Python version. It lives
# outside the checkout on purpose: it is 5.5 GB and takes minutes to install,
# and CI starts from a clean clone every time, so a venv inside the clone
# would be rebuilt on every run; keyed by the pins, one venv serves every
# clone and worktree on the machine, and a new pin makes a new one. A stamp
# file (written last) marks a complete install; a directory without it is
# removed and rebuilt. flock serialises parallel `make deps`.
set -e
here=$(cd "$(dirname "$0")" && pwd)
req="$(dirname "$here")/python/requirements-test.txt"
base=/usr/bin/python3

# the key: the pins (comments and blank lines aside) and the Python version
key=$({ grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$req"
        "$base" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
dir=${SB_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/samebits/venv-$key}
stamp="$dir/.samebits-requirements-$key"

case "${1:-}" in
dir) echo "$dir"; exit 0 ;;
python)
    [ -f "$stamp" ] || { echo "python-venv: no test environment at $dir (run: make deps)" >&2; exit 1; }
    echo "$dir/bin/python"; exit 0 ;;
ensure) ;;
*) echo "usage: $0 ensure|python|dir" >&2; exit 2 ;;
esac

[ -f "$stamp" ] && exit 0
mkdir -p "$(dirname "$dir")"
exec 9> "$dir.lock"
flock 9
[ -f "$stamp" ] && exit 0   # another make deps finished it while we waited
echo "python-venv: creating the Python test environment in $dir"
echo "python-venv: (PyPI torch with its CUDA runtime wheels: about 2.9 GB to download, 5.5 GB installed, a few minutes)"
if [ -e "$dir" ] && [ ! -f "$dir/pyvenv.cfg" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "python-venv: $dir exists and is not a virtual environment; not touching it" >&2; exit 1
fi
rm -rf "$dir"   # an unfinished install (no stamp)
"$base" -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
"$dir/bin/python" -c "import torch, torchvision, numpy, pytest, transformers; print('python-venv: torch %s, torchvision %s, numpy %s, pytest %s, transformers %s' % (torch.__version__, torchvision.__version__, numpy.__version__, pytest.__version__, transformers.__version__))"
touch "$stamp"
