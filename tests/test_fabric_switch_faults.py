"""fabric=switch faults on the training path, with switches as separate ``netsparse-switch`` processes
given by address (as a multi-host run gives them): a switch that stalls mid-epoch (SIGSTOP) trips the
RIG watchdog (rig.timeout_s) and the run ends with a clear error and no hung rank; a killed switch
(SIGKILL) ends it at once; after the kill, fresh switches and ``resume=true`` finish the run from its
checkpoint.
Every subprocess has a hard timeout and is killed in ``finally``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
from cli import ROOT, train_here

from netsparse_torch.checkpoint import latest

EPOCHS = 5  # the fault comes after epoch 1, so three are left to interrupt
TIMEOUT_S = 3  # rig.timeout_s in these tests (the default is 30 s, paper §7.1)
COMMON = ["dataset=cora", "fabric=switch", "world_size=4", "cluster.rack_size=2", "hidden=8",
          f"rig.timeout_s={TIMEOUT_S}", "checkpoint_every=1"]


@contextmanager
def switch_processes():
    """A spine and two ToRs as ``python -m netsparse_torch.cli.switch`` processes; yields (procs, spec)."""
    procs: dict[str, subprocess.Popen] = {}
    try:
        addresses = {}
        for name, role in (("spine", "spine"), ("tor0", "tor"), ("tor1", "tor")):
            p = procs[name] = subprocess.Popen([sys.executable, "-m", "netsparse_torch.cli.switch", "--role", role,
                                                "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                               text=True)
            line = p.stdout.readline()
            assert "listening on" in line, line
            addresses[name] = line.split()[-1]
        yield procs, {"spine": addresses["spine"], "tors": [addresses["tor0"], addresses["tor1"]]}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()  # SIGKILL also ends a stopped process
            p.wait(timeout=30)


def switches_override(spec: dict) -> str:
    tors = ",".join(f"'{a}'" for a in spec["tors"])
    return f"fabric.switches={{spine:'{spec['spine']}',tors:[{tors}]}}"


def start_training(tmp_path, spec, *overrides) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "netsparse_torch.cli.train", *COMMON, switches_override(spec),
           f"hydra.run.dir={tmp_path / 'run'}", "log_every=1", *overrides]  # a line per epoch through the pipe
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_epoch(proc: subprocess.Popen, epoch: int, deadline_s: float = 240) -> None:
    """Until the progress line ``epoch <done>/<total>`` says epoch ``epoch`` (0-based) has finished."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise AssertionError(f"training ended before epoch {epoch}: {proc.stderr.read()[-2000:]}")
        done = re.match(r"epoch\s+(\d+)/\d+", line)
        if done and int(done.group(1)) > epoch:
            return
    raise AssertionError(f"no epoch {epoch} within {deadline_s} s")


@pytest.mark.parametrize("fault", ["stall", "kill"])
def test_switch_fault_mid_epoch_is_a_clear_error_then_resume_finishes(tmp_path, fault):
    ckpt = f"checkpoint_dir={tmp_path / 'ckpt'}"
    with switch_processes() as (procs, spec):
        proc = start_training(tmp_path / "a", spec, f"epochs={EPOCHS}", ckpt)
        try:
            wait_for_epoch(proc, 1)
            procs["tor1"].send_signal(signal.SIGSTOP if fault == "stall" else signal.SIGKILL)
            t_fault = time.monotonic()
            # hang guard only (no timing assertion): watchdog + the launcher's teardown
            _, err = proc.communicate(timeout=TIMEOUT_S + 10 + 60)
            print(f"{fault}: run ended {time.monotonic() - t_fault:.1f} s after the fault")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    assert proc.returncode == 2, err[-3000:]
    error = [ln for ln in err.splitlines() if ln.startswith("netsparse-train: error:")]
    assert len(error) == 1, err[-3000:]
    print(error[0])
    if fault == "stall":
        # the rank that timed out names the switch it waited on and the peers its reads went to
        assert "watchdog expired" in error[0], error[0]
        assert any(a in error[0] for a in spec["tors"]), error[0]
    else:
        assert spec["tors"][1] in error[0] or "watchdog expired" in error[0], error[0]
    assert latest(tmp_path / "ckpt", 4) is not None  # a checkpoint that every rank wrote
    if fault == "stall":
        return  # resuming is the same after either fault: tested once, after the kill

    with switch_processes() as (_, spec):  # restarted switches: new addresses, empty caches
        report, _ = train_here(tmp_path / "b", *COMMON, switches_override(spec), ckpt, f"epochs={EPOCHS}",
                               "resume=true")
    epochs = [e["epoch"] for e in report["epochs"]]
    assert epochs == list(range(EPOCHS))  # the checkpointed epochs plus the resumed ones, each once
    assert {e["name"] for e in report["switches"]} == {"spine", "tor0", "tor1"}
    json.dumps(report["switches"])


def test_watchdog_names_the_switch_and_peers_and_discards_the_partial_halo():
    """One rack of 3 nodes: node 2 serves, node 1 never attaches. Node 0 gathers rows of both; the
    rows of node 2 arrive, those of node 1 never do, so after rig.timeout_s the RIG watchdog raises
    RigTimeoutError naming node 1 (not node 2) and the ToR, and the halo, partly filled by then, is
    zeroed."""
    import threading

    import numpy as np
    import torch
    from test_switch_fabric import BarrierMin

    from hw_models import unit_args
    from hw_models.units import RigNode
    from netsparse_torch.comm.rig import run_kernel
    from netsparse_torch.errors import RigTimeoutError
    from netsparse_torch.fabric.switch import LocalSwitches, SwitchFabric

    bounds = [0, 4, 8, 12]
    x = torch.arange(12 * 4, dtype=torch.float32).view(12, 4) + 1  # no row is all zeros
    idxs = np.array([8, 9, 4, 5], dtype=np.int64)  # rows of node 2, then of node 1
    red = BarrierMin(2)  # node 0 and node 2 (node 1 is missing)
    with LocalSwitches(3, 3, 16) as sw:
        f0 = SwitchFabric(3, 0, sw.address(0), all_done=red.for_rank(0), timeout_s=1.0, controls=sw.controls(0),
                          row_bounds=bounds)
        f2 = SwitchFabric(3, 2, sw.address(2), all_done=red.for_rank(1), timeout_s=1.0)
        halo = torch.full((4, 4), -1.0)
        seen: list = []

        def node2():
            node = RigNode(2, bounds, **unit_args.rig_node())
            try:
                run_kernel(node, f2, x[8:12].contiguous(), np.zeros(0, np.int64), np.zeros(0, np.int64),
                           torch.empty(0, 4))
            except BaseException as e:  # the barrier breaks when node 0 gives up
                seen.append(e)

        t = threading.Thread(target=node2, daemon=True)
        t.start()
        node0 = RigNode(0, bounds, **unit_args.rig_node())
        try:
            with pytest.raises(RigTimeoutError) as err:
                run_kernel(node0, f0, x[0:4].contiguous(), idxs, np.arange(4, dtype=np.int64), halo)
        finally:
            red.barrier.abort()
            t.join(timeout=30)
            f0.close()
            f2.close()
    assert "watchdog expired" in str(err.value) and sw.address(0) in str(err.value)
    # node 2 answered, node 1 did not: the read PRs sent minus responses received per owner say so
    assert err.value.switch == sw.address(0) and err.value.peers == [1]
    assert "responses missing from ranks [1]" in str(err.value)
    assert node0.stats()["responses"] == 2  # rows 8 and 9 had arrived ...
    assert torch.equal(halo, torch.zeros(4, 4))  # ... and the whole halo is discarded
