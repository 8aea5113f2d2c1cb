"""``stats=links`` of one ``netsparse-simulate`` case: the option checked in one line, and the main run's
link statistics kept while :func:`hw_models.analysis.analyze` runs the simulator (torch-free)."""

from __future__ import annotations

from omegaconf import DictConfig

from hw_models.link_stats import AUTOMATIC, LinkSeries, cxx_bin_ps
from hw_models.simulator import check_mechanisms
from netsparse_torch.errors import ConfigError


def bin_ps(cfg: DictConfig) -> int | str | None:
    """The simulator's ``link_stats_bin_ps`` for ``stats`` and ``stats_bin_ns`` (``None``: no statistics)."""
    stats, ns = cfg.get("stats"), cfg.get("stats_bin_ns")
    if stats is None:
        if ns is not None:
            raise ConfigError(f"stats_bin_ns={ns} applies to stats=links; add stats=links or drop it")
        return None
    if stats != "links":
        raise ConfigError(f"stats={stats!r} is not a statistic the simulator records; choose stats=links (or null)")
    if str(cfg.get("link_layer") or "packet") != "packet":
        raise ConfigError("stats=links covers packet links; with link_layer=flit the report's link_layer block "
                          "has the flit links' totals")
    if ns is None:
        return AUTOMATIC
    if isinstance(ns, bool) or not isinstance(ns, (int, float)) or not ns * 1000 >= 1:
        raise ConfigError(f"stats_bin_ns must be a bin width of at least 0.001 ns (1 ps), got {ns!r}")
    return cxx_bin_ps(round(ns * 1000))


def recorder(cfg: DictConfig) -> Recorder | None:
    """The recorder of ``stats=links`` (``None`` without it); a bad option fails here, before any work."""
    width = bin_ps(cfg)
    if width is None:
        return None
    mechanisms = cfg.get("mechanisms")
    return Recorder(width, dict(mechanisms) if mechanisms is not None else None)


class Recorder:
    """Wraps a simulator (:meth:`wrap`) to record the link statistics of the run with the main run's
    mechanisms (the ablation's stages run without them)."""

    def __init__(self, bin_ps: int | str, mechanisms: dict | None) -> None:
        self.simulator, self.bin_ps = None, bin_ps
        self.main = check_mechanisms(mechanisms)
        self.series: LinkSeries | None = None

    def wrap(self, simulator) -> Recorder:
        self.simulator = simulator
        return self

    def __call__(self, a, w, params, k, kernel, mechanisms, **kw):
        if self.series is not None or dict(mechanisms) != self.main:
            return self.simulator(a, w, params, k, kernel, mechanisms, **kw)
        run = self.simulator(a, w, params, k, kernel, mechanisms, link_stats_bin_ps=self.bin_ps, **kw)
        self.series = run.link_stats
        return run
