"""The figures a test's code under test saves, as the very Figures written (their artists outlive
``plt.close``)."""

from contextlib import contextmanager
from pathlib import Path

from netsparse_torch.report import plots


def record_figures(monkeypatch, modules) -> dict:
    """``{file name: (fig, axes)}``, filled as ``modules`` save figures through ``plots.figure``."""
    figures: dict = {}
    real = plots.figure

    @contextmanager
    def recording(path, **kwargs):
        with real(path, **kwargs) as (fig, axes):
            figures[Path(path).name] = (fig, axes)
            yield fig, axes

    for module in modules:
        monkeypatch.setattr(module, "figure", recording)
    return figures
