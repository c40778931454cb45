"""Rules for NumPy functions, AD-agnostic: any engine can use them through `rrule`/`frule`.

Importing this package registers every rule. Modules: `indexing` (``x[index]``),
`elementwise` (ufuncs).
"""

from . import elementwise, fft, indexing, linalg, reductions, selection, shape  # noqa: F401  (registration happens on import)
from . import higher_order  # noqa: F401,E402
