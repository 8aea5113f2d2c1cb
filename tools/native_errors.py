"""Does an error raised in the C++ extension reach Python as one ValueError on this machine?

On the first GPU machine (an H200 image whose C++ compiler is /opt/gcc/bin/g++, torch 2.11) each such
error crashed the process with a segmentation fault. ``make gpu-check`` runs this before its tests and
records the compilers involved; when the call crashes and ``cuda-gdb`` is there (it debugs host code
too), the native backtrace of the crash.

    python3 tools/native_errors.py            # prints one JSON line; rc 0 when the error is a ValueError
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

#: A C++ kernel given a column index outside B's rows must raise ValueError, not crash.
CALL = ("import torch; from netsparse_torch.native import _C; "
        "_C.spmm(torch.tensor([0, 1]), torch.tensor([6]), torch.ones(1), torch.randn(6, 4))")
PROBE = f"try:\n    {CALL.replace('; ', chr(10) + '    ')}\nexcept ValueError:\n    print('ValueError')"


def compilers() -> dict:
    import torch

    cxx = os.environ.get("CXX") or shutil.which("c++")  # what torch's extension build compiles with
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[:1] if cxx else []
    config = torch.__config__.show()
    gcc = next((line.strip(" -") for line in config.splitlines() if line.strip(" -").startswith("GCC")), None)
    words = config.replace(",", " ").split()
    compiler = next((w.split("=", 1)[1] for w in words if w.startswith("CXX_COMPILER=")), None)
    return {"c++": cxx, "c++_version": version[0] if version else None,
            "torch_built_with": [gcc, compiler]}


def backtrace() -> list[str] | None:
    gdb = shutil.which("cuda-gdb") or shutil.which("gdb")
    if gdb is None:
        return None
    out = subprocess.run([gdb, "-q", "-batch", "-ex", "run", "-ex", "bt 25", "--args", sys.executable, "-c", CALL],
                         capture_output=True, text=True, timeout=120).stdout
    return [line for line in out.splitlines() if line.startswith("#")]


def main() -> int:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    ok = run.returncode == 0 and run.stdout.strip() == "ValueError"
    result = {"value_error_reaches_python": ok, "rc": run.returncode, "stderr_tail": run.stderr.splitlines()[-5:],
              "compilers": compilers()}
    if run.returncode < 0:  # killed by a signal: where
        result["backtrace"] = backtrace()
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
