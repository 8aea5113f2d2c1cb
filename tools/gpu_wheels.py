"""``make gpu-wheels``: download the wheels a GPU machine without network lacks into ``.whl/``.

    python3 tools/gpu_wheels.py [--python 3.12] [--dest .whl]

The GPU machines' image holds torch, triton, PyG and most of what the tests use, but not Hydra, its
parser runtime, the gRPC code generator or pymetis. ``make gpu-check`` installs every wheel in ``.whl/``
into a private folder before it starts. The versions are those of this machine's ``.venv`` (what CI
tests), so the GPU run uses the same ones; grpcio and protobuf travel with grpcio-tools because the
stubs it generates check that the runtime is at least as new as the generator.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hydra-core", "omegaconf", "grpcio", "grpcio-tools", "protobuf", "pymetis")
#: Published only as a source archive: built here into a pure-Python wheel.
SOURCE_ONLY = ("antlr4-python3-runtime",)
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28, 31, 34)] + ["manylinux2014_x86_64"]


def pinned(name: str) -> str:
    try:
        return f"{name}=={metadata.version(name)}"
    except metadata.PackageNotFoundError:
        sys.exit(f"gpu-wheels: {name} is not installed here: run `make install` first (its versions are pinned)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default="3.12", help="the GPU machine's Python (its image has 3.12)")
    ap.add_argument("--dest", type=Path, default=ROOT / ".whl")
    args = ap.parse_args()
    args.dest.mkdir(exist_ok=True)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", args.python, "--implementation", "cp", *platforms, "-d", str(args.dest),
                    *(pinned(p) for p in PACKAGES)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(args.dest),
                    *(pinned(p) for p in SOURCE_ONLY)], check=True)
    wheels = sorted(p.name for p in args.dest.glob("*.whl"))
    size = sum(p.stat().st_size for p in args.dest.glob("*.whl"))
    print(f"{len(wheels)} wheels in {args.dest} ({size / 2**20:.1f} MiB): {', '.join(wheels)}")


if __name__ == "__main__":
    main()
