"""The C++ units' binding, ``hw_models._C.units``.

Only :mod:`hw_models.unit_args` imports this module (an import-linter contract, ``unit_door`` in
``pyproject.toml``): every hardware number reaches a unit through that one door, and every other
module takes the units from :mod:`hw_models.units`. A missing build is one :class:`NotBuiltError`."""

from hw_models.errors import NotBuiltError

try:
    from hw_models._C import units
except ImportError as e:
    raise NotBuiltError.extension("hw_models._C") from e

__all__ = ["units"]
