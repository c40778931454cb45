"""Rules for ``scipy.interpolate``: `splines` (an interpolant evaluated at traced points)."""
