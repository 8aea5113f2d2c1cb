"""Hardware models: parameters with their sources, topologies, analytic baselines and the seed papers."""
