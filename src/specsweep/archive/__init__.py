"""Archive: provenance of the sweep and the deterministic archive that rebuilds it."""
