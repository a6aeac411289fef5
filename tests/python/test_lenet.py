"""examples/lenet_training.py prints exactly what `samebits train` prints."""
import os
import subprocess
import sys

import pytest

from conftest import REPO, DATA, cli_path, have_data

pytestmark = pytest.mark.skipif(not have_data(), reason="no Fashion-MNIST at %s" % DATA)


def test_example_matches_the_cli():
    args = ["--data", DATA, "--limit-batches", "3", "--epochs", "2", "--batch-size", "50",
            "--seed", "5", "--lr", "0.005"]
    cli = subprocess.run([cli_path()] + ["train"] + args, capture_output=True, text=True,
                         timeout=600)
    assert cli.returncode == 0, cli.stderr
    py = subprocess.run([sys.executable, os.path.join(REPO, "examples", "lenet_training.py")] +
                        args + ["--no-thread-check"], capture_output=True, text=True, timeout=600)
    assert py.returncode == 0, py.stderr
    lines = py.stdout.splitlines()
    assert len(lines) == 4 and lines[0].startswith("Hash of the initial model: ")
    assert py.stdout == cli.stdout


def test_example_refuses_bad_options():
    py = subprocess.run([sys.executable, os.path.join(REPO, "examples", "lenet_training.py"),
                         "--batch-size", "0"], capture_output=True, text=True)
    assert py.returncode != 0 and "batch-size" in py.stderr
