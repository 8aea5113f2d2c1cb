"""Every key on netsparse-train's command line is one the run reads: an unknown
``+key`` or a plain typo is one line naming it and the closest known key, exit 2, before torch loads;
the ``+`` keys that the run does read (strategy options, synthetic generator parameters, hardware
fields of a modeled cluster) keep working."""

import inspect
import json
import subprocess
import sys

import pytest
from cli import ROOT, run_cli

from netsparse_torch.config_check import config_dir
from netsparse_torch.config_keys import (
    SIMULATE,
    STRATEGY_OPTIONS,
    SYNTHETIC_PARAMS,
    TRAIN,
    check_command_line,
    check_override_keys,
)
from netsparse_torch.errors import ConfigError


@pytest.mark.parametrize("overrides", [
    ["strategy=netsparse", "+strategy.options.stage=true"],  # tests/test_device_training.py
    ["fabric=switch", "+strategy.options.overlap=false"],  # fabric=switch selects netsparse
    ["strategy=netsparse", "strategy.options.rig_units=16", "strategy.options.rig_client_units=4"],
    ["strategy=twoface", "strategy.width=64", "strategy.options.memory_limit_bytes=1e9"],
    ["strategy=ds", "strategy.replication=4"],
    ["dataset=synthetic", "dataset.shape=road", "+dataset.params.drop=0.1"],
    ["cluster=leafspine128", "+cluster.hw.link.bandwidth_gbps=100", "+cluster.hw.snic={rig_units: 16}"],
    ["model=gat", "model.heads=4", "hidden=8", "++lr=0.1", "~report_path"],
    ["fabric.switches={spine:'h:1',tors:['h:2']}", "fabric=switch"],
    ["-m", "strategy=su,sa", "lr=0.1,0.01", "hydra.run.dir=/tmp/x", "hydra.job.chdir=true", "--cfg", "job"],
    ["-m", "strategy=netsparse", "dataset.shape=banded,road", "dataset=synthetic", "+dataset.params.density=0.1"],
    [],
])
def test_keys_the_run_reads_pass(overrides):
    check_override_keys(overrides, config_dir())


@pytest.mark.parametrize("overrides, message", [
    (["epoch=5"], "unknown key epoch; the closest known key is epochs"),
    (["+epoch=5", "+strategy.widht=3"], "unknown key epoch; the closest known key is epochs"),
    (["+strategy.widht=3"],
     "unknown key strategy.widht (with strategy=sa); the closest known key is strategy.width (with strategy=twoface)"),
    (["+strategy.width=3"], "unknown key strategy.width (with strategy=sa); only strategy=twoface reads it"),
    (["strategy=netsparse", "+strategy.options.stge=true"],
     "unknown key strategy.options.stge (with strategy=netsparse); the closest known key is strategy.options.stage"),
    (["-m", "strategy=netsparse,sa", "+strategy.options.stage=true"],  # every choice of a sweep is checked
     "unknown key strategy.options.stage (with strategy=sa); only strategy=netsparse reads it"),
    (["strategy=netsparse", "strategy.options.stage=true"],
     "strategy.options.stage is not in the config until you add it: write +strategy.options.stage=true"),
    (["+lr=0.1"], "+lr=0.1: lr is already in the config; set it without the '+': lr=0.1"),
    (["+model.hiden=3"], "unknown key model.hiden (with model=gcn); the closest known key is hidden"),
    (["+strategy.foo=1"], "unknown key strategy.foo (with strategy=sa); no known key is close; the keys under "
                          "strategy are: name, options"),
    (["+strategy.options.fabric=x"], "unknown key strategy.options.fabric"),  # the run layer's, not the user's
    (["dataset=synthetic", "+dataset.params.avg_degre=3"],
     "unknown key dataset.params.avg_degre (with dataset=synthetic); the closest known key is "
     "dataset.params.avg_degree"),
    (["dataset=synthetic", "dataset.shape=road", "+dataset.params.avg_degree=3"],  # the shape's own parameters
     "unknown key dataset.params.avg_degree (with dataset=synthetic)"),
    (["+cluster.hw.link.bandwidth_gbps=1"],  # cluster=none models nothing
     "unknown key cluster.hw.link.bandwidth_gbps (with cluster=none); only cluster=dragonfly128, hyperx128 or "
     "leafspine128 reads it"),
    (["cluster=leafspine128", "+cluster.hw.link.bandwidh_gbps=1"],
     "unknown key cluster.hw.link.bandwidh_gbps (with cluster=leafspine128); the closest known key is "
     "cluster.hw.link.bandwidth_gbps"),
    (["~lrr"], "unknown key lrr; the closest known key is lr"),
])
def test_unknown_keys_name_the_closest_known_key(overrides, message):
    with pytest.raises(ConfigError) as err:
        check_override_keys(overrides, config_dir())
    assert str(err.value).startswith(message), str(err.value)


def test_strategy_options_mirror_the_strategies():
    """STRATEGY_OPTIONS is what each strategy's constructor takes (RigNode's keywords for netsparse)."""
    from netsparse_torch.comm import STRATEGIES
    from netsparse_torch.comm.netsparse import RIG_OPTIONS

    assert set(STRATEGY_OPTIONS) == set(STRATEGIES)
    run_layer = {"self", "plan", "group", "options", "transport", "fabric", "hardware"}  # passed by the run
    for name, cls in STRATEGIES.items():
        takes = set(inspect.signature(cls.__init__).parameters) - run_layer
        if name == "netsparse":
            takes |= set(RIG_OPTIONS)
        assert set(STRATEGY_OPTIONS[name]) == takes, name


def test_synthetic_params_mirror_the_generators():
    from hw_models import synthetic

    for shape, fn in {"powerlaw": synthetic.power_law, "banded": synthetic.banded, "road": synthetic.road}.items():
        assert set(SYNTHETIC_PARAMS[shape]) == set(inspect.signature(fn).parameters) - {"n", "seed"}, shape


def test_the_check_is_torch_free():
    code = ("import sys\nfrom netsparse_torch.config_check import config_dir\n"
            "from netsparse_torch.config_keys import check_override_keys\n"
            "check_override_keys(['strategy=netsparse', '+strategy.options.stage=true', 'cluster=leafspine128', "
            "'+cluster.hw.link.bandwidth_gbps=1'], config_dir())\nassert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("overrides, key", [
    (["epoch=5"], "unknown key epoch;"),  # Hydra: five lines and exit 1
    (["+epoch=5", "+strategy.widht=3"], "unknown key epoch;"),  # Hydra: 200 epochs and exit 0
])
def test_cli_unknown_key_is_one_line_and_exit_2(tmp_path, overrides, key):
    proc = run_cli("netsparse_torch.cli.train", *overrides, f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"netsparse-train: error: {key}"), proc.stderr[-2000:]
    assert "epoch" not in proc.stdout  # nothing trained


def test_help_lists_only_the_groups_training_reads():
    """Hydra's own --help listed the simulator's experiments, which training refuses; training's own
    experiments are listed as the group a command line adds."""
    proc = run_cli("netsparse_torch.cli.train", "--help", "model=gat", timeout=60)
    assert proc.returncode == 0, proc.stderr
    groups = proc.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    assert "strategy: ds, netsparse, sa, su, twoface" in groups and "cluster:" in groups
    assert "+experiment: paper_training\n" in groups and "fig12" not in groups
    assert "heads: 8" in proc.stdout  # the composed config, with the overrides given


def test_help_checks_its_overrides_first():
    proc = run_cli("netsparse_torch.cli.train", "--help", "strategy=foo", timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip().startswith("netsparse-train: error: unknown strategy 'foo'")


@pytest.mark.parametrize("cli, arg, new", [
    (TRAIN, "strategy.options.n_units=8", "strategy.options.rig_units"),
    (TRAIN, "+strategy.options.n_client_units=4", "strategy.options.rig_client_units"),
    (TRAIN, "fabric.capacity_bytes=1024", "fabric.size_bytes"),
    (SIMULATE, "cache_bytes=1048576", "cache_size_bytes"),
])
def test_a_hardware_fields_old_spelling_is_refused_naming_the_new_one(cli, arg, new):
    """One spelling per hardware field (HardwareParams'): a key of earlier configs is one line naming it."""
    with pytest.raises(ConfigError, match=f"is now {new}: write {new}="):
        check_command_line(["strategy=netsparse", arg] if cli is TRAIN else [arg], cli)


def test_a_config_folder_of_the_users_adds_its_choices(tmp_path):
    """Hydra's ``--config-dir`` adds the user's own group choices (a dataset YAML of theirs): the command
    line's check refused them as unknown choices of this package's folder."""
    from cli_here import error_line, train_cli
    from conftest import DATA

    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "mine.yaml").write_text(
        f"name: mtx\npath: {DATA / 'mtx_small' / 'karate.mtx'}\nnum_features: 8\nnum_classes: 3\nseed: 0\n"
        "weighted: false\n")
    done = train_cli(tmp_path / "run", "--config-dir", str(tmp_path / "conf"), "dataset=mine", "epochs=1",
                     "world_size=1", f"report_path={tmp_path / 'r.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "r.json").read_text())["dataset"]["name"] == "karate"
    for args, said in ((["dataset=mnie"], "unknown dataset 'mnie'; choose one of citeseer, cora, mine, "),
                       (["dataset=mine", "+dataset.pth=x"], "unknown key dataset.pth (with dataset=mtx); the closest "
                                                            "known key is dataset.path"),  # was silently added
                       (["dataset=mine", "epoch=2"], "unknown key epoch;")):
        line = error_line(train_cli(tmp_path / "run2", "-cd", str(tmp_path / "conf"), *args))
        assert line.startswith(f"netsparse-train: error: {said}"), line
    line = error_line(train_cli(tmp_path / "run2", "-cn", "train", "+epoch=2"))  # the CLI's own config, named
    assert line.startswith("netsparse-train: error: unknown key epoch;"), line
    line = error_line(train_cli(tmp_path / "run2", "--config-dir", str(tmp_path / "nowhere"), "dataset=mine"))
    assert line == f"netsparse-train: error: --config-dir {tmp_path / 'nowhere'}: no such folder of configs", line
    from netsparse_torch.config_keys import config_path_args, user_config_dirs

    def dirs(args):
        return user_config_dirs(args, "train")

    for flag, read in (("-cp", config_path_args), ("-cd", dirs), ("--config-name", dirs)):
        with pytest.raises(ConfigError, match=f"^{flag} needs a value: {flag} VALUE or {flag}=VALUE$"):
            read(["epochs=1", flag])  # last, with no value: Hydra printed its whole usage text
    # both spellings, and a value that looks like a flag is still the value
    conf = str(tmp_path / "conf")
    assert user_config_dirs(["-cd", conf, f"--config-dir={conf}"], "train") == (conf, conf)
    assert config_path_args(["-cp", conf, "x=1"])[:3] == ["-cp", conf, "x=1"]


def test_a_primary_config_of_the_users_is_checked_once_composed(tmp_path, monkeypatch):
    """``-cn myexp`` composes a config of the user's, which the command line's check cannot see: a key in it
    that the CLI does not read (``epcohs``) trained with the default epochs, and exit 0. Each key of the
    composed config is now checked in the task against the CLI's own config with the same group choices, and
    a group YAML of the user's against this package's YAML that its ``name`` names."""
    from cli_here import error_line, simulate_cli, train_cli
    from conftest import DATA

    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "dataset" / "mine.yaml").write_text(
        f"name: mtx\npath: {DATA / 'mtx_small' / 'karate.mtx'}\nnum_features: 8\nnum_classes: 3\nseed: 0\n"
        "weighted: false\n")
    head = "defaults:\n  - train\n  - override dataset: mine\n  - _self_\n"
    (conf / "good.yaml").write_text(head + "epochs: 2\nworld_size: 1\n")
    (conf / "typo.yaml").write_text(head + "epcohs: 2\nworld_size: 1\n")
    (conf / "bare.yaml").write_text("epochs: 2\n")
    (conf / "sim.yaml").write_text("defaults:\n  - simulate\n  - _self_\nmatrix: paper:europe@0.002\nplot: false\n")
    done = train_cli(tmp_path / "run", "-cd", str(conf), "-cn", "good", f"report_path={tmp_path / 'r.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["dataset"]["name"] == "karate" and report["config"]["epochs"] == 2
    for name, args, said in (
            ("typo", [], "unknown key epcohs; the closest known key is epochs"),
            ("good", ["+foo=1"], "unknown key foo; no known key is close; the top-level keys are: checkpoint_dir,"),
            ("bare", [], "lacks checkpoint_dir, checkpoint_every, cluster, dataset, device ..., which netsparse-train "
                         "reads; add them (as in train.yaml), or start it with defaults: [train, _self_]")):
        done = train_cli(tmp_path / "run2", "-cd", str(conf), "-cn", name, *args)
        assert done.returncode == 2 and not done.ranks_started, done.stderr[-3000:]
        line = error_line(done)
        assert line.startswith(f"netsparse-train: error: your config {conf / (name + '.yaml')}"), line
        assert said in line, line
    line = error_line(train_cli(tmp_path / "run2", "-cn", "partition"))  # another of this package's configs
    assert "your config " in line and "partition.yaml: unknown key " in line, line
    # a group choice of the user's folder, against this package's YAML of the same name (dataset/mtx.yaml)
    (conf / "dataset" / "bad.yaml").write_text((conf / "dataset" / "mine.yaml").read_text().replace(
        "num_features", "num_feature"))
    line = error_line(train_cli(tmp_path / "run2", "-cd", str(conf), "dataset=bad"))
    assert line == f"netsparse-train: error: your config {conf / 'dataset' / 'bad.yaml'}: unknown key " \
                   "dataset.num_feature (with dataset=mtx); the closest known key is dataset.num_features", line
    line = error_line(simulate_cli(tmp_path / "run3", "-cd", str(conf), "-cn", "sim"), "netsparse-simulate")
    assert line == f"netsparse-simulate: error: your config {conf / 'sim.yaml'}: unknown key plot; the closest known " \
                   "key is plots", line
    line = error_line(simulate_cli(tmp_path / "run3", "-cd", str(conf), "-cn", "good"), "netsparse-simulate")
    assert line.startswith(f"netsparse-simulate: error: your config {conf / 'good.yaml'} chooses "), line
    assert "netsparse-simulate reads no config group " in line and line.endswith("hw, assumption, experiment"), line
    # -cp: the folder is the working directory's (Hydra's would be inside the installed package), with this
    # package's configs behind it (typo.yaml starts from train)
    monkeypatch.chdir(tmp_path)
    line = error_line(train_cli(tmp_path / "run4", "-cp", "conf", "-cn", "typo"))
    assert line == f"netsparse-train: error: your config {conf / 'typo.yaml'}: unknown key epcohs; the closest " \
                   "known key is epochs", line
    line = error_line(train_cli(tmp_path / "run4", "--config-path=nowhere", "-cn", "typo"))
    assert line == f"netsparse-train: error: --config-path {tmp_path / 'nowhere'}: no such folder of configs", line
