"""Counter-based dropout: the same masks at every world size, partition and strategy.

``torch.nn.functional.dropout`` draws from the global RNG stream of the process, so a rank's masks
depend on how many rows it owns and which ranks exist: with dropout on, the same seed trains a
different model at world size 1 and 3. Here every mask element is a hash of its keys, the run's
``seed``, the ``epoch``, the ``layer`` and the element's global (original) node id and feature, so
a node's mask is the same whichever rank holds it. The hash is SplitMix64 (the C++ kernel
``_C.keyed_dropout_mask``, see ``csrc/keyed_dropout.h``); nothing is drawn from torch's RNG, so the
global RNG state is left untouched.
"""

from __future__ import annotations

import torch

from netsparse_torch import _C
from netsparse_torch.errors import ConfigError


def check_p(p: float) -> float:
    """``p`` as a float, or a ConfigError when it is not a probability."""
    if not 0.0 <= float(p) <= 1.0:
        raise ConfigError(f"dropout must be a probability in [0, 1], got {p}")
    return float(p)


def keyed_dropout(x: torch.Tensor, node_ids: torch.Tensor, p: float, *, seed: int, epoch: int, layer: int,
                  training: bool = True) -> torch.Tensor:
    """Dropout of the rows ``x`` (one per entry of ``node_ids``, the nodes' original ids): an element
    is kept, scaled by ``1/(1-p)``, when the uniform of its keys is ``>= p``.

    Differentiable (the backward multiplies by the same mask), identity outside training or for
    ``p = 0``, zeros for ``p = 1``. The mask is computed on CPU and moved to ``x``'s device.
    """
    p = check_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    if x.dim() != 2 or node_ids.dim() != 1 or node_ids.numel() != x.size(0):
        raise ValueError(f"keyed_dropout: x must be 2-D with one row per node id; got x {tuple(x.shape)} "
                         f"and {node_ids.numel()} node ids")
    like = x.detach() if x.device.type == "cpu" else torch.empty(x.shape, dtype=x.dtype)
    mask = _C.keyed_dropout_mask(like, node_ids.to("cpu", torch.int64), p, int(seed), int(epoch), int(layer))
    return x * mask.to(x.device, non_blocking=True)


def keyed_attention_dropout(alpha: torch.Tensor, pattern, p: float, *, seed: int, epoch: int, layer: int,
                            training: bool = True) -> torch.Tensor:
    """Dropout of attention coefficients ``alpha`` ``(nnz, heads)`` on an
    :class:`~netsparse_torch.nn.dist_graph.AttentionPattern`: the element of edge (source ``j``, target
    ``i``, both original node ids) and head ``h`` is kept, scaled by ``1/(1-p)``, when the uniform of
    ``(seed, epoch, layer, j, i, h)`` is ``>= p`` (``_C.keyed_edge_dropout_mask``). An edge has the same
    mask on whichever rank holds its target, in whichever column of the gathered matrix its source
    lands. A duplicate edge is one nonzero (with multiplicity 2), so both copies share one mask.
    """
    p = check_p(p)
    if not training or p == 0.0:
        return alpha
    if p == 1.0:
        return alpha * 0.0
    a = pattern.a
    like = alpha.detach() if alpha.device.type == "cpu" else torch.empty(alpha.shape, dtype=alpha.dtype)
    mask = _C.keyed_edge_dropout_mask(like, a.crow.cpu(), a.col.cpu(), pattern.row_ids.cpu(), pattern.col_ids.cpu(),
                                      p, int(seed), int(epoch), int(layer))
    return alpha * mask.to(alpha.device, non_blocking=True)
