"""Which edge weights a layer call may pass: the ones its :class:`DistGraph` was built with.

A PyG layer takes its edge weights at every call (``conv(x, edge_index, edge_weight)``), while a
DistGraph normalises its adjacency once, from the weights it was built with. So a call's weights are
used when they are the graph's and refused otherwise (one :class:`ConfigError`), never silently
replaced. The graph's weights are recognised as:

- the very tensor the DistGraph took from the PyG ``Data`` (``data.edge_weight``, else a one-weight
  ``data.edge_attr``), not modified in place since (its version counter is unchanged): what PyG's
  examples pass at every call, checked in O(1);
- any tensor with the same values, one weight per edge in the same edge order, on any device and in
  any float dtype (compared by a SHA-256 digest of the values in float64, O(edges) once per new tensor);
- ``dg.edge_weight`` itself, which for a graph built from a ``Graph``, a partitioned dataset or a
  ``Shard`` with weights is a :class:`GraphWeights` marker (no rank holds every edge's weight there).
"""

from __future__ import annotations

import hashlib

import torch

from netsparse_torch.errors import ConfigError


class GraphWeights:
    """``dg.edge_weight`` of a DistGraph whose weights live in its shard (built from a ``Graph``, a
    partitioned dataset or a ``Shard`` with weights): pass it to a layer to aggregate with them."""

    def __repr__(self) -> str:
        return "<the DistGraph's edge weights>"


def _digest(t: torch.Tensor) -> str:
    values = t.detach().reshape(-1).to("cpu", torch.float64).contiguous()
    return hashlib.sha256(values.numpy().tobytes()).hexdigest()


class GraphWeightsCheck:
    """Recognises a DistGraph's edge weights in a layer call (the module docstring says how).

    ``source``: ``(attribute, tensor)`` of the PyG ``Data`` the graph was built from, or None;
    ``weighted``: whether the graph has weights at all.
    """

    def __init__(self, source: tuple[str, torch.Tensor] | None, weighted: bool):
        self.source = None if source is None else source[0]
        #: What ``dg.edge_weight`` returns: the Data's tensor, a :class:`GraphWeights`, or None.
        self.handle = source[1] if source is not None else (GraphWeights() if weighted else None)
        self._digest = None if source is None else _digest(source[1])
        self._numel = None if source is None else source[1].numel()
        self._seen: tuple[object, int] | None = None if source is None else (source[1], source[1]._version)

    def uses(self, edge_weight, layer: str) -> bool:
        """Whether a call of ``layer`` with ``edge_weight`` aggregates with the graph's weights: False
        for None, True for the graph's; anything else is one :class:`ConfigError`."""
        if edge_weight is None:
            return False
        if self.handle is None:
            raise ConfigError(f"{layer}: edge weights given, but the DistGraph was built without any; build it "
                              "from a PyG Data that carries them (data.edge_weight or data.edge_attr)")
        if isinstance(edge_weight, GraphWeights):
            if edge_weight is self.handle:
                return True
            raise ConfigError(f"{layer}: these edge weights are another DistGraph's; pass this graph's dg.edge_weight")
        if not isinstance(edge_weight, torch.Tensor):
            raise ConfigError(f"{layer}: edge weights must be a tensor or dg.edge_weight, got "
                              f"{type(edge_weight).__name__}")
        if edge_weight.requires_grad:
            raise ConfigError(f"{layer}: edge weights that require gradients are not supported: the DistGraph "
                              "normalises its adjacency once, so no gradient reaches them; pass edge_weight.detach()")
        if self._seen is not None and edge_weight is self._seen[0] and edge_weight._version == self._seen[1]:
            return True
        if self._digest is not None and edge_weight.numel() == self._numel and _digest(edge_weight) == self._digest:
            self._seen = (edge_weight, edge_weight._version)
            return True
        built = f"data.{self.source}" if self.source else "the graph's weights (pass dg.edge_weight)"
        raise ConfigError(f"{layer}: these edge weights are not the ones the DistGraph was built with ({built}); "
                          "the normalised adjacency is computed once per graph, so build a DistGraph from a Data "
                          "that carries these weights")
