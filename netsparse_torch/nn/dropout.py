"""Counter-based dropout: the same masks at every world size, partition, strategy and device.

``torch.nn.functional.dropout`` draws from the global RNG stream of the process, so a rank's masks
depend on how many rows it owns and which ranks exist: with dropout on, the same seed trains a
different model at world size 1 and 3. Here every mask element is a hash of its keys, the run's
``seed``, the ``epoch``, the ``layer`` and the element's global (original) node id and feature, so
a node's mask is the same whichever rank holds it. The hash is SplitMix64 (the definition is in
``csrc/keyed_dropout.h``); nothing is drawn from torch's RNG, so the global RNG state is left untouched.

Two implementations compute the same bits:

- ``"cpp"``: the C++ kernel ``_C.keyed_dropout_mask`` (CPU only; one pass, all threads).
- ``"torch"``: int64 tensor ops on ``x``'s own device (:func:`keyed_dropout_mask`), so a CUDA run
  builds its masks on the GPU instead of on the host plus a copy. int64 ``+`` and ``*`` wrap modulo
  2^64 exactly like the kernel's uint64, XOR is bitwise; only the right shift differs (arithmetic on
  int64), so it is masked back to a logical shift. The keep test compares the top 53 bits as integers,
  as the kernel does, so the masks are bit-identical: a seed trains the same model on CPU and CUDA.

``impl="auto"`` (the default) takes ``"cpp"`` for CPU tensors and ``"torch"`` for any other device. The
environment variable ``NETSPARSE_DROPOUT_IMPL`` (``auto``, ``cpp`` or ``torch``) overrides the default,
so a CPU run can execute exactly the code a GPU run executes.
"""

from __future__ import annotations

import functools
import math
import os

import torch

from netsparse_torch.errors import ConfigError
from netsparse_torch.native import _C

IMPL_ENV = "NETSPARSE_DROPOUT_IMPL"
IMPLS = ("auto", "cpp", "torch")

# The constants of csrc/keyed_dropout.h, as the int64 values with the same bits.
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_MIX1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_MIX2 = 0x94D049BB133111EB - (1 << 64)
_ATTENTION_DOMAIN = 0x617474656E74696F

# Rows per chunk are chosen so that one int64 temporary holds at most this many elements (32 MiB):
# the hash needs about three of them at a time, instead of three times the size of x.
CHUNK_ELEMENTS = 1 << 22


def check_p(p: float) -> float:
    """``p`` as a float, or a ConfigError when it is not a probability."""
    if not 0.0 <= float(p) <= 1.0:
        raise ConfigError(f"dropout must be a probability in [0, 1], got {p}")
    return float(p)


def resolve_impl(impl: str | None, device: torch.device) -> str:
    """``"cpp"`` or ``"torch"``: ``impl``, else ``$NETSPARSE_DROPOUT_IMPL``, else ``"auto"`` (C++ for CPU
    tensors, torch ops on their own device for any other)."""
    name = impl if impl is not None else os.environ.get(IMPL_ENV, "auto")
    if name not in IMPLS:
        where = "impl" if impl is not None else f"${IMPL_ENV}"
        raise ConfigError(f"keyed dropout: {where} must be one of {', '.join(IMPLS)}, got {name!r}")
    if name == "auto":
        return "cpp" if device.type == "cpu" else "torch"
    return name


def _lsr(z: torch.Tensor, s: int) -> torch.Tensor:
    """uint64 ``z >> s`` on int64 bits: torch shifts int64 arithmetically, so the ``s`` copies of the
    sign bit that come in from the left are masked off."""
    return (z >> s).bitwise_and_((1 << (64 - s)) - 1)


def _mix64_(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finaliser ``mix64`` (csrc/keyed_dropout.h), in place on int64 bits."""
    z ^= _lsr(z, 30)
    z *= _MIX1
    z ^= _lsr(z, 27)
    z *= _MIX2
    z ^= _lsr(z, 31)
    return z


def _splitmix64(z: torch.Tensor) -> torch.Tensor:
    return _mix64_(z + _GOLDEN)


@functools.lru_cache(maxsize=256)
def _stream(seed: int, epoch: int, layer: int, attention: bool) -> int:
    """``dropout_stream`` (and for attention, the edge domain's stream) as a signed int64."""
    z = _splitmix64(torch.tensor([seed], dtype=torch.int64))
    z = _splitmix64(z ^ epoch)
    z = _splitmix64(z ^ layer)
    if attention:
        z = _splitmix64(z ^ _ATTENTION_DOMAIN)
    return int(z.item())


def _keep_value(p: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``static_cast<scalar_t>(1.0 / (1.0 - p))`` of the kernel: c10's Half and BFloat16 are built from a
    float, so a double reaches them through float32 (two roundings, reproduced here)."""
    keep = torch.tensor(1.0 / (1.0 - p), dtype=torch.float64)
    if dtype in (torch.float16, torch.bfloat16):
        keep = keep.to(torch.float32)
    return keep.to(dtype).to(device)


def _mask_from_keys(keys: torch.Tensor, width: int, p: float, dtype: torch.dtype) -> torch.Tensor:
    """``mask[i, j] = keep if (mix64(keys[i] + (j+1) * golden) >> 11) >= ceil(p * 2^53) else 0``: element
    ``j`` is the ``(j+1)``-th output of the SplitMix64 generator seeded with row ``i``'s key."""
    out = torch.empty(keys.numel(), width, dtype=dtype, device=keys.device)
    if out.numel() == 0:
        return out
    # The kernel's own integer test: u >= p <=> (w >> 11) >= ceil(p * 2^53) (p * 2^53 is exact).
    threshold = math.ceil(math.ldexp(p, 53))
    steps = torch.arange(1, width + 1, dtype=torch.int64, device=keys.device) * _GOLDEN  # wraps mod 2^64
    keep, zero = _keep_value(p, dtype, keys.device), torch.zeros((), dtype=dtype, device=keys.device)
    rows = max(1, CHUNK_ELEMENTS // width)
    for r0 in range(0, keys.numel(), rows):
        words = _mix64_(keys[r0:r0 + rows, None] + steps)
        torch.where(_lsr(words, 11) >= threshold, keep, zero, out=out[r0:r0 + rows])
    return out


def _check_mask_args(p: float, floating: bool, what: str) -> None:
    if not floating:
        raise ValueError(f"{what}: x must be a floating tensor")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{what}: p must be in [0, 1), got {p}")


def keyed_dropout_mask(like: torch.Tensor, node_ids: torch.Tensor, p: float, seed: int, epoch: int, layer: int,
                       impl: str | None = None) -> torch.Tensor:
    """The node mask of ``_C.keyed_dropout_mask`` (``csrc/keyed_dropout.h``), shaped and typed like the
    2-D ``like`` and on its device, computed by ``impl`` (see :func:`resolve_impl`)."""
    if like.dim() != 2 or node_ids.dim() != 1 or node_ids.numel() != like.size(0):
        raise ValueError(f"keyed_dropout: x must be 2-D with one row per node id; got x {tuple(like.shape)} "
                         f"and {node_ids.numel()} node ids")
    if resolve_impl(impl, like.device) == "cpp":
        cpu_like = like.detach() if like.device.type == "cpu" else torch.empty(like.shape, dtype=like.dtype)
        mask = _C.keyed_dropout_mask(cpu_like, node_ids.to("cpu", torch.int64), p, int(seed), int(epoch), int(layer))
        return mask.to(like.device, non_blocking=True)
    _check_mask_args(p, like.is_floating_point(), "keyed_dropout_mask")
    ids = node_ids.to(like.device, torch.int64)
    keys = _splitmix64(ids ^ _stream(int(seed), int(epoch), int(layer), False))
    return _mask_from_keys(keys, like.size(1), p, like.dtype)


def keyed_edge_dropout_mask(like: torch.Tensor, crow: torch.Tensor, col: torch.Tensor, row_ids: torch.Tensor,
                            col_ids: torch.Tensor, p: float, seed: int, epoch: int, layer: int,
                            impl: str | None = None) -> torch.Tensor:
    """The edge mask of ``_C.keyed_edge_dropout_mask`` (``csrc/keyed_dropout.h``) for the CSR pattern
    ``crow``/``col`` whose rows are the targets ``row_ids`` and columns the sources ``col_ids``: shaped
    and typed like ``like`` (nnz x heads) and on its device, computed by ``impl``."""
    if resolve_impl(impl, like.device) == "cpp":
        cpu_like = like.detach() if like.device.type == "cpu" else torch.empty(like.shape, dtype=like.dtype)
        mask = _C.keyed_edge_dropout_mask(cpu_like, crow.cpu(), col.cpu(), row_ids.cpu(), col_ids.cpu(), p,
                                          int(seed), int(epoch), int(layer))
        return mask.to(like.device, non_blocking=True)
    _check_mask_args(p, like.is_floating_point(), "keyed_edge_dropout_mask")
    nnz = col.numel()
    if like.dim() != 2 or like.size(0) != nnz or row_ids.numel() != crow.numel() - 1:
        raise ValueError(f"keyed_edge_dropout_mask: like must be (nnz, heads) = ({nnz}, H) with one row id per CSR "
                         f"row; got like {tuple(like.shape)}, {row_ids.numel()} row ids, {crow.numel() - 1} rows")
    dev = like.device
    crow, col = crow.to(dev, torch.int64), col.to(dev, torch.int64)
    # The target of every nonzero; output_size spares a device-to-host sync on CUDA.
    targets = torch.repeat_interleave(row_ids.to(dev, torch.int64), crow.diff(), output_size=nnz)
    sources = col_ids.to(dev, torch.int64)[col]
    keys = _splitmix64(_splitmix64(sources ^ _stream(int(seed), int(epoch), int(layer), True)) ^ targets)
    return _mask_from_keys(keys, like.size(1), p, like.dtype)


def keyed_dropout(x: torch.Tensor, node_ids: torch.Tensor, p: float, *, seed: int, epoch: int, layer: int,
                  training: bool = True, impl: str | None = None) -> torch.Tensor:
    """Dropout of the rows ``x`` (one per entry of ``node_ids``, the nodes' original ids): an element
    is kept, scaled by ``1/(1-p)``, when the uniform of its keys is ``>= p``.

    Differentiable (the backward multiplies by the same mask, drawn again from its keys), identity
    outside training or for ``p = 0``, zeros for ``p = 1``. The mask is built on ``x``'s device by
    ``impl`` (:func:`resolve_impl`: by default the C++ kernel for CPU tensors, torch ops on the GPU for
    CUDA tensors); both give the same bits.
    """
    p = check_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    return _KeyedDropout.apply(x, node_ids, p, seed, epoch, layer, impl)


class _KeyedDropout(torch.autograd.Function):
    """``x * mask``, whose backward draws the mask again from its keys instead of saving it: the mask is
    a function of (seed, epoch, layer, node id, feature) alone, and a saved mask would be a tensor the
    size of ``x`` held from the forward to the backward (81 MB for a hidden layer of 16 on a rank of
    europe@0.1, the peak of paper-scale training)."""

    @staticmethod
    def forward(ctx, x, node_ids, p, seed, epoch, layer, impl):
        ctx.save_for_backward(node_ids)
        ctx.keys = (p, seed, epoch, layer, impl)
        return keyed_dropout_mask(x.detach(), node_ids, p, seed, epoch, layer, impl).mul_(x)  # in the mask's memory

    @staticmethod
    def backward(ctx, grad):
        (node_ids,) = ctx.saved_tensors
        return keyed_dropout_mask(grad.detach(), node_ids, *ctx.keys).mul_(grad), None, None, None, None, None, None


def keyed_attention_dropout(alpha: torch.Tensor, pattern, p: float, *, seed: int, epoch: int, layer: int,
                            training: bool = True, impl: str | None = None) -> torch.Tensor:
    """Dropout of attention coefficients ``alpha`` ``(nnz, heads)`` on an
    :class:`~netsparse_torch.nn.dist_graph.AttentionPattern`: the element of edge (source ``j``, target
    ``i``, both original node ids) and head ``h`` is kept, scaled by ``1/(1-p)``, when the uniform of
    ``(seed, epoch, layer, j, i, h)`` is ``>= p`` (``_C.keyed_edge_dropout_mask``). An edge has the same
    mask on whichever rank holds its target, in whichever column of the gathered matrix its source
    lands. A duplicate edge is one nonzero (with multiplicity 2), so both copies share one mask. The
    mask is built on ``alpha``'s device by ``impl``, as in :func:`keyed_dropout`.
    """
    p = check_p(p)
    if not training or p == 0.0:
        return alpha
    if p == 1.0:
        return alpha * 0.0
    a = pattern.a
    mask = keyed_edge_dropout_mask(alpha.detach(), a.crow, a.col, pattern.row_ids, pattern.col_ids, p, seed, epoch,
                                   layer, impl)
    return alpha * mask
