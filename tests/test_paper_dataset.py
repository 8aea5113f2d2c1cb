"""``dataset=paper``: every rank generates its own part of a paper analog, and the parts are the whole
graph's: the pattern of ``netsparse-simulate matrix=paper:...`` (the same generator and seed), node data
drawn as for ``dataset=mtx``, and the same shard at every world size as cut from the whole graph."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from cli import run_cli, train_here

from hw_models import analogs
from hw_models.native import graph as native
from netsparse_torch.config_check import METIS_MAX_NNZ
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph import gcn_norm
from netsparse_torch.partition import AnalogDataset, ShardBuilder, partition_dataset
from netsparse_torch.partition.shard import SPLITS

#: Small analogs of the three generator families (2,274 to 4,147 rows).
SMALL = {"europe": 5e-5, "arabic": 1e-4, "queen": 1e-3}


@pytest.fixture(scope="module", params=sorted(SMALL))
def analog(request):
    return AnalogDataset(request.param, SMALL[request.param], num_features=6, num_classes=3, seed=5, analog_seed=2)


def test_the_pattern_is_the_simulators(analog):
    pattern, name = analogs.load(f"paper:{analog.matrix.name}@{analog.scale}", seed=2)
    g = analog.graph()
    assert g.name == name == analog.name
    assert np.array_equal(g.adj.indptr, pattern.indptr) and np.array_equal(g.adj.indices, pattern.indices)
    assert np.all(g.adj.data == 1) and analog.nnz == pattern.nnz
    assert g.adj.indices.dtype == np.int32


def test_rows_generated_alone_are_the_whole_matrix_rows(analog):
    pattern, _ = analogs.load(f"paper:{analog.matrix.name}@{analog.scale}", seed=2)
    lo, hi = 700, 1500
    indptr, indices = analogs.generate_rows(analog.matrix, analog.scale, 2, lo, hi)
    assert np.array_equal(indptr, pattern.indptr[lo:hi + 1] - pattern.indptr[lo])
    assert np.array_equal(indices, pattern.indices[pattern.indptr[lo]:pattern.indptr[hi]])
    ids = np.array([hi, 3, pattern.n_rows - 1, 3])
    nnz, loop = analogs.row_degrees(analog.matrix, analog.scale, 2, ids)
    assert nnz.tolist() == [pattern.indptr[i + 1] - pattern.indptr[i] for i in ids]
    assert loop.tolist() == [i in pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]] for i in ids]


@pytest.mark.parametrize("parts,mode", [(1, "rows"), (3, "rows"), (4, "nnz")])
def test_each_generated_shard_is_the_whole_graphs_shard(analog, parts, mode):
    whole = analog.graph()
    data, p = partition_dataset(analog, parts, mode)
    assert data is analog and p.order is None
    if mode == "nnz":
        assert np.array_equal(p.bounds, partition_dataset(whole, parts, mode)[1].bounds)
    cut = ShardBuilder(whole, p)
    for part in range(parts):
        mine, ref = analog.shard(part, p), cut.shard(part)
        assert (mine.adj != ref.adj).nnz == 0 and np.array_equal(mine.adj.indices, ref.adj.indices)
        for field in ("x", "y", *(f"{s}_mask" for s in SPLITS)):
            assert torch.equal(getattr(mine, field), getattr(ref, field)), field
        for field in ("node_ids", "row_sum", "row_loop", "halo_ids", "halo_sum", "halo_loop"):
            assert np.array_equal(getattr(mine, field), getattr(ref, field)), field
        for norm in ("gcn", "mean"):
            assert (abs(mine.normalized(norm) - ref.normalized(norm)) > 0).nnz == 0, norm


def test_node_data_is_mtx_s_recipe_keyed_on_the_node(analog):
    """Features N(0, 1), labels argmax(Â X W) of the seeded teacher (computed here on the whole graph with
    dense products), a 60/20/20 split; every value a function of (seed, node)."""
    g = analog.graph()
    x = g.x.numpy().astype(np.float64)
    assert abs(x.mean()) < 0.1 and abs(x.std() - 1) < 0.1
    teacher = torch.randn(6, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64).numpy()
    h = gcn_norm(g.adj).toarray().astype(np.float64) @ (x @ teacher)
    assert np.array_equal(g.y.numpy(), h.argmax(axis=1))
    masks = torch.stack([g.train_mask, g.val_mask, g.test_mask])
    assert torch.equal(masks.sum(0), torch.ones(g.num_nodes, dtype=torch.long))  # one split per node
    shares = masks.float().mean(1).tolist()
    assert shares == pytest.approx([0.6, 0.2, 0.2], abs=0.05)
    ids = np.array([7, 0, g.num_nodes - 1])
    assert np.array_equal(analog.features(ids), g.x.numpy()[ids])
    other = AnalogDataset(analog.matrix.name, analog.scale, 6, 3, seed=6, analog_seed=2)
    assert not np.array_equal(other.features(ids), analog.features(ids))


def test_features_do_not_depend_on_which_rows_are_asked_together():
    ids = np.arange(1000, dtype=np.int64)
    assert np.array_equal(native.keyed_normal(3, ids, 5)[[999, 4]], native.keyed_normal(3, ids[[999, 4]], 5))
    assert np.array_equal(native.keyed_uniform(3, ids)[[10]], native.keyed_uniform(3, ids[[10]]))


def test_metis_takes_a_small_analog_whole():
    small = AnalogDataset("europe", 5e-5)
    data, p = partition_dataset(small, 2, "metis")
    assert not isinstance(data, AnalogDataset) and p.order is not None and data.num_nodes == small.num_nodes


def test_metis_above_its_limit_is_one_line():
    big = AnalogDataset("europe", 0.1)  # about 10.8 M nonzeros; nothing is generated to refuse it
    assert big.matrix.nnz * 0.1 > METIS_MAX_NNZ
    with pytest.raises(ConfigError, match="partition=metis needs the whole graph.*use partition=rows or nnz"):
        partition_dataset(big, 4, "metis")


@pytest.mark.parametrize("overrides,message", [
    (["dataset.matrix=europa"], "unknown dataset.matrix 'europa'; choose one of arabic, europe, queen, stokes, uk"),
    (["dataset.scale=0"], "dataset.scale must be in (0, 1], got 0"),
    (["dataset.scale=1.5"], "dataset.scale must be in (0, 1], got 1.5"),
    (["dataset.scale=abc"], "dataset.scale must be a number in (0, 1], got 'abc'"),
    (["dataset.scale=1e-5"], "paper:europe@1e-05 has 509 rows; the analog needs at least 2048"),
    (["dataset.scale=0.1", "partition=metis"], "partition=metis needs the whole graph in one process"),
])
def test_bad_input_is_one_error_before_any_rank(tmp_path, overrides, message):
    with pytest.raises(ConfigError) as err:
        train_here(tmp_path, "dataset=paper", *overrides, "epochs=1")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_input_is_one_line_from_the_cli(tmp_path):
    proc = run_cli("netsparse_torch.cli.train", "dataset=paper", "dataset.scale=1.5", "epochs=1",
                   f"hydra.run.dir={tmp_path}", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == ["netsparse-train: error: dataset.scale must be in (0, 1], got 1.5"]


@pytest.mark.parametrize("dataset,partition,message", [
    ({"matrix": "europa"}, "rows", "unknown dataset.matrix 'europa'"),
    ({"matrix": "uk", "scale": -1}, "rows", "dataset.scale must be in (0, 1], got -1"),
    ({"matrix": "uk", "scale": 0.01, "num_features": 0}, "rows", "dataset=paper needs num_features >= 1"),
    ({"matrix": "arabic", "scale": 0.5}, "metis", "partition=metis needs the whole graph in one process"),
])
def test_bad_input_is_found_before_torch_loads(dataset, partition, message):
    """The CLI's value check (config_check.check_values) refuses dataset=paper's bad input with numbers
    only: one line within a second, nothing generated, no torch."""
    code = ("import sys\nfrom omegaconf import OmegaConf\nfrom netsparse_torch.config_check import check_values\n"
            "from netsparse_torch.errors import ConfigError\n"
            f"cfg = OmegaConf.create({{'dataset': {{'name': 'paper', **{dataset!r}}}, 'partition': {partition!r}}})\n"
            "try:\n    check_values(cfg)\nexcept ConfigError as exc:\n    print(exc)\n"
            "assert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert message in proc.stdout and len(proc.stdout.strip().splitlines()) == 1, proc.stdout


def test_partition_cli_refuses_metis_above_its_limit(tmp_path):
    from omegaconf import OmegaConf

    from netsparse_torch.cli.partition import run

    cfg = {"out": str(tmp_path), "parts": 4, "partition": "metis",
           "dataset": {"name": "paper", "matrix": "europe", "scale": 0.1}}
    with pytest.raises(ConfigError, match="partition=metis needs the whole graph in one process"):
        run(OmegaConf.create(cfg))
    assert not any(tmp_path.iterdir())


def test_partition_cli_writes_generated_parts(tmp_path):
    from netsparse_torch.partition import PartitionedDataset

    out = tmp_path / "ds"
    proc = run_cli("netsparse_torch.cli.partition", "dataset=paper", "dataset.scale=5e-5", "parts=3", f"out={out}",
                   f"hydra.run.dir={tmp_path / 'run'}", timeout=120)
    assert proc.returncode == 0, proc.stderr
    ds = PartitionedDataset(out)
    analog = AnalogDataset("europe", 5e-5)
    assert ds.label == analog.label and ds.nnz == analog.nnz
    whole = analog.graph()
    back = ds.assemble()
    assert (back.adj != whole.adj).nnz == 0 and torch.equal(back.y, whole.y) and torch.equal(back.x, whole.x)


def test_a_row_block_shard_of_an_analog_is_not_cut_from_a_renumbering():
    small = AnalogDataset("europe", 5e-5)
    _, p = partition_dataset(small.graph(), 2, "metis")
    with pytest.raises(ConfigError, match="renumbering partition"):
        small.shard(0, p)


def test_scipy_keeps_int32_indices_of_a_generated_shard():
    small = AnalogDataset("europe", 5e-5)
    s = small.shard(1, partition_dataset(small, 2)[1])
    assert s.adj.indices.dtype == np.int32 and s.adj.indptr.dtype == np.int32
    assert isinstance(s.adj, sp.csr_matrix)


def test_sorted_unique_is_numpys_unique():
    from hw_models.pattern import sorted_unique

    rng = np.random.default_rng(0)
    for a in (rng.integers(0, 50, 1000).astype(np.int32), rng.integers(-5, 5, 7), np.empty(0, dtype=np.int64)):
        assert np.array_equal(sorted_unique(a), np.unique(a)) and sorted_unique(a).dtype == a.dtype
