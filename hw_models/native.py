"""The compiled hardware models, ``hw_models._C``: the units, the simulator core and the graph analogs.

Plain C++ behind pybind11, with no torch (``setup.py``), so importing it is cheap and the modules that
drive it import it at their top. A missing build is one :class:`NotBuiltError` that names the fix."""

from hw_models.errors import NotBuiltError

try:
    from hw_models._C import graph, sim, units
except ImportError as e:
    raise NotBuiltError.extension("hw_models._C") from e

__all__ = ["graph", "sim", "units"]
