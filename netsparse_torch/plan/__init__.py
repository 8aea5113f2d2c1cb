"""The per-rank communication plan, computed once per graph and reused by every layer and epoch."""

from netsparse_torch.plan.plan import Plan, build_plan

__all__ = ["Plan", "build_plan"]
