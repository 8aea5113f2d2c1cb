"""Gather strategies for the remote reads of the distributed SpMM.

Each is a forward gather and a backward reverse (scatter-add of halo gradients to their owners)
inside one ``torch.autograd.Function``; :func:`make_strategy` builds one by name.

The strategies (and torch) load on first use of ``STRATEGIES``, ``Strategy``, ``Traffic`` or
:func:`make_strategy`, so importing the package alone does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netsparse_torch.errors import ConfigError

if TYPE_CHECKING:
    from netsparse_torch.comm.base import Strategy, Traffic
    from netsparse_torch.plan import Plan

__all__ = ["STRATEGIES", "Strategy", "Traffic", "make_strategy", "register_strategy"]


def _load() -> dict:
    """Import the strategies once and publish them as module attributes."""
    g = globals()
    if "STRATEGIES" not in g:
        from netsparse_torch.comm.base import Strategy, Traffic
        from netsparse_torch.comm.ds import DenseShifting
        from netsparse_torch.comm.netsparse import NetSparse
        from netsparse_torch.comm.sa import HaloExchange
        from netsparse_torch.comm.su import SparsityUnaware
        from netsparse_torch.comm.twoface import TwoFace

        g.update(Strategy=Strategy, Traffic=Traffic,
                 STRATEGIES={"su": SparsityUnaware, "sa": HaloExchange, "netsparse": NetSparse,
                             "twoface": TwoFace, "ds": DenseShifting})
    return g["STRATEGIES"]


def __getattr__(name: str):
    if name in ("STRATEGIES", "Strategy", "Traffic"):
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_strategy(cls: type[Strategy]) -> type[Strategy]:
    _load()[cls.name] = cls
    return cls


def make_strategy(name: str, plan: Plan, group=None, **options) -> Strategy:
    """The strategy ``name`` for ``plan`` on process group ``group`` (None: WORLD), with its options
    (``netsparse`` also takes its ``fabric`` object here)."""
    strategies = _load()
    if name not in strategies:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(sorted(strategies))}")
    return strategies[name](plan, group=group, **options)
