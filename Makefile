# `make demo` and `make test` work on a fresh machine: both go through `make install`, which creates
# .venv, installs torch 2.13.0 only when no torch is present (the CPU wheel on disk), installs the other
# dependencies under a constraint that pins the torch already there, and builds the C++ extension.
PY      := .venv/bin/python
STAMP   := .venv/.netsparse-installed
EXT     := build/.ext-built
SOURCES := $(shell find csrc -name '*.cpp' -o -name '*.h') setup.py netsparse_torch/switch/switch.proto
JOBS    ?= 2
# pytest-xdist workers: most tests wait on spawned ranks and servers, so two workers fill two cores.
TEST_JOBS ?= 2

# make gpu-check runs on a GPU machine with its own python3 (torch, triton and PyG installed, no network):
# no .venv there, whose CPU torch would replace the machine's CUDA build. GPU_DATA: the data folder
# (default $NETSPARSE_DATA or ../shared/data); GPU_OUT: where its JSON and the benchmarks' go. docs/gpu.md.
GPU_PY   ?= python3
GPU_DATA ?= $(or $(NETSPARSE_DATA),../shared/data)
GPU_OUT  ?= benchmarks/results/gpu

.PHONY: install demo test soak lint bench clean gpu-check gpu-wheels gpu-data

install: $(EXT)

$(STAMP): pyproject.toml requirements.txt
	@test -x $(PY) || python3 -m venv .venv
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	@$(PY) -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > .venv/torch-constraint.txt
	$(PY) -m pip install -q -c .venv/torch-constraint.txt -r requirements.txt
	NETSPARSE_NO_EXTENSION=1 $(PY) -m pip install -q -c .venv/torch-constraint.txt --no-build-isolation --no-deps -e .
	@touch $@

# Incremental rebuild of the extension when a C++ source changes (ninja keeps objects in build/); the same
# step regenerates the gRPC stubs from switch.proto (setup.py), so an edited .proto is picked up here.
# Quiet: the compiler's command lines go to build/build.log (VERBOSE=1 shows them); a failed build prints
# the log's last lines.
$(EXT): $(STAMP) $(SOURCES)
	@mkdir -p build
	@echo "building the C++ extension (MAX_JOBS=$(JOBS); log: build/build.log)"
	@if [ -n "$(VERBOSE)" ]; then flock build/.lock env MAX_JOBS=$(JOBS) $(PY) setup.py -q build_ext --inplace; \
	else flock build/.lock env MAX_JOBS=$(JOBS) $(PY) setup.py -q build_ext --inplace > build/build.log 2>&1 \
	  || { tail -n 40 build/build.log; echo "the C++ build failed: the whole log is build/build.log"; exit 1; }; fi
	@touch $@

# One run that shows what the package is for: Cora trained by 2 ranks through the NetSparse data path
# (RIG units, real packets), the same gathers modeled on an 8-node leaf-spine cluster (a size that fits a
# 2,708-node graph), and curves.png with its evaluations.
DEMO := strategy=netsparse cluster=leafspine128 cluster.nodes=8 cluster.rack_size=4 epochs=100 eval_every=5

demo: install
	$(PY) -m netsparse_torch.cli.train $(DEMO)

test: install
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile -m "not soak" tests

# The fault-injection soak (10 SIGKILLs of a torchrun worker at random epochs, ~10 minutes): not in make test.
soak: install
	$(PY) -m pytest -q -m soak tests

lint: install
	$(PY) -m ruff check netsparse_torch hw_models tests benchmarks examples tools
	.venv/bin/lint-imports

gpu-check:
	$(GPU_PY) tools/gpu_check.py --data $(GPU_DATA) --out-dir $(GPU_OUT)

# Wheels of what a GPU machine's image lacks (docs/gpu.md), for Python 3.12 on x86-64, into .whl/.
gpu-wheels:
	python3 tools/gpu_wheels.py

# The data gpu-check reads (about 5 MB), copied into .gpu-data/ to travel with the repository.
gpu-data:
	python3 tools/gpu_check.py --data $(GPU_DATA) --prepare-data .gpu-data

bench: install
	$(PY) benchmarks/spmm_strategies.py

clean:
	rm -rf build .venv *.egg-info netsparse_torch/_C*.so netsparse_torch/switch/*_pb2*.py
