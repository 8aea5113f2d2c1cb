"""``netsparse-train``: full-graph distributed GNN training (Hydra app, configs in ``configs/``).

    netsparse-train dataset=cora model=gcn strategy=sa world_size=2 epochs=200

Without torchrun it spawns ``world_size`` local ranks on loopback; under torchrun it uses
torchrun's environment, so the same command runs multi-node.
"""

from __future__ import annotations

import gc
import os
import sys

import hydra
from omegaconf import DictConfig

from netsparse_torch.config_check import check_group_overrides, check_override_keys, check_values, config_dir
from netsparse_torch.errors import ConfigError, NetsparseError
from netsparse_torch.report.metrics import check_logger
from netsparse_torch.run.torchrun import under_torchrun
from netsparse_torch.signals import Interrupted, stop_on_signals


@hydra.main(config_path=config_dir(), config_name="train", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    if under_torchrun():
        cfg.world_size = int(os.environ["WORLD_SIZE"])
    try:
        check_values(cfg)  # torch-free checks first: a wrong value is one line before torch and PyG load
        check_logger(str(cfg.get("logger") or "none"))
        from netsparse_torch.run.job import run

        run(cfg)
    except NetsparseError as exc:
        print(f"netsparse-train: error: {exc}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    try:  # a wrong group choice or key is one line here, not Hydra's multi-line error (or silence)
        check_group_overrides(sys.argv[1:], config_dir())
        check_override_keys(sys.argv[1:], config_dir())
    except ConfigError as exc:
        print(f"netsparse-train: error: {exc}", file=sys.stderr)
        sys.exit(2)
    stopped = None
    try:
        with stop_on_signals():  # SIGTERM/SIGINT: every rank and switch stopped on the way out
            _hydra_main()
    except Interrupted as stop:
        stopped = (str(stop), stop.exit_code)
    if stopped is not None:
        gc.collect()  # the unwound frames held the ranks' queues: free their semaphores before exit
        from netsparse_torch.run.launch import stop_forkserver

        stop_forkserver()
        lead = "\n" if sys.stderr.isatty() else ""  # below rank 0's progress bar, which nobody closed
        print(f"{lead}netsparse-train: stopped by {stopped[0]}: every rank and switch stopped, no report written",
              file=sys.stderr)
        sys.exit(stopped[1])


if __name__ == "__main__":
    main()
