"""Gather strategies for the remote reads of the distributed SpMM.

Each is a forward gather and a backward reverse (scatter-add of halo gradients to their owners)
inside one ``torch.autograd.Function``; :func:`make_strategy` builds one by name.
"""

from __future__ import annotations

from netsparse_torch.comm.base import Strategy, Traffic
from netsparse_torch.comm.ds import DenseShifting
from netsparse_torch.comm.netsparse import NetSparse
from netsparse_torch.comm.sa import SparsityAware
from netsparse_torch.comm.su import SparsityUnaware
from netsparse_torch.comm.twoface import TwoFace
from netsparse_torch.errors import ConfigError
from netsparse_torch.plan import Plan

__all__ = ["STRATEGIES", "Strategy", "Traffic", "make_strategy", "register_strategy"]

STRATEGIES: dict[str, type[Strategy]] = {"su": SparsityUnaware, "sa": SparsityAware, "netsparse": NetSparse,
                                         "twoface": TwoFace, "ds": DenseShifting}


def register_strategy(cls: type[Strategy]) -> type[Strategy]:
    STRATEGIES[cls.name] = cls
    return cls


def make_strategy(name: str, plan: Plan, group=None, **options) -> Strategy:
    """The strategy ``name`` for ``plan`` on process group ``group`` (None: WORLD), with its options
    (``netsparse`` also takes its ``fabric`` object here)."""
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name](plan, group=group, **options)
