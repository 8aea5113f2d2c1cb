"""Build the C++ extension ``netsparse_torch._C`` (hardware units, simulator core, CPU kernels)."""

import glob
import os

from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.cpp"),
                                                            recursive=True))

# OpenMP is what makes at::parallel_for parallel inside an extension: without -fopenmp its pragma
# is ignored and every loop runs on one thread.
FLAGS = ["-O3", "-std=c++17", "-fopenmp", "-Wall", "-Wno-unused-function", "-Wno-c++20-extensions"]

setup(
    packages=find_packages(include=["netsparse_torch", "netsparse_torch.*", "hw_models", "hw_models.*"])
    + ["netsparse_torch.configs"],
    package_dir={"netsparse_torch.configs": "configs"},
    package_data={"netsparse_torch.configs": ["*.yaml", "*/*.yaml"]},
    ext_modules=[
        CppExtension(
            "netsparse_torch._C",
            SOURCES,
            include_dirs=[os.path.join(HERE, "csrc")],
            extra_compile_args=FLAGS,
            extra_link_args=["-fopenmp"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
