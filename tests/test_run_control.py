"""Run control: config errors before any rank starts, resume that refuses another run, and the
default checkpoint folder. Stop signals: tests/test_stop_signals.py."""

import json
import shutil

import pytest
from cli import run_cli, train_here
from cli_here import train_cli, train_error

from netsparse_torch.checkpoint import differences, run_identity


def one_error_line(proc) -> str:
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("netsparse-train: error:"), lines[0]
    return lines[0]


# A fresh process: the config errors that main refuses before torch loads.
@pytest.mark.parametrize("override, words", [
    ("lr=abc", ["lr must be a number", "'abc'"]),
    ("strategy=foo", ["unknown strategy 'foo'", "su", "sa", "twoface"]),
    ("model=foo", ["unknown model 'foo'", "gcn", "sage"]),
])
def test_config_errors_are_one_line_and_exit_2_before_any_rank(tmp_path, override, words):
    proc = run_cli("netsparse_torch.cli.train", override, f"hydra.run.dir={tmp_path}", timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = one_error_line(proc)
    for w in words:
        assert w in line, line
    assert "epoch" not in proc.stdout  # no rank trained


def _composed(*overrides: str):
    from hydra import compose, initialize_config_dir

    from netsparse_torch.config_check import config_dir

    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose("train", overrides=list(overrides))


@pytest.mark.parametrize("override, message", [
    ("epochs=2.5", "epochs must be an integer >= 0, got 2.5"),
    ("hidden=0", "hidden must be >= 1, got 0"),
    ("dropout=1.0", "dropout must be in [0, 1), got 1.0"),
    ("resume=maybe", "resume must be true or false, got 'maybe'"),
    ("strategy=netsparse strategy.options.coalesce=maybe",
     "strategy.options.coalesce must be true or false, got 'maybe'"),
    ("strategy=netsparse strategy.options.filter=1", "strategy.options.filter must be true or false, got 1"),
    ("fabric=switch fabric.cache=maybe", "fabric.cache must be true or false, got 'maybe'"),
    ("fabric=switch fabric.concatenation=0", "fabric.concatenation must be true or false, got 0"),
    ("dataset=mtx dataset.weighted=maybe", "dataset.weighted must be true or false, got 'maybe'"),
    ("dataset=partitioned dataset.verify=no", "dataset.verify must be true or false, got 'no'"),
    ("fabric=switch fabric.queue_depth=2.5", "fabric.queue_depth must be an integer >= 1, got 2.5"),  # was 2
    ("fabric=switch fabric.queue_depth=0", "fabric.queue_depth must be >= 1, got 0"),
    ("log_every=abc", "log_every must be an integer >= 1, got 'abc'"),  # a ValueError traceback from rank 0
    ("log_every=0", "log_every must be >= 1, got 0"),  # was the default, 20 lines a run
    ("rig.timeout_s=abc", "rig.timeout_s must be a number > 0, got 'abc'"),  # accepted without fabric=switch
    ("partition=metis metis.seed=abc", "metis.seed must be an integer >= 0, got 'abc'"),
    ("dataset=tolokers dataset.split=abc", "dataset.split must be an integer >= 0, got 'abc'"),  # a traceback
    ("patience=3", "patience=3 needs evaluations during training: set eval_every=N"),
    ("partition=foo", "unknown partition 'foo'; choose one of rows, nnz, metis"),
])
def test_value_checks(override, message):
    from netsparse_torch.config_check import check_values
    from netsparse_torch.errors import ConfigError

    check_values(_composed())  # the defaults pass
    with pytest.raises(ConfigError) as err:
        check_values(_composed(*override.split()))
    assert message in str(err.value)


def test_the_partition_check_knows_every_partitioner():
    from netsparse_torch.config_check import check_values
    from netsparse_torch.partition.partitioning import PARTITIONERS

    for mode in PARTITIONERS:
        check_values(_composed(f"partition={mode}"))


def test_group_choices_of_a_sweep_are_each_checked():
    from netsparse_torch.config_check import config_dir
    from netsparse_torch.config_keys import check_group_overrides
    from netsparse_torch.errors import ConfigError

    check_group_overrides(["-m", "strategy=su,sa", "dataset.path=x", "model=gcn", "--cfg", "job"], config_dir())
    with pytest.raises(ConfigError, match="unknown strategy 'foo'; choose one of ds, netsparse, sa, su, twoface"):
        check_group_overrides(["-m", "strategy=su,foo"], config_dir())


def test_run_identity_and_differences_by_hand():
    cfg = {"dataset": {"name": "cora", "verify": True}, "model": {"name": "gcn", "num_layers": 2}, "seed": 0,
           "lr": 0.01, "weight_decay": 5e-4, "hidden": 16, "dropout": 0.5, "world_size": 2, "partition": "rows",
           "metis": {"seed": 0}, "epochs": 200, "strategy": {"name": "sa"},
           "fabric": {"name": "switch", "switches": {"spine": "h:1", "tors": ["h:2"]}, "host": "h", "cache": True}}
    ident = run_identity(cfg)
    assert ident == {"dataset.name": "cora", "model.name": "gcn", "model.num_layers": 2, "seed": 0, "lr": 0.01,
                     "weight_decay": 5e-4, "hidden": 16, "dropout": 0.5, "world_size": 2, "partition": "rows",
                     "strategy.name": "sa", "fabric.name": "switch", "fabric.cache": True}
    other = run_identity({**cfg, "lr": 0.05, "hidden": 32, "epochs": 400, "strategy": {"name": "su"}})
    assert differences(ident, other) == ["hidden: 16 -> 32", "lr: 0.01 -> 0.05", "strategy.name: 'sa' -> 'su'"]
    # a strategy's options and the cluster are run-defining; the switches' addresses are not
    moved = {**cfg, "fabric": {**cfg["fabric"], "switches": {"spine": "g:1", "tors": ["g:2"]}, "host": "g"}}
    assert differences(ident, run_identity(moved)) == []
    options = run_identity({**cfg, "strategy": {"name": "sa", "options": {"filter": False}},
                            "cluster": {"name": "leafspine128"}})
    assert differences(ident, options) == ["cluster.name: '(unset)' -> 'leafspine128'",
                                           "strategy.options.filter: '(unset)' -> False"]
    # METIS settings count only for partition=metis.
    assert run_identity({**cfg, "partition": "metis"})["metis.seed"] == 0


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory):
    """The run directory of a 2-epoch run that checkpoints into it (the default folder)."""
    run = tmp_path_factory.mktemp("ckpt") / "run"
    done = train_cli(run, "dataset=cora", "world_size=2", "epochs=2", "checkpoint_every=1")
    assert done.returncode == 0, done.stderr[-2000:]
    return run


def test_default_checkpoint_folder_is_in_the_run_directory(checkpointed):
    folder = checkpointed / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == ["rank0-of-2.1epochs.pt", "rank0-of-2.2epochs.pt",
                                                        "rank1-of-2.1epochs.pt", "rank1-of-2.2epochs.pt", "run.json"]
    saved = json.loads((folder / "run.json").read_text())
    assert saved["run"]["lr"] == 0.01 and saved["config"]["epochs"] == 2  # the training config is kept


@pytest.mark.parametrize("override, key", [("lr=0.05", "lr: 0.01 -> 0.05"), ("hidden=32", "hidden: 16 -> 32"),
                                           ("world_size=3", "world_size: 2 -> 3")])
def test_resume_of_another_run_is_one_error_naming_the_key(tmp_path, checkpointed, override, key):
    line = train_error(tmp_path, "dataset=cora", "world_size=2", "epochs=4", "resume=true",
                       f"checkpoint_dir={checkpointed / 'checkpoints'}", override)
    assert "another run" in line and key in line, line


def test_resume_of_the_same_run_with_more_epochs_continues(tmp_path, checkpointed):
    run = shutil.copytree(checkpointed, tmp_path / "run")  # the other tests' run stays as it was
    earlier = (run / "train.log").read_text()
    done = train_cli(run, "dataset=cora", "world_size=2", "epochs=3", "resume=true")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((run / "report.json").read_text())
    assert [e["epoch"] for e in report["epochs"]] == [0, 1, 2]
    resumed = f"resumed from epoch 2/3 (checkpoint in {run / 'checkpoints'})"
    # Rank 0's note heads what this run added to the log, which reads like its console: Progress.note
    # prints the line it logs (tests/test_logs.py), and the launcher said nothing before the summary.
    log = (run / "train.log").read_text()
    assert log.startswith(earlier) and log[len(earlier):].splitlines()[0] == resumed, log[len(earlier):]
    assert done.stdout.startswith("netsparse-train: "), done.stdout[:2000]
    # epochs 0-1 come from the checkpoint (their wall times too, which a retrained epoch would not repeat)
    first = json.loads((checkpointed / "report.json").read_text())
    assert report["epochs"][:2] == first["epochs"]
    # and the resumed run is the uninterrupted one: same losses, same bytes moved
    full, _ = train_here(tmp_path / "full", "dataset=cora", "world_size=2", "epochs=3")
    assert [e["loss"] for e in report["epochs"]] == [e["loss"] for e in full["epochs"]]
    assert report["comm"]["feature_bytes"] == full["comm"]["feature_bytes"]


def test_resume_without_a_checkpoint_says_where_it_looked(tmp_path):
    assert f"no checkpoint in {tmp_path / 'checkpoints'}" in train_error(tmp_path, "dataset=cora", "resume=true")
