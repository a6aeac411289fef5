"""examples/resnet18_fashion.py prints tests/golden/example-resnet18_fashion.txt
at every ISA level this machine runs (SB_ISA) and at 2 threads.

tests/check_python.sh already runs the example at the best level with 1 and
3 threads on every `make test`; the portable levels take minutes per run
here, so this file runs in `make test-zoo` (SB_TEST_ZOO=full) only."""
import os
import subprocess
import sys

import pytest

from conftest import REPO, DATA, have_data
from samebits import utils
from test_zoo_ops import _isas

pytestmark = [
    pytest.mark.skipif(os.environ.get("SB_TEST_ZOO") != "full",
                       reason="the slower target: make test-zoo"),
    pytest.mark.skipif(not have_data(), reason="no Fashion-MNIST at %s" % DATA),
]

GOLDEN = os.path.join(REPO, "tests", "golden", "example-resnet18_fashion.txt")
OPTIONS = ["--data", DATA, "--epochs", "1", "--limit-batches", "4", "--batch-size", "32",
           "--lr", "0.001", "--test-limit", "200"]


def _levels():
    """The ISA levels this machine runs (test_zoo_ops._isas), leaving the
    current level as it was."""
    was = utils.isa()
    try:
        return _isas()
    finally:
        utils.set_isa(was)


@pytest.mark.parametrize("isa", _levels())
def test_example_prints_the_golden_lines(isa):
    env = dict(os.environ, SB_ISA=isa, SB_NUM_THREADS="2")
    run = subprocess.run([sys.executable, os.path.join(REPO, "examples", "resnet18_fashion.py")]
                         + OPTIONS, capture_output=True, text=True, env=env, timeout=3600)
    assert run.returncode == 0, run.stderr
    assert "SB_ISA" not in run.stderr, run.stderr   # the level was really used
    with open(GOLDEN) as f:
        assert run.stdout == f.read()
