"""``netsparse-simulate`` / ``python -m netsparse_torch.cli.simulate``: modeled communication of one sparse
kernel on a NetSparse cluster (Hydra app, ``configs/simulate.yaml``).

    python -m netsparse_torch.cli.simulate matrix=../shared/data/graphs/ego-twitter.mtx.gz k=16 nodes=128
    python -m netsparse_torch.cli.simulate matrix=synthetic synthetic.shape=road synthetic.n=50000 topology=hyperx

Writes a JSON report (schema in docs/simulator.md, all values *modeled*), prints a Markdown summary and
saves PNG figures beside the report. The workload definitions and the SUOpt/SAOpt optima are
analytic (``hw_models``); the NetSparse block needs the C++ simulator and says so while it is absent.
"""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from netsparse_torch.cli.hydra_app import from_launch_dir, job_failed, run_app, task
from netsparse_torch.config_check import config_dir, in_sweep
from netsparse_torch.config_keys import SIMULATE, check_composed_config
from netsparse_torch.errors import NetsparseError
from netsparse_torch.report.glossary import explain_text


@hydra.main(config_path=config_dir(), config_name="simulate", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        with task():
            from netsparse_torch.malloc import keep_freed_memory
            from netsparse_torch.run.simulation import is_matrix_file, run  # hw_models and scipy: after the check

            check_composed_config(cfg, SIMULATE)
            from_launch_dir(cfg, (*SIMULATE.paths, *(["matrix"] if is_matrix_file(cfg.matrix) else [])))

            keep_freed_memory()  # again in a launcher's worker process (a joblib worker, a submitit job)

            hc = HydraConfig.get() if HydraConfig.initialized() else None
            if hc is None:
                run(cfg)
            else:
                run(cfg, Path(hc.runtime.output_dir), list(hc.overrides.task), in_sweep())
    except NetsparseError as exc:
        job_failed(SIMULATE.prog, exc)


def main() -> None:
    """Console entry point (``netsparse-simulate``)."""
    from netsparse_torch.malloc import keep_freed_memory

    keep_freed_memory()  # the simulator allocates and frees hundreds of MB: ~1 s of page faults otherwise
    run_app(SIMULATE, _hydra_main, __doc__, {"--explain": explain_text})


if __name__ == "__main__":
    main()
