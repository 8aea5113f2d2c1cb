"""Hardware models: parameters with their sources, topologies, analytic baselines and the seed papers.

* :mod:`hw_models.params` - NetSparse Table 5 parameters (``HardwareParams``), validated.
* :mod:`hw_models.hardware` - the run's one ``HardwareParams`` from the ``hw`` config group and the
  shortcuts.
* :mod:`hw_models.unit_args` - the one door from ``HardwareParams`` to the C++ units and the simulator:
  the units' hardware arguments (no hardware number is a default in C++), the one encoding of ``auto``,
  ``inf`` and the unbounded cache, and the split of the RIG units into clients and servers.
* :mod:`hw_models.topology` - leaf-spine, HyperX, Dragonfly with deterministic minimal routing.
* :mod:`hw_models.definitions` - useful/SA/SU transfers, Table 1 redundancy, Table 4 locality, Table 3.
* :mod:`hw_models.baselines` - SUOpt and SAOpt (NetSparse §8.1).
* :mod:`hw_models.compute` - SPADE-like and calibrated CPU compute models, overlap combinations.
* :mod:`hw_models.simulator` - NetSparse on the cluster: the C++ discrete-event simulator's wrapper.
* :mod:`hw_models.analysis` - the simulator report, strong scaling, the training ``modeled`` block.
* :mod:`hw_models.analogs` - analogs of the NetSparse Table 6 matrices at the paper's scale, and
  :mod:`hw_models.analog_calibration`, their check against Tables 1 and 4.
* :mod:`hw_models.seeds` - NetCrafter, BF3 and SmartFuse models.

It is the ground floor: it imports nothing of :mod:`netsparse_torch`, which builds on it (an
import-linter contract in ``pyproject.toml``), and needs no torch. Its other modules:

* :mod:`hw_models.errors` - the project's errors (``netsparse_torch.errors`` names them for users).
* :mod:`hw_models.native` - the C++ extension ``hw_models._C``: the simulator core, the analogs;
  :mod:`hw_models.unit_binding` its units, imported by :mod:`hw_models.unit_args` alone;
  :mod:`hw_models.units` is the units' documented face.
* :mod:`hw_models.pattern`, :mod:`hw_models.bounds` - the sparsity pattern and the row bounds.
* :mod:`hw_models.twoface` - Two-Face's stripe classes and cost model.
* :mod:`hw_models.mtx`, :mod:`hw_models.synthetic` - the Matrix Market reader and the synthetic shapes.
"""
