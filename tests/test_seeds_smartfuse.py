"""SmartFuse LogcN model: each formula against hand-computed values."""

import pytest

from hw_models.seeds import smartfuse as sf

P = sf.LogcNParams()


def test_table2_defaults():
    assert (P.o_us, P.bw_gbps, P.pcie_us, P.fpga_to_fpga_us, P.port_to_port_us) == (14.8, 95.9, 0.9, 0.44, 0.052)


def test_bandwidth_G():
    assert sf.bandwidth_bytes_per_us(P) == pytest.approx(11987.5)  # 95.9e9 / 8 bytes per second
    assert sf.bandwidth_bytes_per_us(sf.LogcNParams(beta=0.5)) == pytest.approx(5993.75)


def test_latency_L():
    # One switch level: 2 x 0.9 + 2 x 0.44 + 1 x 0.052.
    assert sf.latency_us(16, P) == pytest.approx(2.732)
    assert sf.tree_depth(64, P) == 1 and sf.tree_depth(65, P) == 2
    # Two levels: 2 x 0.9 + 4 x 0.44 + 3 x 0.052.
    assert sf.latency_us(65, P) == pytest.approx(3.716)


def test_compute_c():
    p = sf.LogcNParams(alpha_us=0.1, beta=0.5, gamma=1.5)
    assert sf.compute_us(5993.75, 16, p) == pytest.approx(16 * 0.1 + 0.5 * 1.0)
    assert sf.compute_us(1e6, 16, P) == 0.0


def test_total_T():
    assert sf.time_us(11987.5, 16, P) == pytest.approx(2 * 14.8 + 2.732 + 1.0)
    p = sf.LogcNParams(alpha_us=0.1, beta=0.5, gamma=1.5)
    assert sf.time_us(5993.75, 16, p) == pytest.approx(29.6 + 2.732 + 1.0 + 2.1)


@pytest.mark.parametrize("kwargs", [dict(o_us=-1), dict(bw_gbps=0), dict(beta=0), dict(gamma=0.5), dict(radix=1)])
def test_bad_params(kwargs):
    with pytest.raises(ValueError):
        sf.LogcNParams(**kwargs)


def test_bad_sizes():
    with pytest.raises(ValueError, match="N"):
        sf.time_us(10, 0)
    with pytest.raises(ValueError, match="m"):
        sf.time_us(-1, 4)
