"""Build the two C++ extensions: ``hw_models._C`` (hardware units, simulator core, graph analogs; plain
pybind11, no torch) and ``netsparse_torch._C`` (the CPU tensor kernels, linked against torch)."""

import glob
import os
import tempfile

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

HERE = os.path.dirname(os.path.abspath(__file__))


def sources(*folders: str) -> list[str]:
    return sorted(os.path.relpath(p, HERE) for f in folders for p in glob.glob(os.path.join(HERE, f, "*.cpp")))


# The hardware models need no torch: the units, the simulator and the graph analogs are plain C++ behind
# pybind11 (torch's bundled copy of its headers), so `netsparse-simulate` and hw_models load them without
# torch's 400 MB of shared libraries. The kernels take and return tensors and link against torch.
HW_SOURCES = sources("csrc/bind", "csrc/units", "csrc/sim", "csrc/graph")
KERNEL_SOURCES = sources("csrc")

# OpenMP is what makes at::parallel_for (the kernels) and the graph generators' parallel_chunks
# (csrc/graph/parallel.h) parallel: without -fopenmp their pragmas are ignored and every loop runs on one
# thread.
#
# -g0: Python's own CFLAGS carry -g, and debug information for torch's and pybind11's templates more
# than doubles the build (spmm.cpp 37 s -> 15 s, objects 30x smaller); `make install` compiles from
# scratch on every fresh clone, so this is most of CI's install step.
FLAGS = ["-g0", "-O3", "-std=c++17", "-fopenmp", "-Wall", "-Wno-unused-function", "-Wno-c++20-extensions"]

# `make install` builds the extension once, in place, with `build_ext --inplace` (ninja keeps its objects
# in build/ for incremental rebuilds); it sets NETSPARSE_NO_EXTENSION=1 for its `pip install -e .` so
# that pip does not compile the same 26 files a second time in a throwaway directory.
EXTENSIONS = [] if os.environ.get("NETSPARSE_NO_EXTENSION") == "1" else [
    Extension(
        "hw_models._C",
        HW_SOURCES,
        include_dirs=[os.path.join(HERE, "csrc"), *include_paths()[:1]],
        extra_compile_args=FLAGS,
        extra_link_args=["-fopenmp"],
        language="c++",
    ),
    CppExtension(
        "netsparse_torch._C",
        KERNEL_SOURCES,
        include_dirs=[os.path.join(HERE, "csrc")],
        extra_compile_args=FLAGS,
        extra_link_args=["-fopenmp"],
    ),
]


STUBS = ("switch_pb2.py", "switch_pb2_grpc.py")


def generate_stubs() -> None:
    """Runs protoc (grpcio-tools, a build requirement) on switch.proto into netsparse_torch/switch_service/.

    The only place the gRPC stubs are made: they are gitignored and never generated at import. Written
    to a temporary directory first and moved in place with ``os.replace``, so a process importing the
    package during a rebuild never sees half a file."""
    from grpc_tools import protoc

    # The repository root is protoc's import root, so the grpc stub imports netsparse_torch.switch_service.switch_pb2.
    proto = os.path.join("netsparse_torch", "switch_service", "switch.proto")
    with tempfile.TemporaryDirectory(dir=HERE) as tmp:
        rc = protoc.main(["grpc_tools.protoc", f"-I{HERE}", f"--python_out={tmp}", f"--grpc_python_out={tmp}",
                          os.path.join(HERE, proto)])
        if rc != 0:
            raise RuntimeError(f"protoc failed ({rc}) on {proto}")
        for name in STUBS:
            os.replace(os.path.join(tmp, os.path.dirname(proto), name),
                       os.path.join(HERE, os.path.dirname(proto), name))


class BuildPyWithStubs(build_py):
    """``pip install [-e] .``: the stubs exist before the modules are collected (editable installs run
    this command too)."""

    def run(self):
        generate_stubs()
        super().run()


class BuildExtWithStubs(BuildExtension.with_options(use_ninja=True)):
    """``setup.py build_ext --inplace`` (the second step of ``make install``) regenerates them too, so
    a fresh clone has them whichever step runs, and an edited switch.proto is picked up."""

    def run(self):
        generate_stubs()
        super().run()


setup(
    packages=find_packages(include=["netsparse_torch", "netsparse_torch.*", "hw_models", "hw_models.*"])
    + ["netsparse_torch.configs"],
    package_dir={"netsparse_torch.configs": "configs"},
    package_data={"netsparse_torch.configs": ["*.yaml", "*/*.yaml"],
                  "netsparse_torch.switch_service": ["switch.proto"]},
    ext_modules=EXTENSIONS,
    cmdclass={"build_ext": BuildExtWithStubs, "build_py": BuildPyWithStubs},
)
