"""The compiled hardware models, ``hw_models._C``: the simulator core and the graph analogs (the units'
binding is :mod:`hw_models.unit_binding`, behind :mod:`hw_models.unit_args`).

Plain C++ behind pybind11, with no torch (``setup.py``), so importing it is cheap and the modules that
drive it import it at their top. A missing build is one :class:`NotBuiltError` that names the fix."""

from hw_models.errors import NotBuiltError

try:
    from hw_models._C import graph, sim
except ImportError as e:
    raise NotBuiltError.extension("hw_models._C") from e

__all__ = ["graph", "sim"]
