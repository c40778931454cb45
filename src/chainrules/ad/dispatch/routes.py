"""The shared tables and machinery of the routing of NumPy's API (`chainrules.ad.dispatch`):
NumPy's own functions as they were before any trace (`ORIGINALS`), the Python functions and
methods that must reach the engine while tracing (`ROUTED`, `ROUTED_METHODS`), and how a name
is replaced while a trace runs: `Swap` (an attribute of a module or class) and `Rerouted` (a
Python function's code, so that every reference to it is covered). The parts of the dispatch
layer (creation, writes, masked arrays, scalar types, array-likes) and its top
(`chainrules.ad.dispatch.routing`, which installs them) import this module; it imports none of
them.

>>> import numpy as np
>>> ORIGINALS["asarray"] is np.asarray
True
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..trace.tape import record
from ..trace.values import holds_traced

__all__ = ["ORIGINALS", "ROUTED", "ROUTED_METHODS", "REROUTED", "INHERITED", "Swap", "Rerouted",
           "TRACED_PATHS", "traced_path", "routed", "routed_method", "add_loaded_method_lists",
           "loaded_module"]


ORIGINALS = {
    "array": np.array,
    "asarray": np.asarray,
    "asanyarray": np.asanyarray,
    "ascontiguousarray": np.ascontiguousarray,
    "asfortranarray": np.asfortranarray,
    "vectorize.__call__": np.vectorize.__call__,
}


def routed(original: Any, recorded: Any = None) -> Any:
    """``original``, handed to the engine (as a call of ``recorded``, by default ``original``
    itself) when an argument holds a traced value."""
    recorded = original if recorded is None else recorded

    def routed(*args: Any, **kwargs: Any) -> Any:
        if any(holds_traced(a) for a in args) or any(
                holds_traced(v) for v in kwargs.values()):
            return record(recorded, args, kwargs)
        return original(*args, **kwargs)

    routed.__wrapped__ = original
    return routed


class Rerouted:
    """A Python function whose calls reach the engine while tracing, however the program got
    hold of it: ``scipy.special.logsumexp``, ``from scipy.special import logsumexp`` before or
    after ``import chainrules``, an alias. A from-import keeps the function object itself, so
    the object is what changes: while a trace is active its ``__code__`` is a trampoline that
    calls ``replacement`` (made by ``replacement_for(own)``, where ``own`` is a copy of the
    function with its own code, which the replacement and the rules call to compute values).
    Outside a trace the function is exactly as its library made it: no cost.

    The trampoline is compiled once per function (at the first trace), with as many free
    variables as the function's closure, which Python requires of a replacement ``__code__``;
    it reaches the replacement through a constant of its code, not through any namespace.
    """

    def __init__(self, function: Any, replacement_for: Any):
        self.function = function
        self.code = function.__code__
        self.defaults = function.__defaults__
        self.keyword_defaults = function.__kwdefaults__
        self.signature = function.__dict__.get("__signature__", _ABSENT)
        try:  # what inspect.signature says of the function (following __wrapped__)
            self.seen_signature = inspect.signature(function)
        except (TypeError, ValueError):
            self.seen_signature = None
        self.own = types.FunctionType(self.code, function.__globals__, function.__name__,
                                      self.defaults, function.__closure__)
        self.own.__kwdefaults__ = self.keyword_defaults
        self.own.__dict__.update(function.__dict__)
        self.replacement = replacement_for(self.own)
        self.trampoline = _trampoline_code(self, len(self.code.co_freevars),
                                           function.__name__)

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        return self.replacement(*args, **kwargs)

    def install(self) -> None:
        function = self.function
        if self.signature is _ABSENT:  # inspect.signature(function) still reads the original
            function.__signature__ = self.seen_signature
        function.__code__ = self.trampoline  # (*args, **kwargs): the defaults stay, unread

    def uninstall(self) -> None:
        function = self.function
        function.__code__ = self.code
        if self.signature is _ABSENT:
            del function.__signature__

    def applied(self) -> tuple:
        """``(function, trampoline, own code, signature)``: what `install` sets and
        `uninstall` restores, for a caller that applies many in one loop (`KEPT` for a
        function with a signature of its own, which is left alone)."""
        return (self.function, self.trampoline, self.code,
                self.seen_signature if self.signature is _ABSENT else KEPT)


_ABSENT = object()
KEPT = object()  # `Rerouted.applied`: the function's own __signature__ stays


_PLACEHOLDER = 0.5772156649015329  # a constant that the trampoline's code holds, then replaced


def _trampoline_code(target: Any, free_variables: int, name: str) -> types.CodeType:
    """The code of ``def name(*args, **kwargs): return target(args, kwargs)`` with
    ``free_variables`` unused free variables."""
    names = [f"_free{i}" for i in range(free_variables)]
    source = ("def _outer():\n"
              + "".join(f"    {n} = None\n" for n in names)
              + "    def trampoline(*args, **kwargs):\n"
              + "".join(f"        {n}\n" for n in names)
              + f"        target = {_PLACEHOLDER!r}\n"
              + "        return target(args, kwargs)\n"
              + "    return trampoline\n")
    namespace: dict = {}
    exec(compile(source, f"<chainrules: {name} while tracing>", "exec"), namespace)
    code = namespace["_outer"].__code__
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    consts = tuple(target if type(c) is float and c == _PLACEHOLDER else c
                   for c in inner.co_consts)
    return inner.replace(co_consts=consts, co_name=name)


def loaded_module(name: str) -> Any:
    """The module ``name`` if the program has imported it and it is done importing (importlib
    marks a module whose code is still running, as when a library's modules import each
    other), else None: routes are made for loaded modules only.

    >>> loaded_module("numpy") is np, loaded_module("a.module.nobody.imported")
    (True, None)
    """
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


class Swap:
    """``owner.name`` replaced by ``replacement`` while tracing (a module attribute, or a method
    on its class); ``original`` is `INHERITED` for a method the class inherits, restored by
    deleting the replacement."""

    __slots__ = ("owner", "name", "replacement", "original")

    def __init__(self, owner: Any, name: str, replacement: Any, original: Any):
        self.owner, self.name = owner, name
        self.replacement, self.original = replacement, original

    def install(self) -> None:
        setattr(self.owner, self.name, self.replacement)

    def uninstall(self) -> None:
        if self.original is INHERITED:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.original)


REROUTED: dict = {}   # function -> its Rerouted, made when a trace first meets it


# Functions written in Python that convert their arguments with np.asarray (so traced values
# never reach __array_function__), or that take a callable: (module, name).
ROUTED = [("numpy", "apply_along_axis"), ("numpy", "piecewise"), ("numpy", "apply_over_axes"),
          ("numpy", "kaiser"),  # float(beta)
          # dispatched on some arguments only: a traced value in another alone (polyint's k,
          # interp's left and right, unwrap's period) would not reach the engine
          ("numpy", "polyint"), ("numpy", "unwrap"),  # interp: TRACED_PATHS
          ("numpy", "nan_to_num"),  # np.copyto (np.full, np.full_like: WRITABLE below)
          ("numpy", "asarray_chkfinite"), ("numpy", "require"),  # np.asarray(a) first
          ("scipy.special", "logsumexp"), ("scipy.special", "softmax"),
          ("scipy.special", "log_softmax"), ("scipy.special", "polygamma"),
          ("scipy.special", "multigammaln"),
          *[("scipy.special", f"spherical_{kind}") for kind in ("jn", "yn", "in", "kn")],
          ("scipy.linalg", "solve_triangular"),
          ("scipy.linalg", "expm"), ("scipy.linalg", "cho_solve"),
          *[("scipy.signal", name) for name in ("convolve", "correlate", "fftconvolve",
                                                "convolve2d", "correlate2d")],
          *[("scipy.linalg", name) for name in ("solve", "inv", "det", "cholesky", "eigh",
                                                "block_diag", "lu_solve", "cho_factor",
                                                "lu_factor", "lu", "solve_sylvester", "pinv",
                                                "sqrtm", "logm", "solve_banded",
                                                "schur", "toeplitz", "circulant", "hankel",
                                                "svd", "svdvals", "qr", "eig", "eigvals",
                                                "lstsq", "bandwidth", "issymmetric",
                                                "ishermitian")],
          *[("scipy.spatial.distance", name) for name in ("cdist", "pdist", "squareform")],
          *[("scipy.sparse.linalg", name) for name in (
              "spsolve", "expm_multiply", "cg", "bicg", "bicgstab", "cgs", "gmres", "lgmres",
              "minres", "qmr", "tfqmr")],
          *[("scipy.optimize", name) for name in ("root", "fsolve", "minimize", "least_squares",
                                                  "curve_fit")],
          # traced through, golden's gradient is always zero and the C root finders refuse
          *[("scipy.optimize", name) for name in ("minimize_scalar", "golden", "brent",
                                                  "fminbound", "brentq", "brenth", "ridder",
                                                  "bisect", "toms748", "root_scalar",
                                                  "newton")],
          ("chainrules.rules.scipy.interpolate.splines", "evaluate"),
          ("chainrules.rules.scipy.signal.peaks", "peak_search"),
          ("chainrules.rules.scipy.stats.fits", "plain_fit"),
          *[("chainrules.rules.scipy.optimize.linear_programs", name)
            for name in ("plain_linprog", "active_constraints")],
          ("chainrules.rules.scipy.optimize.implicit", "minimizer_at"),
          ("chainrules.rules.scipy.linalg.composed", "rq_phases"),
          ("chainrules.rules.scipy.linalg.composed", "balancing"),
          ("chainrules.rules.scipy.linalg.composed", "riccati_solution"),
          *[("chainrules.rules.scipy.linalg.banded", name)
            for name in ("band_eigen_phases", "reference_eigenvectors")],
          ("chainrules.rules.scipy.optimize.nonnegative", "nnls_passive_set"),
          ("chainrules.rules.scipy.sparse.linalg", "factor_solve"),
          *[("scipy.integrate", name) for name in ("quad", "quad_vec", "trapezoid",
                                                   "cumulative_trapezoid", "simpson",
                                                   "odeint", "solve_ivp")]]


# SciPy functions computed in C (or filling arrays of their own), for which a version in NumPy
# operations exists (in the rules layer, which an engine traces): (module, name, module of the
# NumPy version[, its name, when not the function's own]); a method is named with its class,
# ``"rv_generic.stats"``, its version by the method's name. While a trace is active, a call
# whose arguments hold traced values runs that version (`traced_path`), which may hand the
# options its function's rule covers back to be recorded (``np.interp`` without ``period``,
# ``lfilter`` without ``zi``).
TRACED_PATHS = [
    *[("scipy.ndimage", name, "chainrules.rules.scipy.ndimage.filters")
      for name in ("correlate1d", "convolve1d", "correlate", "convolve", "gaussian_filter1d",
                   "gaussian_filter", "uniform_filter1d", "uniform_filter", "sobel", "prewitt",
                   "laplace", "gaussian_laplace", "gaussian_gradient_magnitude",
                   "rank_filter", "percentile_filter", "median_filter", "minimum_filter",
                   "maximum_filter", "minimum_filter1d", "maximum_filter1d")],
    *[("scipy.ndimage", name, "chainrules.rules.scipy.ndimage.interpolation")
      for name in ("map_coordinates", "shift", "zoom")],
    ("numpy", "ndenumerate", "chainrules.rules.numpy.iteration"),
    ("numpy", "interp", "chainrules.rules.numpy.signal"),
    ("scipy.signal", "savgol_filter", "chainrules.rules.scipy.signal.savgol"),
    ("scipy.signal", "oaconvolve", "chainrules.rules.scipy.signal.composed"),
    ("scipy.optimize", "nnls", "chainrules.rules.scipy.optimize.nonnegative"),
    *[("scipy.optimize", name, "chainrules.rules.scipy.optimize.linear_programs")
      for name in ("linprog", "milp")],
    *[("scipy.signal", name, "chainrules.rules.scipy.signal.peaks")
      for name in ("find_peaks", "peak_prominences", "peak_widths")],
    ("scipy.stats._stats_py", "_cdf_distance", "chainrules.rules.scipy.stats.distances",
     "cdf_distance"),
    ("scipy.stats._stats_mstats_common", "_find_repeats", "chainrules.rules.scipy.stats.repeats",
     "find_repeats"),
    ("scipy.stats._stats_mstats_common", "siegelslopes_pythran",
     "chainrules.rules.scipy.stats.robust_lines", "repeated_medians"),
    *[("scipy.stats._continuous_distns", f"{name}_gen.fit", "chainrules.rules.scipy.stats.fits",
       f"{name}_fit") for name in ("expon", "uniform")],
    # SciPy's generic fit, and the special ones whose code converts the data with asarray
    *[("scipy.stats._distn_infrastructure" if owner == "rv_continuous" else
       "scipy.stats._continuous_distns", f"{owner}.fit", "chainrules.rules.scipy.stats.fits",
       "continuous_fit") for owner in ("rv_continuous", "logistic_gen", "lognorm_gen",
                                       "rayleigh_gen", "skewnorm_gen", "weibull_min_gen",
                                       "beta_gen", "powerlaw_gen")],
    ("scipy.stats._distn_infrastructure", "rv_generic.nnlf",
     "chainrules.rules.scipy.stats.fits", "negative_log_likelihood"),
    ("scipy.stats._multivariate", "invwishart_gen._logpdf",
     "chainrules.rules.scipy.stats.multivariate", "invwishart_logpdf"),
    ("scipy.stats._multivariate", "vonmises_fisher_gen._process_parameters",
     "chainrules.rules.scipy.stats.multivariate", "vonmises_fisher_parameters"),
    ("scipy.signal._upfirdn", "upfirdn", "chainrules.rules.scipy.signal.composed"),
    *[("scipy.signal", name, "chainrules.rules.scipy.signal.initial_state")
      for name in ("lfilter", "sosfilt")],
    *[("scipy.fft", name, "chainrules.rules.scipy.fft.transforms")
      for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                   "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift",
                   "dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn")],
    # pocketfft's functions, behind scipy.fft's uarray dispatch: reached from SciPy's own
    # modules, which bound the dispatching functions at import (signal.czt's fft)
    *[("scipy.fft._pocketfft", name, "chainrules.rules.scipy.fft.transforms")
      for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                   "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "dct", "idct", "dst", "idst",
                   "dctn", "idctn", "dstn", "idstn")],
    *[("scipy.linalg", name, "chainrules.rules.scipy.linalg.composed")
      for name in ("solve_continuous_lyapunov", "solve_lyapunov", "solve_discrete_lyapunov",
                   "expm_frechet", "companion", "solve_toeplitz", "matmul_toeplitz",
                   "fractional_matrix_power", "funm", "signm", "solveh_banded", "rq",
                   "matrix_balance", "solve_continuous_are", "solve_discrete_are", "norm")],
    *[("scipy.linalg", name, "chainrules.rules.scipy.linalg.banded")
      for name in ("cholesky_banded", "cho_solve_banded", "eig_banded", "eigvals_banded",
                   "eigh_tridiagonal", "eigvalsh_tridiagonal")],
    ("scipy._lib.array_api_compat.numpy", "clip", "chainrules.rules.scipy.array_api"),
    ("scipy._lib.array_api_compat.numpy.linalg", "solve", "chainrules.rules.scipy.array_api"),
    ("scipy._lib.array_api_extra._lib._funcs", "_apply_where",
     "chainrules.rules.scipy.array_api", "apply_where"),
    *[("scipy._lib._util", f"_{name}", "chainrules.rules.scipy.array_api", name)
      for name in ("lazywhere", "lazyselect")],
    ("scipy.interpolate._cubic", "PchipInterpolator._find_derivatives",
     "chainrules.rules.scipy.interpolate.piecewise", "pchip_derivatives"),
    *[("scipy.stats._distn_infrastructure", name, "chainrules.rules.scipy.stats.moments")
      for name in ("rv_generic.stats", "rv_generic.entropy", "rv_generic.moment",
                   "rv_continuous.expect")],
    *[("statistics", name, "chainrules.rules.python_statistics")
      for name in ("mean", "fmean", "geometric_mean", "harmonic_mean", "variance", "stdev",
                   "pvariance", "pstdev")],
]


def traced_path(original: Any, module: str, name: str, recorded: Any = None) -> Any:
    """``original``, or ``module.name`` (its NumPy version) when an argument holds traced
    values. A version returns ``NotImplemented`` for the options that the function's own rule
    covers: the call is then recorded (as a call of ``recorded``, by default ``original``),
    and the version holds only what the rule does not (``lfilter``'s initial conditions). A
    first argument that is an iterator (``statistics.mean(x[i] for i in ...)``) is read once,
    here, to look into it."""
    recorded = original if recorded is None else recorded

    def call(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Iterator):
            args = (list(args[0]),) + args[1:]
        if any(holds_traced(a) for a in args) or any(
                holds_traced(v) for v in kwargs.values()):
            result = getattr(importlib.import_module(module), name)(*args, **kwargs)
            return record(recorded, args, kwargs) if result is NotImplemented else result
        return original(*args, **kwargs)

    call.__wrapped__ = original
    return call


# Methods of classes whose instances hold the parameters (``scipy.stats`` distributions, plain
# and frozen): (module, class, method, redirect). While a trace is active the method is
# rerouted in place when the class defines it (`_method_route`: bound methods taken before the
# trace reach it too), else replaced on the class, so every instance and every import style
# reaches it; a call whose
# arguments hold traced values is recorded as ``record(*redirect(self, args, kwargs))``:
# ``redirect`` names the registered function to record and its arguments (the instance's own
# parameters resolved, so that the recorded arguments are arrays and numbers).
ROUTED_METHODS: list = []


# The rule modules that list their distributions' methods (their own ``ROUTED_METHODS``),
# added above once loaded: they are, lazily, when the program imports scipy.stats
# (chainrules.rules.load_scipy_rules).
_METHOD_LISTS = [f"{__package__.partition('.')[0]}.rules.scipy.{name}"
                 for name in ("stats.univariate", "stats.multivariate", "sparse.products")]


def add_loaded_method_lists() -> None:
    for name in list(_METHOD_LISTS):
        routes = getattr(sys.modules.get(name), "ROUTED_METHODS", None)
        if routes is not None:
            ROUTED_METHODS.extend(routes)
            _METHOD_LISTS.remove(name)


INHERITED = object()  # a replaced method that the class inherits


def routed_method(original: Any, redirect: Any) -> Any:
    """The replacement of a method in `ROUTED_METHODS`: ``original`` for plain arguments."""
    def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if any(holds_traced(a) for a in args) or any(
                holds_traced(v) for v in kwargs.values()) or _holds_traced_parameters(self):
            function, args, kwargs = redirect(self, args, kwargs)
            return record(function, args, kwargs)
        return original(self, *args, **kwargs)

    routed.__wrapped__ = original
    routed.__name__ = getattr(original, "__name__", "routed")
    return routed


def _holds_traced_parameters(instance: Any) -> bool:
    """Whether an instance keeps traced parameters (a frozen distribution: ``args``/``kwds``)."""
    return any(holds_traced(getattr(instance, name, None)) for name in ("args", "kwds"))
