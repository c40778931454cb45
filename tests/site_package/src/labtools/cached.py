"""A model that caches its last input and output, returning the cached output when called again
at (nearly) the same input: the hazard a trace cannot see."""

import numpy as np


class CachedModel:
    def __init__(self):
        self.last_input = None
        self.last_output = None

    def __call__(self, z):
        if self.last_input is not None and np.allclose(z, self.last_input):
            return self.last_output
        out = np.sum(np.sin(z) * z)
        self.last_input, self.last_output = z, out
        return out
