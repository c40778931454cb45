"""Rules for NumPy's functions, one module per area; importing this package registers them.

`elementwise` (ufuncs, one line each), `indexing` (``x[index]``), `reductions`, `shape`,
`selection`, `construction`, `linalg` (products and ``np.linalg``), `fft`, `signal`,
`statistics`, `polynomial`, `bessel` (``np.i0`` and ``np.kaiser``), `remainder` (``%``, ``fmod``, ``divmod``), `array_api` (the
array-API spellings of existing functions), `callables` (functions that take a user callable:
``vectorize``, ``apply_along_axis``, ``piecewise``) and `non_differentiable` (predicates and
index functions, declared so); `operators` makes Python's operators keys of their ufuncs' rules.
"""

from . import elementwise, fft, indexing, linalg, reductions, selection, shape  # noqa: F401  (registration happens on import)
from . import callables  # noqa: F401
from . import remainder, construction  # noqa: F401
from . import non_differentiable, array_api  # noqa: F401
from . import polynomial, signal, statistics  # noqa: F401
from . import bessel  # noqa: F401
from . import operators  # noqa: F401  (Python's operators as keys of their ufuncs' rules)
