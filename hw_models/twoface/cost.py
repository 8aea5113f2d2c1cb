"""The Two-Face cost model (Two-Face §5.1, Table 3): its coefficients, whether the machine overlaps the
synchronous and asynchronous channels, and the JSON profile ``netsparse-calibrate`` writes.

There is no implicit profile: ``strategy=twoface`` uses the file named by ``strategy.profile=`` or the
documented defaults (:data:`DEFAULT_SOURCE`), and says which in its report.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from hw_models.errors import ConfigError

#: How the two channels combine into a node's communication time. ``max``: they proceed concurrently,
#: the node takes the longer one (Two-Face §5.1, its cluster and our modeled one); ``sum``: they share
#: one channel (measured on a machine where both exchanges run on the same cores).
OVERLAPS = ("max", "sum")
#: Where the coefficients come from when no profile is given.
DEFAULT_SOURCE = "defaults: Two-Face Table 3 coefficients, overlap=max (Two-Face §5.1)"


@dataclass(frozen=True)
class Coefficients:
    """Seconds per dense value (``beta``, ``gamma``) or per stripe/transfer (``alpha``, ``kappa``).

    Defaults: Two-Face Table 3. ``beta_s``/``alpha_s``: synchronous (dense stripe) transfer,
    ``beta_a``/``alpha_a``: asynchronous (one-sided row fetch) transfer, ``gamma_a``/``kappa_a``:
    asynchronous (one-sided SpMM) computation.
    """

    beta_s: float = 1.95e-10
    alpha_s: float = 1.36e-6
    beta_a: float = 3.61e-9
    alpha_a: float = 1.02e-5
    gamma_a: float = 2.07e-8
    kappa_a: float = 8.72e-9

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"Two-Face coefficient {f.name} must be a finite number >= 0, got {v!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def save(self, path: str | Path, extra: dict | None = None) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"coefficients": self.to_dict(), **(extra or {})}, indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Coefficients:
        """Read a calibration profile; a corrupt or incomplete file raises :class:`ConfigError`."""
        try:
            data = json.loads(Path(path).read_text())
            coeffs = data["coefficients"]
            names = {f.name for f in fields(cls)}
            if not isinstance(coeffs, dict) or set(coeffs) != names:
                raise KeyError(f"expected exactly the keys {sorted(names)}")
            return cls(**{k: float(coeffs[k]) for k in names})
        except (ConfigError, OSError, ValueError, KeyError, TypeError) as exc:
            why = exc if isinstance(exc, ConfigError) else repr(exc)  # ours already reads as a sentence
            raise ConfigError(f"corrupt Two-Face calibration file {path}: {why}; "
                              "re-run netsparse-calibrate or delete it") from None



@dataclass(frozen=True)
class CostModel:
    """What the §5.1 classifier needs: the coefficients, how the channels combine (:data:`OVERLAPS`),
    and where both came from (a profile's path, or :data:`DEFAULT_SOURCE`)."""

    coefficients: Coefficients = Coefficients()
    overlap: str = "max"
    source: str = DEFAULT_SOURCE

    def __post_init__(self):
        check_overlap(self.overlap)

    @classmethod
    def load(cls, path: str | Path) -> CostModel:
        """A ``netsparse-calibrate`` profile: its coefficients and its measured ``overlap``."""
        coeffs = Coefficients.load(path)
        overlap = json.loads(Path(path).read_text()).get("overlap")
        if overlap not in OVERLAPS:
            raise ConfigError(f"Two-Face calibration file {path} has no valid 'overlap' (max or sum, got "
                              f"{overlap!r}); re-run netsparse-calibrate to measure it")
        return cls(coeffs, overlap, str(path))

    @classmethod
    def resolve(cls, profile: str | Path | None = None) -> CostModel:
        """The cost model ``strategy=twoface`` uses: the named profile, else the documented defaults."""
        return cls.load(profile) if profile else cls()


def check_overlap(overlap: str) -> str:
    if overlap not in OVERLAPS:
        raise ConfigError(f"Two-Face overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}")
    return overlap
