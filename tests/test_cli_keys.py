"""Every Hydra CLI refuses what it does not read (one check, netsparse_torch/config_keys.py):
netsparse-simulate and netsparse-partition took ``+key=`` typos silently (``+node=16`` simulated 128
nodes, exit 0) and printed Hydra's multi-line "Could not override" for plain ones (exit 1). Now each is
one line ``<prog>: error: ...`` naming the closest key, exit 2, before the heavy imports; Hydra's own
errors are one line too; and the command lines of the docs still pass."""

import os
import re
import shlex
import subprocess
import sys

import pytest
from cli import ROOT, run_cli

from netsparse_torch.config_check import config_dir
from netsparse_torch.config_keys import (
    OTHER_CONFIG_FLAGS,
    PARTITION,
    SIMULATE,
    TRAIN,
    check_command_line,
    check_group_overrides,
    check_override_keys,
)
from netsparse_torch.errors import ConfigError

CLIS = {"train": TRAIN, "simulate": SIMULATE, "partition": PARTITION}


def check(cli, overrides):
    check_group_overrides(overrides, config_dir(), cli)
    check_override_keys(overrides, config_dir(), cli)


@pytest.mark.parametrize("cli, overrides", [
    (SIMULATE, ["+experiment=sensitivity_table8", "matrix=paper:arabic", "assumption=client_units_8,combined"]),
    (SIMULATE, ["matrix=paper:arabic", "k=16", "ablation=false", "+hw.snic.rig_unit_roles=dynamic",
                "+hw.snic.rig_client_units=24"]),
    (SIMULATE, ["batch_size=.inf", "cache_size_bytes=1048576", "+hw.headers.mtu_bytes=9000"]),
    (SIMULATE, ["matrix=synthetic:road", "nodes=16", "rack_size=4", "link_layer=flit", "flit.pool_cycles=0",
                "+synthetic.params.drop=0.1"]),
    (SIMULATE, ["matrix=synthetic", "synthetic.shape=banded", "+synthetic.params.density=0.5", "synthetic.n=500"]),
    (SIMULATE, ["-m", "matrix=x.mtx", "k=1,16", "mechanisms.switch=false", "hydra.sweep.dir=/tmp/x", "~tag"]),
    (SIMULATE, ["strategies=[two_face,snic_sw]", "strong_scaling=[1,2,4]", "snic_sw.slowdown=2"]),
    (TRAIN, ["+experiment=paper_training", "dataset.matrix=uk", "dataset.scale=0.02", "world_size=2"]),
    (PARTITION, ["dataset=mtx", "dataset.path=G.mtx.gz", "partition=metis", "parts=4", "out=DIR", "metis.seed=1"]),
    (PARTITION, ["dataset=synthetic", "dataset.num_nodes=1000", "+dataset.params.avg_degree=12", "out=x"]),
    (PARTITION, ["dataset=partitioned", "dataset.path=DIR", "hydra.run.dir=/tmp/x"]),
])
def test_keys_the_cli_reads_pass(cli, overrides):
    check(cli, overrides)


@pytest.mark.parametrize("cli, overrides, message", [
    (SIMULATE, ["node=16"], "unknown key node; the closest known key is nodes"),
    (SIMULATE, ["+node=16"], "unknown key node; the closest known key is nodes"),
    (SIMULATE, ["+hw.snic.rig_unit=3"], "unknown key hw.snic.rig_unit; the closest known key is hw.snic.rig_units"),
    (SIMULATE, ["hw.snic.rig_units=16"],
     "hw.snic.rig_units is not in the config until you add it: write +hw.snic.rig_units=16"),
    (SIMULATE, ["+nodes=16"], "+nodes=16: nodes is already in the config; set it without the '+': nodes=16"),
    (SIMULATE, ["+synthetic.params.avg_degree=8"], "unknown key synthetic.params.avg_degree"),  # a .mtx matrix
    (SIMULATE, ["matrix=synthetic:road", "+synthetic.params.avg_degree=8"],  # powerlaw's, not road's
     "unknown key synthetic.params.avg_degree"),
    (SIMULATE, ["epochs=3"], "unknown key epochs; no known key is close; the top-level keys are: ablation,"),
    (PARTITION, ["part=2"], "unknown key part; the closest known key is parts"),
    (PARTITION, ["+part=2"], "unknown key part; the closest known key is parts"),
    (PARTITION, ["+dataset.params.avg_degree=3"], "unknown key dataset.params.avg_degree (with dataset=cora)"),
    (PARTITION, ["world_size=2"],
     "unknown key world_size; no known key is close; the top-level keys are: dataset, metis, out, partition, parts"),
    (SIMULATE, ["dataset=cora"],
     "dataset=cora: netsparse-simulate reads no config group dataset; its groups are hw, assumption, +experiment"),
    (SIMULATE, ["experiment=fig12"], "experiment=fig12: experiment is added to the config: write +experiment=fig12"),
    (SIMULATE, ["+hw=table5"], "+hw=table5: hw is already in the config; choose it without the '+': hw=table5"),
    (SIMULATE, ["+experiment=fig99"], "unknown experiment 'fig99'; choose one of fig12,"),
    (PARTITION, ["strategy=sa"], "strategy=sa: netsparse-partition reads no config group strategy; its groups are "
                                 "dataset"),
    (TRAIN, ["+experiment=fig12"], "unknown experiment 'fig12'; choose one of paper_training"),
    (SIMULATE, ["+experiment=paper_training"], "unknown experiment 'paper_training'; choose one of fig12,"),
    (TRAIN, ["experiment=paper_training"],
     "experiment=paper_training: experiment is added to the config: write +experiment=paper_training"),
])
def test_what_the_cli_does_not_read_is_one_error(cli, overrides, message):
    with pytest.raises(ConfigError) as err:
        check(cli, overrides)
    assert str(err.value).startswith(message), str(err.value)


HEAVY = ("torch", "scipy", "hw_models.analysis")


@pytest.mark.parametrize("module, args, line", [
    ("simulate", ["node=16"], "netsparse-simulate: error: unknown key node; the closest known key is nodes"),
    ("simulate", ["+node=16"], "netsparse-simulate: error: unknown key node; the closest known key is nodes"),
    ("partition", ["part=2", "out=x"], "netsparse-partition: error: unknown key part; the closest known key is parts"),
    ("partition", ["+part=2", "out=x"], "netsparse-partition: error: unknown key part; the closest known key is parts"),
])
def test_cli_typo_is_one_line_exit_2_before_heavy_imports(module, args, line):
    """The CLI's main as the console script runs it; what it had imported when it exited goes to stdout."""
    code = (f"import sys\nsys.argv = ['x', *{args!r}]\nfrom netsparse_torch.cli.{module} import main\n"
            f"try:\n    main()\nfinally:\n    print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [line]
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("module, args, line", [
    ("simulate", ["hydra.foo=1"], "netsparse-simulate: error: Could not override 'hydra.foo'; Key 'foo' not in"),
    ("partition", ["-cn", "nope"], "netsparse-partition: error: Cannot find primary config 'nope'"),
    ("train", ["hydra.foo=1"], "netsparse-train: error: Could not override 'hydra.foo'; Key 'foo' not in"),
])
def test_hydra_errors_are_one_line_exit_2(tmp_path, module, args, line):
    proc = run_cli(f"netsparse_torch.cli.{module}", *args, f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(line), proc.stderr[-2000:]


def test_partition_parts_must_be_an_integer():
    from omegaconf import OmegaConf

    from netsparse_torch.cli.partition import run

    with pytest.raises(ConfigError, match="parts must be an integer >= 1, got 'two'"):
        run(OmegaConf.create({"out": "x", "parts": "two"}))


# -- the command lines of the docs -------------------------------------------------------------------
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "configs").rglob("*.yaml"))]
COMMAND = re.compile(r"(?:netsparse-|netsparse_torch\.cli\.)(train|simulate|partition)\b(.*)")


def documented_command_lines() -> list[tuple[str, str, list[str]]]:
    """(where, CLI, overrides) of each command line in the docs and configs (continuation lines joined;
    placeholders such as ``<name>`` and ``[a | b]``, and prose, left out)."""
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = COMMAND.search(line)
            if not m:
                continue
            rest, j = m.group(2), i
            while rest.rstrip().endswith("\\") and j + 1 < len(lines):
                j += 1
                rest = rest.rstrip()[:-1] + " " + lines[j].lstrip("# ")
            rest = rest.split("#")[0].split("`")[0]
            try:
                words = shlex.split(rest)
            except ValueError:
                words = rest.split()
            overrides = [_as_bash_passes(w) for w in words if "=" in w and _is_override(w)]
            if overrides:  # with Hydra's flags that compose another config, and their folders
                flags = [f for k, w in enumerate(words) if w.split("=")[0] in OTHER_CONFIG_FLAGS
                         for f in ([w] if "=" in w else words[k:k + 2])]
                found.append((f"{path.relative_to(ROOT)}:{i + 1}", m.group(1), flags + overrides))
    return found


def _is_override(word: str) -> bool:
    """Not a flag, a placeholder (``<name>``, ``a | b``, ``...``), a fragment of ``[a | b]`` or prose ("x=1,",
    "(resume=true" in a quoted error message)."""
    return not (word.startswith("-") or word.endswith(",") or re.search(r"[<>|]|\.\.\.", word)
                or word.count("[") != word.count("]") or word.count("(") != word.count(")"))


def _as_bash_passes(word: str) -> str:
    """bash expands a ``~`` right after the ``=`` of an assignment-like argument."""
    key, _, value = word.partition("=")
    return f"{key}={os.path.expanduser(value)}"


def test_every_documented_command_line_passes():
    lines = documented_command_lines()
    assert len(lines) > 100  # the scan finds the docs' commands
    refused = []
    for where, cli, overrides in lines:
        try:
            check_command_line(overrides, CLIS[cli])
        except ConfigError as exc:
            refused.append(f"{where}: {' '.join(overrides)}: {exc}")
    assert not refused, "\n".join(refused)
