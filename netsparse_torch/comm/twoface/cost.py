"""The Two-Face cost model coefficients (Two-Face §5.1, Table 3) and their JSON profile."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from netsparse_torch.errors import ConfigError

#: Where ``netsparse-calibrate`` writes the profile and ``strategy=twoface`` looks for it
#: (own choice; override with ``NETSPARSE_TWOFACE_PROFILE`` or the strategy option ``profile``).
DEFAULT_PROFILE = Path(os.environ.get("NETSPARSE_TWOFACE_PROFILE",
                                      Path.home() / ".cache" / "netsparse_torch" / "twoface_profile.json"))


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

    @classmethod
    def resolve(cls, profile: str | Path | None = None) -> tuple[Coefficients, str]:
        """The coefficients ``strategy=twoface`` uses: the given profile, else the default profile when
        present, else Table 3. Returns them with where they came from."""
        if profile:
            return cls.load(profile), str(profile)
        if DEFAULT_PROFILE.exists():
            return cls.load(DEFAULT_PROFILE), str(DEFAULT_PROFILE)
        return cls(), "Two-Face Table 3"
