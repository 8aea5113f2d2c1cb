"""Is this process a rank that torchrun started? (torch-free, so the CLI can ask before importing torch)"""

import os


def under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
