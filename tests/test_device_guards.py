"""Every Triton launch, stream and event uses the device of the tensors it works on, not the current
device: a library caller on a multi-GPU node need not call ``torch.cuda.set_device`` (issue: the
kernels landed on the wrong GPU and the staged halo was joined on the wrong stream). On CPU the guards
are checked with a stand-in for ``torch.cuda``; with two GPUs the same runs on ``cuda:1`` for real."""

import contextlib
from unittest import mock

import devices
import pytest
import torch

from netsparse_torch.comm.halo import HostStaging

pytest.importorskip("triton", reason="triton is not installed")
from netsparse_torch.kernels import triton_kernels as tk  # noqa: E402

LAUNCHERS = ("spmm", "sddmm", "gather", "scatter_add", "edge_softmax", "edge_softmax_backward", "spmm_heads",
             "sddmm_heads")
GPU1 = torch.device("cuda", 1)


@pytest.fixture
def current(monkeypatch):
    """``torch.cuda.device(d)`` and ``torch.cuda.current_stream(d)`` as recorders: the list holds the
    devices made current (``("device", d)``) and the streams asked for (``("stream", d)``)."""
    log = []

    @contextlib.contextmanager
    def device(d):
        log.append(("device", d))
        yield

    stream = mock.MagicMock()
    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda d=None: log.append(("stream", d)) or stream)
    return log


def cuda_tensor(device: torch.device):
    fake = mock.MagicMock(spec=torch.Tensor)
    fake.device = device
    return fake


@pytest.mark.parametrize("name", LAUNCHERS)
def test_every_triton_launcher_is_guarded(name):
    assert getattr(getattr(tk, name), "__wrapped__", None) is not None, f"{name} launches on the current device"


def test_the_guard_makes_the_first_tensor_device_current(current):
    launched = []
    launch = tk.on_operands_device(lambda *a, **kw: launched.append(list(current)))
    launch(3, cuda_tensor(GPU1), cuda_tensor(torch.device("cuda", 0)))
    assert launched == [[("device", GPU1)]]
    launch(torch.zeros(2))  # CPU tensors (the interpreter): no device to make current
    assert launched[-1] == [("device", GPU1)]


def test_staged_halo_joins_the_halo_device_stream(current):
    staging = HostStaging()
    staging._copied = (GPU1, "copied")
    staging.join()
    assert current == [("stream", GPU1)]
    assert staging._copied is None


@pytest.mark.skipif(not devices.CUDA or torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_kernels_and_staging_on_the_second_gpu_while_the_first_is_current():
    torch.cuda.set_device(0)
    a = torch.rand(40, 30, device=GPU1) * (torch.rand(40, 30, device=GPU1) < 0.2)
    s = a.to_sparse_csr()
    B = torch.randn(30, 19, device=GPU1)
    out = tk.spmm(s.crow_indices(), s.col_indices(), s.values(), B)
    torch.testing.assert_close(out, a @ B)
    staging, halo = HostStaging(), torch.empty(40, 19, device=GPU1)
    host = staging.host_buffer(halo)
    host.copy_(out.cpu())
    staging.to_device(host, halo)
    staging.join()
    torch.testing.assert_close(halo, out)
    assert torch.cuda.current_device() == 0
