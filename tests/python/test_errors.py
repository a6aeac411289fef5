"""Clear errors: dtypes, devices, shapes, contiguity, the library itself."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import samebits
from samebits import ops
from samebits.nn import functional as F
from conftest import REPO, same_bits


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16, torch.int32])
def test_torch_dtypes_other_than_float32_are_refused(dtype):
    a = torch.ones(2, 2, dtype=dtype)
    with pytest.raises(TypeError, match=r"samebits\.mm: a has dtype %s; samebits computes in "
                       r"float32 only" % str(dtype).replace(".", r"\.")):
        ops.mm(a, torch.ones(2, 2))
    with pytest.raises(TypeError, match="float32 only"):
        F.linear(a, torch.ones(2, 2))


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_numpy_dtypes_other_than_float32_are_refused(dtype):
    with pytest.raises(TypeError, match=r"samebits\.sqrt: x has dtype numpy\.float(64|16)"):
        ops.sqrt(np.ones(3, dtype))


def test_float64_module_is_refused_by_conversion():
    with pytest.raises(TypeError, match="dtype torch.float64"):
        samebits.from_torch_module(torch.nn.Linear(2, 2).double())


def test_non_tensor_inputs_are_refused():
    with pytest.raises(TypeError, match="must be a torch.Tensor or a numpy.ndarray, got list"):
        ops.sqrt([1.0, 2.0])


def test_non_contiguous_inputs_are_copied_and_give_the_same_bits(rng):
    a = torch.from_numpy(rng.standard_normal((20, 30)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal((20, 30)).astype(np.float32))
    at = a.t()  # a strided view
    assert not at.is_contiguous()
    assert same_bits(ops.mm(at, b), ops.mm(at.contiguous(), b))
    assert same_bits(ops.sqrt(a.abs()[:, ::2]), ops.sqrt(a.abs()[:, ::2].contiguous()))
    an = a.numpy()[::2]
    assert same_bits(ops.div(an, 2.0), np.ascontiguousarray(an) / np.float32(2))
    # the input itself is untouched
    assert not at.is_contiguous()


def test_mismatched_shapes_raise_with_the_c_message():
    with pytest.raises(samebits.SamebitsError, match=r"sb_matmul.*(shape|inner|K)") as e:
        ops.mm(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    assert e.value.function == "sb_matmul"
    with pytest.raises(samebits.SamebitsError, match="do not broadcast"):
        ops.div(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    with pytest.raises(samebits.SamebitsError, match="sb_conv2d"):
        ops.conv2d(np.ones((1, 2, 5, 5), np.float32), np.ones((3, 4, 3, 3), np.float32))
    with pytest.raises(samebits.SamebitsError, match="sb_cross_entropy_forward"):
        ops.cross_entropy(np.ones((2, 3), np.float32), np.array([0, 7]))
    with pytest.raises(samebits.SamebitsError, match="sb_linear_forward"):
        F.linear(torch.ones(2, 3), torch.ones(4, 5))


def test_index_dtype_is_checked():
    with pytest.raises(TypeError, match="class indices must be int64 or int32"):
        ops.cross_entropy(np.ones((2, 3), np.float32), np.array([0.0, 1.0]))


def test_non_cpu_devices_get_a_clear_error():
    # no GPU needed: a meta tensor is neither host nor CUDA memory
    x = torch.ones(2, 2, device="meta")
    with pytest.raises(samebits.UnsupportedDeviceError,
                       match="samebits.sqrt: x is on meta; samebits takes CPU and CUDA tensors"):
        ops.sqrt(x)
    assert issubclass(samebits.UnsupportedDeviceError, NotImplementedError)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_cuda_tensors_without_the_cuda_backend_get_a_clear_error():
    if hasattr(samebits._lib.lib, "sb_cuda_context_new"):
        pytest.skip("this libsamebits has the CUDA backend (tests/python/test_device_tensors.py)")
    with pytest.raises(samebits.UnsupportedDeviceError, match="has no CUDA backend"):
        ops.mm(torch.ones(2, 2, device="cuda"), torch.ones(2, 2, device="cuda"))


def test_a_missing_library_is_a_clear_import_error():
    env = dict(os.environ, SAMEBITS_LIB="/nonexistent/libsamebits.so",
               PYTHONPATH=os.path.join(REPO, "python"))
    r = subprocess.run([sys.executable, "-c", "import samebits"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "cannot load libsamebits.so" in r.stderr and "SAMEBITS_LIB" in r.stderr


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="reduction"):
        ops.cross_entropy(np.ones((2, 3), np.float32), np.array([0, 1]), reduction="avg")
    with pytest.raises(samebits.SamebitsError, match="sb_set_num_threads"):
        samebits.set_num_threads(0)
    with pytest.raises(ValueError, match="manual_seed"):
        samebits.manual_seed(-1)
