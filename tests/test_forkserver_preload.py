"""On a machine with an NVIDIA GPU the forkserver must not import PyG: that import initialises the CUDA
driver (seen on an H200), and ranks forked from a process that did cannot use CUDA."""

from __future__ import annotations

import subprocess
import sys

from netsparse_torch.run import forkserver


def test_with_a_gpu_the_forkserver_preloads_nothing_that_imports_pyg():
    code = ("import sys\nfrom netsparse_torch.run.forkserver import PRELOAD_CUDA\n"
            "for m in PRELOAD_CUDA: __import__(m)\nprint('torch_geometric' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert "netsparse_torch.run.training" in forkserver.PRELOAD  # and without one, the training loop is preloaded


def test_a_gpu_is_seen_from_its_device_node_unless_cuda_visible_devices_hides_it(monkeypatch, tmp_path):
    monkeypatch.setattr(forkserver, "Path", lambda p: tmp_path if p == "/dev" else tmp_path / "none")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert not forkserver.nvidia_gpu_visible()
    (tmp_path / "nvidia0").touch()
    assert forkserver.nvidia_gpu_visible()
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        assert not forkserver.nvidia_gpu_visible()
