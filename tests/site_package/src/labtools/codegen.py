"""Functions generated from source into a namespace of their own, as symbolic code generators
(``sympy.lambdify``) make them, with NumPy's names bound in that namespace."""

import numpy as np

_SOURCE = """
def model(x, y):
    return array([[sin(x) * y, x ** 2], [exp(y), x * y]])
"""


def generate(source=_SOURCE, name="model"):
    namespace = {"array": np.array, "sin": np.sin, "exp": np.exp, "float64": np.float64}
    exec(source, namespace)
    return namespace[name]


model = generate()  # kept in a module global, as users keep a lambdified function
