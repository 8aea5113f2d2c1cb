"""Models of the seed papers next to NetSparse: NetCrafter, BlueField-3 offload and SmartFuse.

NetCrafter's link layer is a C++ unit (``hw_models._C.units``) because it sits in the
simulator's hot loop; ``netcrafter`` wraps it. ``bf3`` and ``smartfuse`` are closed-form cost
models evaluated once per configuration, so they are plain Python. See docs/seeds.md.
"""
