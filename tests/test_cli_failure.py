"""One way to fail: every entry point says bad input as a last stderr line ``<prog>: error: ...`` and
exits 2 (netsparse_torch/cli/failure.py). In-process ``main`` calls where the CLI allows; a fresh
interpreter for ``netsparse-train``, which exits through ``os._exit``."""

from __future__ import annotations

import re
import sys

import pytest
from cli import run_cli

from netsparse_torch.cli import calibrate, collect, compare, partition, reproduce, simulate, switch

# prog -> (main, argv, whether main reads sys.argv (the Hydra CLIs) instead of taking argv)
IN_PROCESS = {
    "netsparse-simulate": (simulate.main, ["nodes=0"], True),
    "netsparse-partition": (partition.main, ["parts=0"], True),
    "netsparse-compare": (compare.main, ["/nonexistent/report.json"], False),
    "python -m netsparse_torch.cli.collect": (collect.main, ["table7", "/nonexistent/sweep"], False),
    "netsparse-calibrate": (calibrate.main, ["--repeats", "0"], False),
    "netsparse-reproduce": (reproduce.main, ["no_such_table"], False),
    "netsparse-switch": (switch.main, ["--role", "tor", "--tls-cert", "cert.pem"], False),
}


def _said_once(stderr: str, prog: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    assert lines[-1].startswith(f"{prog}: error: "), lines[-1]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("prog", sorted(IN_PROCESS))
def test_each_entry_point_fails_in_one_line_with_exit_2(prog, capsys, monkeypatch, tmp_path):
    main, argv, reads_sys_argv = IN_PROCESS[prog]
    monkeypatch.chdir(tmp_path)  # Hydra's run directory and any output land here
    with pytest.raises(SystemExit) as done:
        if reads_sys_argv:
            monkeypatch.setattr(sys, "argv", [prog, *argv, f"hydra.run.dir={tmp_path}"])
            main()
        else:
            main(argv)
    assert done.value.code == 2
    _said_once(capsys.readouterr().err, prog)


@pytest.mark.parametrize("prog, main, key", [("netsparse-simulate", simulate.main, "nodes"),
                                              ("netsparse-partition", partition.main, "parts")])
def test_hydra_errors_in_the_task_are_one_line_with_exit_2(prog, main, key, capsys, monkeypatch, tmp_path):
    """An interpolation that cannot be resolved fails only when the task reads its key: OmegaConf's own
    error, said in the same one line (it was a traceback and exit 1)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [prog, key + "=${oops}", f"out={tmp_path / 'out'}", f"hydra.run.dir={tmp_path}"]
                        if "partition" in prog else [prog, key + "=${oops}", f"hydra.run.dir={tmp_path}"])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 2
    err = capsys.readouterr().err
    _said_once(err, prog)
    assert "oops" in err.splitlines()[-1]


def test_netsparse_switch_config_error_is_one_line(capsys, tmp_path):
    bad = tmp_path / "switch.yaml"
    bad.write_text("n_nodes: 2\nprop_bytes: 4\nracks: {0: [0, 1]}\nmtu: 9000\n")
    with pytest.raises(SystemExit) as done:
        switch.main(["--role", "tor", "--config", str(bad)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    _said_once(err, "netsparse-switch")
    assert "hw:" in err  # names where the hardware numbers go


def test_netsparse_train_fails_in_one_line_with_exit_2():
    proc = run_cli("netsparse_torch.cli.train", "epochs=-1", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    _said_once(proc.stderr, "netsparse-train")


def test_netsparse_switch_that_cannot_bind_exits_2(capsys):
    """A switch that cannot start (an address this host does not have) is bad input too: exit 2, one line."""
    with pytest.raises(SystemExit) as done:
        switch.main(["--role", "tor", "--host", "203.0.113.1", "--port", "5"])  # TEST-NET-3: never local
    assert done.value.code == 2
    _said_once(capsys.readouterr().err, "netsparse-switch")


def test_an_output_the_system_refuses_is_one_line_naming_it(capsys, tmp_path):
    """An output under a file (or /proc): the file named, as cp names it, not a traceback."""
    from netsparse_torch.cli.failure import failing

    blocked = tmp_path / "a_file" / "out.png"
    (tmp_path / "a_file").write_text("")
    with pytest.raises(SystemExit) as done, failing("netsparse-compare"):
        blocked.write_text("x")
    assert done.value.code == 2
    _said_once(capsys.readouterr().err, "netsparse-compare")
    with pytest.raises(RuntimeError), failing("netsparse-compare"):  # not an OSError: not ours to word
        raise RuntimeError("a bug")


def test_calibrate_checks_its_out_before_measuring(capsys, monkeypatch, tmp_path):
    from netsparse_torch.run import launch

    (tmp_path / "a_file").write_text("")
    monkeypatch.setattr(launch, "launch", lambda *a, **k: pytest.fail("measured before --out was checked"))
    with pytest.raises(SystemExit) as done:
        calibrate.main(["--out", str(tmp_path / "a_file" / "tf.json")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    _said_once(err, "netsparse-calibrate")
    assert f"--out: cannot write {tmp_path / 'a_file' / 'tf.json'} (" in err


def test_a_run_directory_hydra_cannot_make_is_one_line(capsys, monkeypatch, tmp_path):
    """Hydra makes the run's directory before the task: under a file it raised FileExistsError, rc 1."""
    from conftest import DATA

    (tmp_path / "a_file").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["netsparse-simulate", f"matrix={DATA / 'mtx_small' / 'karate.mtx'}", "nodes=4",
                                      f"hydra.run.dir={tmp_path / 'a_file' / 'run'}"])
    with pytest.raises(SystemExit) as done:
        simulate.main()
    assert done.value.code == 2
    err = capsys.readouterr().err
    _said_once(err, "netsparse-simulate")
    assert "Hydra cannot make the run's directory or its log there; choose another hydra.run.dir" in err


@pytest.mark.parametrize("kwargs, words", [
    ({"port": 99999}, "port must be 0 (a free port) or 1-65535, got 99999"),  # gRPC bound 34463
    ({"port": -5}, "port must be 0 (a free port) or 1-65535, got -5"),  # gRPC bound 65531
    ({"queue_depth": 0}, "queue_depth must be a whole number >= 1"),  # an unbounded queue.Queue
])
def test_a_switch_port_or_queue_the_service_would_reinterpret_is_refused(kwargs, words):
    """netsparse-switch says these in its one line (its ConfigErrors, above); the service refuses them."""
    from netsparse_torch.errors import ConfigError
    from netsparse_torch.switch_service import SwitchServer

    with pytest.raises(ConfigError, match=re.escape(words)):
        SwitchServer("tor", **kwargs)
