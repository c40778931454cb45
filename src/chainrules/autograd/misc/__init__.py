"""autograd's ``misc``: `flatten`, `flatten_func`, the `optimizers` and `fixed_points`.

>>> from chainrules.autograd.misc import flatten
>>> flatten({"a": 1.0, "b": [2.0]})[0]
array([1., 2.])
"""

from . import fixed_points, optimizers
from .flatten import flatten, flatten_func

__all__ = ["flatten", "flatten_func", "fixed_points", "optimizers"]
