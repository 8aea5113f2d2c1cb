"""Dense shifting: bad replication factors fail with one clear error before any communication; the
padded bytes it moves match the 1.5D count worked out by hand."""

import numpy as np
import pytest
import torch

from netsparse_torch.comm import make_strategy
from netsparse_torch.comm.ds import check_replication
from netsparse_torch.errors import ConfigError
from netsparse_torch.plan import Plan


def fake_plan(world_size: int, rank: int = 0) -> Plan:
    bounds = np.array([0, 3, 5, 8, 10, 12, 14, 16, 18][: world_size + 1])
    return Plan(rank, world_size, bounds, np.empty(0, np.int64), [0] * world_size,
                torch.empty(0, dtype=torch.long), [0] * world_size)


@pytest.mark.parametrize("c,p", [(3, 4), (2, 3), (8, 4), (0, 2), (-2, 4), (2.0, 4)])
def test_replication_must_divide_world_size(c, p):
    with pytest.raises(ConfigError, match="replication factor .* must be a positive integer dividing"):
        make_strategy("ds", fake_plan(p), replication=c)


def test_good_replication_and_moved_bytes():
    assert check_replication(2, 4) == 2 and check_replication(4, 4) == 4
    # p=4 blocks of rows 3,2,3,2 padded to 3; c=1 (no team: make_strategy builds no group): q=4 teams,
    # 3 shifts of 1 padded block = 9 rows; K=5 float32 -> 9*5*4 = 180 bytes.
    s = make_strategy("ds", fake_plan(4), replication=1)
    assert s.moved_bytes(torch.zeros(3, 5)) == 180
    assert s.stats() == {"replication": 1, "rounds": 4}
