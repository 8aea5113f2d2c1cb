"""The device of a training run: ``device=auto|cpu|cuda``, checked once before any rank starts, and the
GPU each rank takes.

Each rank takes GPU ``LOCAL_RANK % device_count``, as torchrun scripts do. More ranks than GPUs on a
node share GPUs; NCCL refuses two ranks on one GPU, so the ``netsparse`` backend then routes their
CUDA tensors through gloo (host-staged collectives) and prints one line saying so
(:mod:`netsparse_torch.backend`).
"""

from __future__ import annotations

import os

import torch

from netsparse_torch.config_check import DEVICES
from netsparse_torch.errors import ConfigError


def device_kind(name: str, cuda_available: bool | None = None) -> str:
    """``cpu`` or ``cuda`` for the run's ``device`` setting; a ConfigError when CUDA is asked for and
    there is none (one line, before any rank starts)."""
    name = str(name)
    if name not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, got {name!r}")
    cuda = torch.cuda.is_available() if cuda_available is None else cuda_available
    if name == "cuda" and not cuda:
        raise ConfigError("device=cuda but torch sees no CUDA GPU (torch.cuda.is_available() is False): "
                          "use device=cpu, or device=auto to take a GPU only when there is one")
    return "cuda" if name == "cuda" or (name == "auto" and cuda) else "cpu"


def local_rank(rank: int) -> int:
    """This process's rank on its node: torchrun's LOCAL_RANK, else the rank (local ranks on loopback)."""
    return int(os.environ.get("LOCAL_RANK", rank))


def rank_device(kind: str, rank: int) -> torch.device:
    """The device of ``rank``: the CPU, or GPU ``LOCAL_RANK % device_count`` (made current)."""
    if kind != "cuda":
        return torch.device("cpu")
    device = torch.device("cuda", local_rank(rank) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device
