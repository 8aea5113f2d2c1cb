"""The command lines, in one place. Each module parses its arguments, checks them, and calls the layers
below (the run layer, the hardware models, the report); none holds the work itself.

========================  ===================================================================
``netsparse-train``       :mod:`.train`: full-graph training (Hydra, ``configs/train.yaml``)
``netsparse-torchrun``    :mod:`.torchrun`: torchrun with the agent's own log lines quiet
``netsparse-simulate``    :mod:`.simulate`: the modeled cluster (Hydra, ``configs/simulate.yaml``; no torch)
``netsparse-reproduce``   :mod:`.reproduce`: the papers' exact tables
``netsparse-calibrate``   :mod:`.calibrate`: this machine's Two-Face coefficients
``netsparse-partition``   :mod:`.partition`: a partitioned dataset, one shard per rank
``netsparse-switch``      :mod:`.switch`: one ToR or spine of the gRPC switch service
``netsparse-compare``     :mod:`.compare`: one table of many reports
``python -m ...cli.X``    :mod:`.collect` (a sweep's tables and plots), :mod:`.analog_calibration`
                          (Tables 1 and 4 of the analogs), :mod:`.aggregate_vs_cache` (SmartFuse
                          against the property cache), :mod:`.netcrafter_sweep` (NetCrafter's W sweep)
========================  ===================================================================

This package imports no torch at import time: ``netsparse-simulate`` and the report tools start without it.
"""
