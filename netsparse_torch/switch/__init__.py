"""The gRPC switch service (issue 5): ToR and spine switches that NetSparse packets flow through.

- ``switch.proto`` (package ``netsparse.switch.v1``): the data plane (one bidirectional ``Attach``
  stream per node, frames of back-to-back Fig. 6 packets) and the P4Runtime-like control plane
  (``Configure``, ``ReadCounters``, ``Reset``, ``Invalidate``, ``Health``). Stubs are generated at
  import time into gitignored ``switch_pb2*.py``.
- :class:`SwitchServer` (server.py): ``role="tor"`` runs the C++ SwitchPipe (paper §6.2.1), ``"spine"``
  forwards between racks. ``python -m netsparse_torch.switch --role tor --port 50051``.
- :class:`SwitchClient`, :class:`ControlClient` (client.py), :func:`configure_request` (control.py).
"""

from netsparse_torch.switch.client import ControlClient, SwitchClient, SwitchError
from netsparse_torch.switch.control import configure_request
from netsparse_torch.switch.server import SwitchServer

__all__ = ["ControlClient", "SwitchClient", "SwitchError", "SwitchServer", "configure_request"]
