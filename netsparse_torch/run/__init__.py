"""The run layer: what turns a configuration into ranks that train.

- :mod:`~netsparse_torch.run.launch`: start the ranks (local ranks on loopback, or torchrun's).
- :mod:`~netsparse_torch.run.switch_launcher`: ``fabric=switch`` around a run (start or configure the switch
  service, attach each rank to its ToR and hand its SwitchFabric to the strategy).
- :mod:`~netsparse_torch.run.training`: each rank's full-graph training loop.

It sits above ``comm`` and ``fabric``: they never import it (an import-linter contract in
pyproject.toml), so the strategies get their fabric and process group passed in, not looked up.
"""
