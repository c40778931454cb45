"""Rules for NumPy functions, AD-agnostic: any engine can use them through `rrule`/`frule`.

Importing this package registers every rule. Modules: `indexing` (``x[index]``),
`elementwise` (ufuncs), and the others by area. SciPy's (`scipy`, `scipy_special_*`,
`scipy_linalg`, ...) are registered when the program imports the SciPy module they are for,
found on a registry lookup or at the start of a trace (`load_scipy_rules`): importing chainrules
does not import SciPy.
"""

import importlib
import importlib.util
import sys

from ..core.registry import add_lazy_loader
from . import elementwise, fft, indexing, linalg, reductions, selection, shape  # noqa: F401  (registration happens on import)
from . import higher_order  # noqa: F401,E402
from . import arithmetic, construction  # noqa: F401,E402
from . import declared, more  # noqa: F401,E402
from . import polynomial, signal, statistics  # noqa: F401,E402

# SciPy's rules, by the SciPy module they are for: registered when the program has imported
# that module (`load_scipy_rules`), so that `import chainrules` does not import SciPy.
SCIPY_RULES = {
    "scipy.special": ("scipy", "scipy_special_params", "scipy_special_bessel",
                      "scipy_special_gamma", "scipy_special_more"),
    "scipy.linalg": ("scipy", "scipy_linalg"),
    "scipy.signal": ("scipy_signal",),
    "scipy.optimize": ("scipy_optimize",),
    "scipy.integrate": ("scipy_integrate", "scipy_integrate_ode"),
    "scipy.stats": ("scipy_stats_multivariate", "scipy_stats"),
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
