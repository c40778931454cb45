"""Rules for NumPy functions, AD-agnostic: any engine can use them through `rrule`/`frule`.

Importing this package registers every rule. Modules: `indexing` (``x[index]``),
`elementwise` (ufuncs), and the others by area; `scipy` (SciPy's special functions and linear
algebra) only when SciPy is installed.
"""

from . import elementwise, fft, indexing, linalg, reductions, selection, shape  # noqa: F401  (registration happens on import)
from . import higher_order  # noqa: F401,E402
from . import arithmetic, construction  # noqa: F401,E402
from . import declared, more  # noqa: F401,E402

try:
    import scipy as _scipy  # noqa: F401  (optional: the SciPy rules need SciPy itself)
    del _scipy
except ImportError:
    pass
else:
    from . import scipy  # noqa: F401,E402
    from . import scipy_special_bessel  # noqa: F401,E402
    from . import scipy_special_gamma  # noqa: F401,E402
    from . import scipy_special_more  # noqa: F401,E402
    from . import scipy_special_params  # noqa: F401,E402
    from . import scipy_signal  # noqa: F401,E402
    from . import scipy_linalg  # noqa: F401,E402
    from . import scipy_optimize  # noqa: F401,E402
    from . import scipy_stats_multivariate  # noqa: F401,E402
    from . import scipy_integrate  # noqa: F401,E402
    from . import scipy_integrate_ode  # noqa: F401,E402
    from . import scipy_stats  # noqa: F401,E402
from . import polynomial, signal, statistics  # noqa: F401,E402
