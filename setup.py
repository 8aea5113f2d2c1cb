"""Build the C++ extension ``netsparse_torch._C`` (hardware units, simulator core, CPU kernels)."""

import glob
import importlib.util
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.cpp"),
                                                            recursive=True))

# OpenMP is what makes at::parallel_for parallel inside an extension: without -fopenmp its pragma
# is ignored and every loop runs on one thread.
FLAGS = ["-O3", "-std=c++17", "-fopenmp", "-Wall", "-Wno-unused-function", "-Wno-c++20-extensions"]

# `make install` builds the extension once, in place, with `build_ext --inplace` (ninja keeps its objects
# in build/ for incremental rebuilds); it sets NETSPARSE_NO_EXTENSION=1 for its `pip install -e .` so
# that pip does not compile the same 26 files a second time in a throwaway directory.
EXTENSIONS = [] if os.environ.get("NETSPARSE_NO_EXTENSION") == "1" else [
    CppExtension(
        "netsparse_torch._C",
        SOURCES,
        include_dirs=[os.path.join(HERE, "csrc")],
        extra_compile_args=FLAGS,
        extra_link_args=["-fopenmp"],
    )
]


class BuildPyWithStubs(build_py):
    """Generates the switch service's gRPC stubs from switch.proto before the modules are collected
    (this command also runs for editable installs)."""

    def run(self):
        path = os.path.join(HERE, "netsparse_torch", "switch", "stubs.py")
        spec = importlib.util.spec_from_file_location("netsparse_switch_stubs", path)
        stubs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(stubs)
        stubs.generate()
        super().run()


setup(
    packages=find_packages(include=["netsparse_torch", "netsparse_torch.*", "hw_models", "hw_models.*"])
    + ["netsparse_torch.configs"],
    package_dir={"netsparse_torch.configs": "configs"},
    package_data={"netsparse_torch.configs": ["*.yaml", "*/*.yaml"], "netsparse_torch.switch": ["switch.proto"]},
    ext_modules=EXTENSIONS,
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True), "build_py": BuildPyWithStubs},
)
