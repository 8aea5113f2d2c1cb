"""``netsparse-partition`` (also ``python -m netsparse_torch.cli.partition``): write a partitioned dataset.

    netsparse-partition dataset=mtx dataset.path=G.mtx.gz partition=metis parts=4 out=DIR
    netsparse-train dataset=partitioned dataset.path=DIR world_size=4

Loads any dataset the package loads (the ``dataset`` config group), partitions it into ``parts`` parts
and writes one shard per part plus a manifest (docs/partitioning.md). This is the one process that
holds the whole graph; the training ranks then read only their own shards.
"""

from __future__ import annotations

import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from hw_models.files import check_writable
from netsparse_torch.cli.hydra_app import from_launch_dir, job_failed, run_app, task
from netsparse_torch.config_check import check_paper_dataset, config_dir
from netsparse_torch.config_keys import PARTITION, check_composed_config
from netsparse_torch.errors import ConfigError, NetsparseError


def run(cfg: DictConfig) -> dict:
    """Partition as configured; returns the manifest and prints a summary."""
    if not cfg.get("out"):
        raise ConfigError("netsparse-partition needs out=<directory for the partitioned dataset>")
    if isinstance(cfg.parts, bool) or not isinstance(cfg.parts, int) or cfg.parts < 1:
        raise ConfigError(f"parts must be an integer >= 1, got {cfg.parts!r}")
    if (cfg.get("dataset") or {}).get("name") == "paper":
        check_paper_dataset(cfg.dataset, str(cfg.partition))
    check_writable(Path(cfg.out) / "manifest.json", "out")  # a file or /proc: one line before the work
    # The loaders and partitioners (torch, scipy) load once the settings above are known to be good.
    from netsparse_torch.graph import load_dataset
    from netsparse_torch.partition.analog import partition_dataset
    from netsparse_torch.partition.dataset import PartitionedDataset, write_partitioned
    from netsparse_torch.partition.partitioning import partition_settings

    times = {}
    t0 = time.perf_counter()
    graph = load_dataset(cfg.dataset)
    if isinstance(graph, PartitionedDataset):
        raise ConfigError("dataset=partitioned is already partitioned; partition its source dataset instead")
    times["load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    print(f"netsparse-partition: {graph.name} ({graph.num_nodes:,} nodes, {graph.nnz:,} nnz) -> "
          f"{cfg.parts} parts by {cfg.partition}", flush=True)
    graph, partitioning = partition_dataset(graph, int(cfg.parts), str(cfg.partition), **partition_settings(cfg))
    times["partition_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    source = {"dataset": OmegaConf.to_container(cfg.dataset, resolve=True), "times": times}
    manifest = write_partitioned(graph, partitioning, Path(cfg.out), source)
    times["write_s"] = time.perf_counter() - t0
    for line in summary_lines(manifest, Path(cfg.out)):
        print(line)
    return manifest


def summary_lines(manifest: dict, out: Path) -> list[str]:
    parts, nnz = manifest["per_part"], manifest["dataset"]["nnz"]
    times = manifest["source"].get("times", {})
    share = f" ({manifest['edge_cut'] / nnz:.1%} of nnz)" if nnz else ""
    lines = [f"  edge cut     {manifest['edge_cut']:,} nonzeros read across parts{share}",
             "  part       rows          nnz         halo     edge cut"]
    lines += [f"  {p['part']:4d} {p['rows']:10,} {p['nnz']:12,} {p['halo']:12,} {p['edge_cut']:12,}" for p in parts]
    lines.append("  time         " + ", ".join(f"{k[:-2]} {v:.1f} s" for k, v in times.items()) +
                 " (write: shards and checksums)")
    lines.append(f"  written      {out} (manifest.json + {len(parts)} shards)")
    return lines


@hydra.main(config_path=config_dir(), config_name="partition", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        with task():
            check_composed_config(cfg, PARTITION)
            from_launch_dir(cfg, PARTITION.paths)
            run(cfg)
    except NetsparseError as exc:
        job_failed(PARTITION.prog, exc)


def main() -> None:
    run_app(PARTITION, _hydra_main)


if __name__ == "__main__":
    main()
