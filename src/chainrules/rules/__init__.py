"""Rules for NumPy and SciPy functions, AD-agnostic: any engine can use them through
`rrule`/`frule`.

The folders are named after the library whose functions they cover: `numpy/` (``np.*``,
``np.linalg``, ``np.fft``; registered when this package is imported) and `scipy/`
(``special/``, ``stats/``, ``linalg/``, ``integrate/``, ``optimize/``, ``signal/``; each
registered when the program imports the SciPy module it is for, found on a registry lookup or
at the start of a trace, `load_scipy_rules`: importing chainrules does not import SciPy).
`define` is how a rule is written from its formulas (its docstring shows how to add one);
`refused_arguments` holds the elementwise rules some of whose arguments have no derivative.
"""

import importlib
import importlib.util
import sys

from ..core.registry import add_lazy_loader
from . import numpy  # noqa: F401  (registers NumPy's rules)

# SciPy's rules, by the SciPy module they are for: registered when the program has imported
# that module (`load_scipy_rules`), so that `import chainrules` does not import SciPy.
SCIPY_RULES = {
    "scipy.special": ("scipy.special.elementary", "scipy.special.parameters",
                      "scipy.special.bessel", "scipy.special.gamma",
                      "scipy.special.other_functions", "scipy.special.orthogonal"),
    "scipy.linalg": ("scipy.linalg.stacked", "scipy.linalg.factorizations",
                     "scipy.linalg.special_matrices", "scipy.linalg.composed",
                     "scipy.linalg.banded", "scipy.linalg.structure"),
    "scipy.signal": ("scipy.signal.convolution", "scipy.signal.peaks"),
    "scipy.optimize": ("scipy.optimize.implicit", "scipy.optimize.scalar",
                       "scipy.optimize.least_squares", "scipy.optimize.nonnegative",
                       "scipy.optimize.linear_programs"),
    "scipy.integrate": ("scipy.integrate.quadrature", "scipy.integrate.ode"),
    "scipy.stats": ("scipy.stats.multivariate", "scipy.stats.univariate", "scipy.stats.fits"),
    "scipy.interpolate": ("scipy.interpolate.splines",),
    "scipy.spatial.distance": ("scipy.spatial.distance",),
    "scipy.sparse": ("scipy.sparse.products",),
    "scipy.sparse.linalg": ("scipy.sparse.linalg",),
}
_scipy_pending = dict(SCIPY_RULES)  # those not registered yet


def _imported(name: str) -> bool:
    """Whether the module ``name`` is imported, and done importing (importlib marks a module
    whose code is still running, as when a SciPy module imports another)."""
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    return module is not None and not getattr(spec, "_initializing", False)


def load_scipy_rules(everything: bool = False) -> None:
    """Register the rules for the SciPy modules that the program has imported (with
    ``everything``, import SciPy's modules first, if SciPy is installed: the coverage report
    does). A registry lookup that misses, the start of a trace and an import statement run
    while tracing call it (`add_lazy_loader`).

    >>> import scipy.special, chainrules
    >>> load_scipy_rules()
    >>> chainrules.rrule.lookup(scipy.special.gammaln) is not None
    True
    """
    if everything and importlib.util.find_spec("scipy") is not None:
        for name in list(_scipy_pending):
            importlib.import_module(name)
    while any(_imported(name) for name in _scipy_pending):  # a rule module imports others
        for name in [name for name in _scipy_pending if _imported(name)]:
            for rule_module in _scipy_pending.pop(name):
                importlib.import_module(f"{__name__}.{rule_module}")


add_lazy_loader(load_scipy_rules)
