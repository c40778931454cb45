"""Which NumPy (and SciPy) functions have rules: a listing generated from the registry.

Run ``python -m chainrules.coverage`` (``--markdown`` for a table, ``--autograd`` to compare
with HIPS autograd's registry when it is installed). Functions are listed by the categories of
the rule library; each is marked ``rrule``/``frule`` when registered, ``non-differentiable``
when declared so, and ``missing`` otherwise. Then the whole namespace (`namespace_walk`): the
counts of NumPy's public callables (``numpy``, ``numpy.linalg``, ``numpy.fft``, ndarray methods
and operators) that are differentiable, declared non-differentiable, excluded with a reason,
differentiable without a rule yet, or unclassified; ``--namespaces`` lists every one. The last
lines list the rules declared first-order only
(``chainrules.core.registry.first_order_only``), each with its reason.

>>> rows = coverage_rows()
>>> ("elementwise", "np.sin", True, True, False) in rows
True
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from typing import Any, Iterator

from .core.naming import function_name
from .core.registry import FIRST_ORDER_ONLY, NON_DIFFERENTIABLE, frule, rrule

__all__ = ["CATEGORIES", "EXCLUDED", "NO_RULE_YET", "NAMESPACES", "STATUSES", "coverage_rows",
           "first_order_only_rows", "resolve", "public_callables", "classify", "namespace_walk", "namespace_counts",
           "main"]

# The functions the rule library is meant to cover, by category (names as users write them).
CATEGORIES: dict[str, list[str]] = {
    "indexing and selection": [
        "operator.getitem", "np.take", "np.take_along_axis", "np.compress", "np.diagonal",
        "np.choose", "np.where", "np.select", "np.extract", "np.nonzero",
    ],
    "elementwise": [
        "np.add", "np.subtract", "np.multiply", "np.divide", "np.true_divide", "np.negative",
        "np.positive", "np.power", "np.float_power", "np.exp", "np.exp2", "np.expm1", "np.log",
        "np.log2", "np.log10", "np.log1p", "np.logaddexp", "np.logaddexp2", "np.sqrt",
        "np.cbrt", "np.square", "np.reciprocal", "np.sin", "np.cos", "np.tan", "np.arcsin",
        "np.arccos", "np.arctan", "np.sinh", "np.cosh", "np.tanh", "np.arcsinh", "np.arccosh",
        "np.arctanh", "np.arctan2", "np.hypot", "np.abs", "np.absolute", "np.fabs", "np.sign",
        "np.maximum", "np.minimum", "np.fmax", "np.fmin", "np.clip", "np.real", "np.imag",
        "np.conj", "np.conjugate", "np.angle", "np.deg2rad", "np.rad2deg", "np.degrees",
        "np.radians", "np.sinc", "np.heaviside", "np.remainder", "np.mod", "np.fmod",
        "np.divmod",
    ],
    "reductions": [
        "np.sum", "np.mean", "np.prod", "np.max", "np.min", "np.amax", "np.amin", "np.ptp",
        "np.std", "np.var", "np.average", "np.cumsum", "np.cumprod", "np.nansum",
        "np.nanmean", "np.nanmax", "np.nanmin", "np.nanprod", "np.nanstd", "np.nanvar",
        "np.trace", "np.diff", "np.sort", "np.linalg.norm", "np.partition",
    ],
    "shape": [
        "np.reshape", "np.ravel", "np.transpose", "np.swapaxes", "np.moveaxis",
        "np.expand_dims", "np.squeeze", "np.broadcast_to", "np.concatenate", "np.stack",
        "np.hstack", "np.vstack", "np.dstack", "np.column_stack", "np.split", "np.array_split",
        "np.tile", "np.repeat", "np.flip", "np.fliplr", "np.flipud", "np.roll", "np.rot90",
        "np.pad", "np.triu", "np.tril", "np.diag", "np.diagflat", "np.atleast_1d",
        "np.atleast_2d", "np.atleast_3d", "np.meshgrid", "np.copy", "np.array", "np.asarray",
        "chainrules.rules.numpy.shape.astype", "np.astype", "np.append", "np.insert", "np.delete",
        "np.rollaxis", "np.row_stack", "np.lib.stride_tricks.sliding_window_view",
    ],
    "construction and differences": [
        "np.linspace", "np.logspace", "np.geomspace", "np.full", "np.full_like", "np.vander",
        "np.gradient", "np.ediff1d", "np.nan_to_num", "np.real_if_close",
    ],
    "linear algebra": [
        "np.dot", "np.vdot", "np.inner", "np.outer", "np.matmul", "np.tensordot", "np.einsum",
        "np.kron", "np.linalg.inv", "np.linalg.solve", "np.linalg.det", "np.linalg.slogdet",
        "np.linalg.cholesky", "np.linalg.eigh", "np.linalg.eigvalsh", "np.linalg.svd",
        "np.linalg.qr", "np.linalg.pinv", "np.linalg.matrix_power", "np.linalg.multi_dot",
        "np.linalg.lstsq", "np.cross", "np.linalg.eig", "np.linalg.eigvals",
    ],
    "fft": [
        "np.fft.fft", "np.fft.ifft", "np.fft.rfft", "np.fft.irfft", "np.fft.fft2",
        "np.fft.ifft2", "np.fft.rfft2", "np.fft.irfft2", "np.fft.fftn", "np.fft.ifftn",
        "np.fft.rfftn", "np.fft.irfftn", "np.fft.fftshift", "np.fft.ifftshift",
    ],
    "statistics, signals and polynomials": [
        "np.median", "np.percentile", "np.quantile", "np.nanmedian", "np.nanpercentile",
        "np.nanquantile", "np.cov", "np.corrcoef", "np.histogram", "np.convolve",
        "np.correlate", "np.interp", "np.trapezoid", "np.trapz", "np.polyval", "np.polyfit",
        "np.roots",
    ],
    "higher-order": [
        "chainrules.rules.numpy.callables.vectorized_call", "np.apply_along_axis",
        "np.piecewise",
    ],
    "zero-derivative and non-differentiable": [
        "np.floor", "np.ceil", "np.round", "np.rint", "np.trunc", "np.equal", "np.less",
        "np.greater", "np.isnan", "np.isinf", "np.isfinite", "np.argmax", "np.argmin",
        "np.argsort", "np.searchsorted", "np.shape", "np.zeros_like", "np.ones_like",
        "np.floor_divide", "np.argpartition",
    ],
    "scipy (optional)": [
        "scipy.special.gammaln", "scipy.special.digamma", "scipy.special.erf",
        "scipy.special.erfc", "scipy.special.expit", "scipy.special.logit",
        "scipy.special.logsumexp", "scipy.special.xlogy", "scipy.special.softmax",
        "scipy.special.log_softmax", "scipy.linalg.solve_triangular", "scipy.linalg.expm",
        "scipy.linalg.cho_solve",
        "scipy.special.erfinv", "scipy.special.erfcinv", "scipy.special.erfcx",
        "scipy.special.ndtr", "scipy.special.ndtri", "scipy.special.log_ndtr",
        "scipy.special.dawsn", "scipy.special.entr", "scipy.special.log_expit",
        "scipy.special.xlog1py", "scipy.special.expm1", "scipy.special.log1p",
        "scipy.special.cbrt", "scipy.special.gamma", "scipy.special.rgamma",
        "scipy.special.gammasgn", "scipy.special.polygamma", "scipy.special.multigammaln",
        "scipy.special.beta", "scipy.special.betaln", "scipy.special.gammainc",
        "scipy.special.gammaincc", "scipy.special.betainc", "scipy.special.zeta",
        "scipy.special.i0", "scipy.special.i1", "scipy.special.i0e", "scipy.special.i1e",
        "scipy.special.j0", "scipy.special.j1", "scipy.special.y0", "scipy.special.y1",
        "scipy.special.jv", "scipy.special.yv", "scipy.special.iv", "scipy.special.ive",
        "scipy.special.kv", "scipy.special.kve", "scipy.special.jn", "scipy.special.yn",
        "scipy.special.k0", "scipy.special.k1", "scipy.special.k0e", "scipy.special.k1e",
        "scipy.signal.convolve", "scipy.signal.correlate", "scipy.signal.fftconvolve",
        "scipy.signal.convolve2d", "scipy.signal.correlate2d", "scipy.signal.lfilter",
        "scipy.linalg.solve", "scipy.linalg.inv", "scipy.linalg.det", "scipy.linalg.cholesky",
        "scipy.linalg.eigh", "scipy.linalg.block_diag", "scipy.linalg.lu_solve",
        "scipy.linalg.cho_factor", "scipy.linalg.lu_factor", "scipy.linalg.lu",
        "scipy.linalg.solve_sylvester", "scipy.linalg.sqrtm", "scipy.linalg.logm",
        "scipy.linalg.solve_banded",
        "scipy.optimize.root", "scipy.optimize.fsolve", "scipy.optimize.minimize",
        "scipy.optimize.least_squares", "scipy.optimize.curve_fit",
        *[f"scipy.optimize.{name}" for name in (
            "brentq", "brenth", "ridder", "bisect", "toms748", "root_scalar",
            "minimize_scalar", "golden", "brent", "fminbound", "newton")],
        "scipy.linalg.schur",
        *[f"scipy.linalg.{name}" for name in ("svd", "svdvals", "qr", "eig", "eigvals",
                                               "lstsq", "toeplitz", "circulant", "hankel")],
        *[f"scipy.spatial.distance.{name}" for name in ("cdist", "pdist", "squareform")],
        "scipy.sparse.linalg.spsolve", "scipy.sparse.linalg.expm_multiply",
        *[f"scipy.sparse.linalg.{name}" for name in (
            "cg", "bicg", "bicgstab", "cgs", "gmres", "lgmres", "minres", "qmr", "tfqmr")],
        "scipy.integrate.quad", "scipy.integrate.quad_vec", "scipy.integrate.trapezoid",
        "scipy.integrate.cumulative_trapezoid", "scipy.integrate.simpson",
        "scipy.integrate.odeint", "scipy.integrate.solve_ivp",
        *[f"scipy.stats.{name}.{method}" for name in (
            "norm", "expon", "laplace", "cauchy", "logistic", "uniform", "t", "gamma", "chi2",
            "beta", "vonmises", "truncnorm", "gennorm", "pareto", "gumbel_r", "gumbel_l",
            "halfnorm", "rayleigh", "lognorm", "weibull_min", "invgamma", "skewnorm", "genextreme",
            "f", "alpha", "anglit", "arcsine", "argus", "betaprime", "bradford", "burr", "burr12",
            "chi", "cosine", "dgamma", "dweibull", "erlang", "exponnorm", "exponpow", "exponweib",
            "fatiguelife", "fisk", "foldcauchy", "foldnorm", "genexpon", "gengamma",
            "genhalflogistic", "genlogistic", "genpareto", "gibrat", "gompertz", "halfcauchy",
            "halflogistic", "halfgennorm", "hypsecant", "invgauss", "invweibull", "johnsonsb",
            "johnsonsu", "kappa3", "laplace_asymmetric", "levy", "levy_l", "loggamma",
            "loglaplace", "loguniform", "lomax", "maxwell", "mielke", "moyal", "nakagami",
            "norminvgauss", "powerlaw", "powerlognorm", "powernorm", "rdist", "recipinvgauss",
            "rice", "semicircular", "skewcauchy", "trapezoid", "triang", "truncexpon",
            "truncpareto", "truncweibull_min", "vonmises_line", "wald", "weibull_max",
            "wrapcauchy", "jf_skew_t", "reciprocal", "ncx2", "geninvgauss",
            "crystalball", "pearson3")
          for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")],
        *[f"scipy.stats.{name}.{method}" for name in (
            "poisson", "binom", "nbinom", "bernoulli", "geom", "betabinom", "betanbinom",
            "logser", "planck", "boltzmann", "dlaplace", "yulesimon", "zipf", "skellam")
          for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")],
        "scipy.stats.multivariate_normal.logpdf", "scipy.stats.multivariate_normal.pdf",
        "scipy.stats.dirichlet.logpdf", "scipy.stats.dirichlet.pdf",
        "scipy.stats.multinomial.logpmf", "scipy.stats.multinomial.pmf",
        *[f"scipy.special.{name}" for name in (
            "exp1", "expi", "expn", "kl_div", "rel_entr", "poch", "spence", "hyp1f1", "boxcox",
            "boxcox1p", "inv_boxcox", "owens_t", "exprel", "ellipk", "ellipe", "wofz", "sindg",
            "cosdg", "huber", "pseudo_huber", "powm1", "cosm1", "exp2", "exp10", "radian",
            "tandg", "cotdg", "erfi", "wrightomega", "ellipkinc", "ellipeinc", "ellipkm1",
            "voigt_profile", "hyp2f1", "loggamma", "binom", "gammaincinv", "gammainccinv",
            "betaincinv", "ndtri_exp", "chdtr", "chdtrc", "gdtr", "gdtrc", "pdtr", "pdtrc",
            "stdtr", "bdtr", "bdtrc", "bdtri", "nbdtr", "nbdtrc", "nbdtri", "stdtrit", "chdtri",
            "gdtrix", "pdtri", "zetac", "kn", "hankel1", "hankel2", "jve", "yve", "struve", "modstruve",
            "spherical_jn", "spherical_yn", "spherical_in", "spherical_kn", "sici", "shichi",
            "fresnel", "airy", "agm", "ellipj", "betaincc", "betainccinv", "inv_boxcox1p",
            "hyp0f1", "nrdtrimn", "nrdtrisd", "hankel1e", "hankel2e", "ber", "bei", "ker", "kei",
            "berp", "beip", "kerp", "keip", "kelvin", "itj0y0", "iti0k0", "it2j0y0", "it2i0k0",
            "itstruve0", "it2struve0", "itmodstruve0", "besselpoly", "hyperu", "wright_bessel",
            "fdtr", "fdtrc", "fdtri", "gdtria", "gdtrib", "btdtria", "btdtrib", "chdtriv",
            "stdtridf", "pdtrik", "log_wright_bessel")],
        *[f"scipy.special.eval_{name}" for name in (
            "jacobi", "legendre", "sh_legendre", "gegenbauer", "chebyt", "chebyu", "chebyc",
            "chebys", "sh_chebyt", "sh_chebyu", "hermite", "hermitenorm", "laguerre",
            "genlaguerre")], "scipy.special.lpmv",
    ],
    "scipy parameter derivatives (chainrules' own functions, used by the rules above)": [
        "chainrules.rules.scipy.special.parameters.gammainc_da",
        "chainrules.rules.scipy.special.parameters.gammaincc_da",
        "chainrules.rules.scipy.special.parameters.betainc_da",
        "chainrules.rules.scipy.special.parameters.betainc_db",
        "chainrules.rules.scipy.special.parameters.zeta_dx",
        "chainrules.rules.scipy.special.parameters.gammainc_daa",
        "chainrules.rules.scipy.special.parameters.gammaincc_daa",
        "chainrules.rules.scipy.special.parameters.betainc_daa",
        "chainrules.rules.scipy.special.parameters.betainc_dab",
        "chainrules.rules.scipy.special.parameters.betainc_dbb",
        "chainrules.rules.scipy.special.parameters.zeta_dxx",
    ],
}


# --------------------------------------------------------------------------------------------
# The whole namespace: every public callable of numpy, numpy.linalg, numpy.fft and ndarray
# --------------------------------------------------------------------------------------------

# Why a public callable is left out, by reason; names are as users write them ("np.save",
# "np.linalg.cond", "ndarray.fill"). Names that an installed NumPy lacks are ignored, so one
# table serves every release. Scalar types (np.float64, ...) and exception and warning classes
# are left out by kind (`_excluded_kind`), not by name.
_EXCLUDED_GROUPS: dict[str, str] = {
    "I/O: reads or writes files, buffers or other processes' memory; no array function of "
    "traced values":
        "np.save np.savez np.savez_compressed np.savetxt np.load np.loadtxt np.genfromtxt "
        "np.fromfile np.fromregex np.frombuffer np.fromstring np.fromiter np.from_dlpack "
        "np.DataSource np.memmap np.recfromcsv np.recfromtxt ndarray.tofile ndarray.dump "
        "ndarray.dumps ndarray.tobytes ndarray.tostring ndarray.to_device",
    "printing, formatting and documentation": (
        "np.array2string np.array_repr np.array_str np.base_repr np.binary_repr "
        "np.format_float_positional np.format_float_scientific np.get_printoptions "
        "np.set_printoptions np.printoptions np.typename np.info np.show_config "
        "np.show_runtime np.get_include np.test np.linalg.test np.fft.test np.disp np.source "
        "np.lookfor np.who np.add_docstring np.add_newdoc np.add_newdoc_ufunc "
        "np.set_string_function"),
    "floating-point error and buffer configuration": (
        "np.errstate np.geterr np.seterr np.geterrcall np.seterrcall np.getbufsize "
        "np.setbufsize np.geterrobj np.seterrobj np.set_numeric_ops"),
    "dtypes and type objects: describe types, take no array values": (
        "np.dtype np.finfo np.iinfo np.promote_types np.mintypecode np.isdtype np.issubdtype "
        "np.ufunc np.issctype np.issubclass_ np.issubsctype np.maximum_sctype np.obj2sctype "
        "np.sctype2char np.find_common_type np.format_parser"),
    "dates and times (datetime64, business days): no float tangent space": (
        "np.busday_count np.busday_offset np.is_busday np.busdaycalendar "
        "np.datetime_as_string np.datetime_data np.isnat"),
    "arrays built from shapes and sizes (integers): no float input to differentiate; "
    "np.arange's length depends on its values (use np.linspace for traced endpoints)": (
        "np.empty np.zeros np.ones np.arange np.eye np.identity np.tri np.indices "
        "np.diag_indices np.tril_indices np.triu_indices np.mask_indices np.bartlett "
        "np.blackman np.hamming np.hanning np.broadcast_shapes"),
    "plain Python functions made of dispatched operations: the engine differentiates them "
    "operation by operation (tests/rules/test_namespace.py checks it)": (
        "np.fft.fftfreq np.fft.rfftfreq np.fromfunction"),
    "Python-object helpers: plain functions on Python objects and flags, not dispatched": (
        "np.isscalar np.iterable np.isfortran np.safe_eval np.byte_bounds np.get_array_wrap"),
    "iterators and index helpers: classes that walk arrays (index the traced array instead; "
    "np.ndenumerate of a traced array reads each element by indexing)": (
        "np.broadcast np.flatiter np.ndenumerate np.ndindex np.nditer np.nested_iters "
        "np.ndarray np.ix_"),
    "np.matrix, record and character arrays: subclasses with their own semantics, not "
    "supported (use 2-D ndarrays and plain dtypes)": (
        "np.matrix np.asmatrix np.bmat np.mat np.recarray np.record np.chararray "
        "np.compare_chararrays"),
    "object arrays: np.frompyfunc makes ufuncs of Python objects, which would hide traced "
    "values (use np.vectorize)": "np.frompyfunc",
    "classes whose calls chainrules routes elsewhere: np.vectorize's __call__ is intercepted "
    "while tracing (chainrules.ad.dispatch.routing); a np.poly1d is evaluated with np.polyval": (
        "np.vectorize np.poly1d"),
    "an array write, followed by the engine's write tracking (chainrules.ad.dispatch.writes, "
    "docs/mutation.md), not by a rule": (
        "np.copyto np.fill_diagonal np.place np.put np.put_along_axis np.putmask ndarray.fill "
        "ndarray.put"),
    "writes into its argument in a way the engine does not follow (docs/mutation.md): build a "
    "new array (np.where, np.stack, index assignment) instead": (
        "ndarray.itemset ndarray.setfield ndarray.setflags ndarray.resize ndarray.sort "
        "ndarray.partition"),
    "memory views and byte layout: reinterpret bytes, not values": (
        "ndarray.view ndarray.getfield ndarray.byteswap ndarray.newbyteorder"),
    "deprecated aliases, removed in NumPy 2.0 (their NumPy 2 names are covered: prod, cumprod, "
    "round, all, any, asarray, sort(axis=0), ndarray.T)": (
        "np.product np.cumproduct np.round_ np.alltrue np.sometrue np.asfarray np.msort "
        "np.fastCopyAndTranspose np.deprecate np.deprecate_with_doc"),
}

EXCLUDED: dict[str, str] = {name: reason for reason, names in _EXCLUDED_GROUPS.items()
                            for name in names.split()}

# Differentiable public callables without a rule yet, each with the reason.
_NO_RULE_YET_GROUPS: dict[str, str] = {}

NO_RULE_YET: dict[str, str] = {name: reason for reason, names in _NO_RULE_YET_GROUPS.items()
                               for name in names.split()}

# ndarray methods whose function has another name (the others route to np.<same name>).
METHOD_FUNCTIONS: dict[str, str] = {"flatten": "np.ravel", "conj": "np.conjugate",
                                    "tolist": "np.asarray", "item": "operator.getitem",
                                    "astype": "chainrules.rules.numpy.shape.astype"}

# ndarray operators and the ufunc or function each one routes to; in-place forms (``x += y``)
# rebind a traced value with the plain operator. Every other ndarray dunder is a Python
# protocol (conversion, copying, pickling, attribute access), listed in PROTOCOL_METHODS.
OPERATORS: dict[str, str] = {
    **{f"__{prefix}{op}__": ufunc for op, ufunc in {
        "add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "truediv": "np.divide",
        "floordiv": "np.floor_divide", "mod": "np.remainder", "pow": "np.power",
        "matmul": "np.matmul", "and": "np.bitwise_and", "or": "np.bitwise_or",
        "xor": "np.bitwise_xor", "lshift": "np.left_shift", "rshift": "np.right_shift",
    }.items() for prefix in ("", "r", "i")},
    "__divmod__": "np.divmod", "__rdivmod__": "np.divmod",
    "__neg__": "np.negative", "__pos__": "np.positive", "__abs__": "np.absolute",
    "__invert__": "np.invert", "__eq__": "np.equal", "__ne__": "np.not_equal",
    "__lt__": "np.less", "__le__": "np.less_equal", "__gt__": "np.greater",
    "__ge__": "np.greater_equal", "__getitem__": "operator.getitem",
}
PROTOCOL_METHODS: frozenset = frozenset(
    "__array__ __array_finalize__ __array_function__ __array_interface__ __array_namespace__ "
    "__array_prepare__ __array_priority__ __array_struct__ __array_ufunc__ __array_wrap__ __bool__ __class__ "
    "__class_getitem__ __complex__ __contains__ __copy__ __deepcopy__ __delattr__ __delitem__ "
    "__dir__ __dlpack__ __dlpack_device__ __doc__ __float__ __format__ __getattribute__ "
    "__getstate__ __hash__ __index__ __init__ __init_subclass__ __int__ __iter__ __len__ "
    "__new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __setitem__ __setstate__ "
    "__sizeof__ __str__ __subclasshook__".split())

NAMESPACES = ("numpy", "numpy.linalg", "numpy.fft", "ndarray methods", "ndarray operators")
STATUSES = ("differentiable", "declared", "excluded", "no rule yet", "unclassified")


def _register_every_rule() -> None:
    """Import chainrules' rules, SciPy's too (registered lazily otherwise: the report imports
    SciPy, which ``import chainrules`` does not)."""
    from .rules import load_scipy_rules

    load_scipy_rules(everything=True)


def public_callables(namespace: str) -> dict[str, Any]:
    """The public callables of a NumPy namespace (``"numpy"``, ``"numpy.linalg"``,
    ``"numpy.fft"``, ``"ndarray methods"``, ``"ndarray operators"``), by the name users write.

    >>> public_callables("numpy.linalg")["np.linalg.inv"].__name__
    'inv'
    """
    import numpy as np

    if namespace == "ndarray methods":
        return {f"ndarray.{n}": getattr(np.ndarray, n) for n in dir(np.ndarray)
                if not n.startswith("_") and callable(getattr(np.ndarray, n))}
    if namespace == "ndarray operators":
        return {f"ndarray.{n}": getattr(np.ndarray, n) for n in dir(np.ndarray)
                if n.startswith("__") and n not in PROTOCOL_METHODS}
    module = importlib.import_module(namespace)
    prefix = "np." + namespace[len("numpy."):] + "." if "." in namespace else "np."
    names = set(getattr(module, "__all__", ())) | set(dir(module))
    found = {}
    for name in sorted(n for n in names if not n.startswith("_")):
        with warnings.catch_warnings():  # deprecated names warn when read
            warnings.simplefilter("ignore")
            value = getattr(module, name, None)
        if callable(value) and not isinstance(value, type(np)):
            found[prefix + name] = value
    return found


def _excluded_kind(value: Any) -> str | None:
    import numpy as np

    if isinstance(value, type) and issubclass(value, np.generic):
        return "scalar type (np.float64, np.int32, ...): a dtype's class, not an array function"
    if isinstance(value, type) and issubclass(value, BaseException):
        return "exception or warning class"
    return None


def _function_status(function: Any) -> str | None:
    if function is None:
        return None
    if function in NON_DIFFERENTIABLE:
        return "declared"
    if function in rrule:
        return "differentiable"
    return None


def classify(name: str, value: Any) -> tuple[str, str]:
    """``(status, detail)`` of one public callable: ``differentiable`` (a registered rule),
    ``declared`` (non-differentiable), ``excluded`` (the detail says why), ``no rule yet``
    (differentiable, the detail says why it has no rule) or ``unclassified``. An ndarray
    method or operator has the status of the function it routes to (the detail names it).

    >>> classify("np.sin", __import__("numpy").sin)
    ('differentiable', '')
    """
    _register_every_rule()

    if name in EXCLUDED:
        return "excluded", EXCLUDED[name]
    kind = _excluded_kind(value)
    if kind:
        return "excluded", kind
    target = ""
    if name.startswith("ndarray."):
        method = name[len("ndarray."):]
        if method.startswith("__"):
            target = OPERATORS.get(method, "")
            if not target:
                return "unclassified", "neither in OPERATORS nor in PROTOCOL_METHODS"
        else:
            target = METHOD_FUNCTIONS.get(method) or f"np.{method}"
        status = _function_status(resolve(target))
        detail = f"routes to {target}"
    else:
        status, detail = _function_status(value), ""
    if status:
        return status, detail
    if name in NO_RULE_YET:
        return "no rule yet", NO_RULE_YET[name]
    if target and target in NO_RULE_YET:
        return "no rule yet", f"routes to {target}: {NO_RULE_YET[target]}"
    return "unclassified", detail


def namespace_walk() -> dict[str, dict[str, tuple[str, str]]]:
    """Every public callable of each of `NAMESPACES`, classified (`classify`): for the
    namespace test and the coverage counts.

    >>> walk = namespace_walk()
    >>> walk["numpy"]["np.exp"][0], walk["ndarray operators"]["ndarray.__mul__"][0]
    ('differentiable', 'differentiable')
    """
    return {namespace: {name: classify(name, value)
                        for name, value in public_callables(namespace).items()}
            for namespace in NAMESPACES}


def namespace_counts(walk: dict | None = None) -> dict[str, dict[str, int]]:
    """How many public callables of each namespace have each status."""
    walk = namespace_walk() if walk is None else walk
    return {namespace: {status: sum(1 for s, _ in entries.values() if s == status)
                        for status in STATUSES}
            for namespace, entries in walk.items()}


def resolve(name: str) -> Any:
    """The function object a listed name refers to (``None`` if its module is missing).

    >>> resolve("np.linalg.inv").__name__
    'inv'
    """
    module_name, _, attribute = name.replace("np.", "numpy.", 1).rpartition(".")
    try:
        with warnings.catch_warnings():  # deprecated names warn when read
            warnings.simplefilter("ignore")
            return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return _stats_method(name)


def _stats_method(name: str) -> Any:
    """The function recorded for a ``scipy.stats`` distribution method (``None`` if none)."""
    if not name.startswith("scipy.stats."):
        return None
    try:
        from .rules.scipy.stats.univariate import STAND_INS
        from .rules.scipy.stats.multivariate import STAND_INS as MULTIVARIATE
    except ImportError:
        return None
    return STAND_INS.get(name) or MULTIVARIATE.get(name)


def coverage_rows() -> list[tuple[str, str, bool, bool, bool]]:
    """``(category, name, has rrule, has frule, declared non-differentiable)`` per function."""
    _register_every_rule()

    rows = []
    for category, names in CATEGORIES.items():
        for name in names:
            function = resolve(name)
            if function is None and name.startswith("np."):
                continue  # not in the installed NumPy (np.astype before 2.1): not a gap
            if function is None:
                rows.append((category, name, False, False, False))
                continue
            rows.append((category, name, function in rrule, function in frule,
                         function in NON_DIFFERENTIABLE))
    return rows


def _status(has_rrule: bool, has_frule: bool, non_differentiable: bool) -> str:
    if non_differentiable:
        return "non-differentiable (declared)"
    if has_rrule and has_frule:
        return "rrule + frule"
    if has_rrule:
        return "rrule only"
    return "missing"


def autograd_covered() -> set[str] | None:
    """The functions of ``autograd.numpy`` that have a VJP in autograd's registry, read from
    the registry itself (``autograd.core.primitive_vjps``); ``None`` if not installed."""
    try:
        import autograd.numpy as anp
        from autograd.core import primitive_vjps
    except ImportError:
        return None
    names = set()
    for module, prefix in ((anp, "np."), (anp.linalg, "np.linalg."), (anp.fft, "np.fft.")):
        for attribute in dir(module):
            value = getattr(module, attribute, None)
            try:
                if value in primitive_vjps:
                    names.add(prefix + attribute)
            except TypeError:  # unhashable module attributes
                pass
    return names


def _lines(markdown: bool, compare_autograd: bool) -> Iterator[str]:
    rows = coverage_rows()
    autograd = autograd_covered() if compare_autograd else None
    if markdown:
        header = "| category | function | chainrules |" + (" autograd |" if autograd else "")
        yield header
        yield "|---|---|---|" + ("---|" if autograd else "")
    current = None
    for category, name, has_rrule, has_frule, non_differentiable in rows:
        status = _status(has_rrule, has_frule, non_differentiable)
        theirs = ""
        if autograd is not None:
            theirs = "yes" if name in autograd else "no"
        if markdown:
            yield f"| {category} | `{name}` | {status} |" + (f" {theirs} |" if autograd else "")
        else:
            if category != current:
                yield f"\n{category}"
                current = category
            yield f"  {name:<48} {status}" + (f"   autograd: {theirs}" if autograd else "")
    listed = [r for r in rows if not r[0].startswith("scipy")]
    covered = sum(1 for r in listed if r[2] or r[4])
    yield ""
    yield (f"NumPy functions listed: {len(listed)}; with a rule or declared "
           f"non-differentiable: {covered}; missing: {len(listed) - covered}")
    scipy = [r for r in rows if r[0] == "scipy (optional)"]
    yield f"SciPy functions listed: {len(scipy)}; with a rule: {sum(1 for r in scipy if r[2])}"
    yield (f"Functions in chainrules' registry: {len(rrule.functions())} rrules, "
           f"{len(frule.functions())} frules, {len(NON_DIFFERENTIABLE)} declared "
           f"non-differentiable")
    if autograd is not None:
        numpy_listed = {r[1] for r in listed}
        yield (f"HIPS autograd registry (autograd.core.primitive_vjps, numpy/linalg/fft "
               f"namespaces): {len(autograd)} functions with a VJP; of the listed ones: "
               f"{len(numpy_listed & autograd)}")
    elif compare_autograd:
        yield "HIPS autograd is not installed (make bench-peers installs it)."


def _walk_lines(walk: dict) -> Iterator[str]:
    for namespace, entries in walk.items():
        yield f"\n{namespace}"
        for name, (status, detail) in entries.items():
            yield f"  {name:<34} {status}" + (f": {detail}" if detail else "")


def _count_lines(counts: dict, markdown: bool) -> Iterator[str]:
    """The counts per namespace, as a table."""
    import numpy as np

    yield (f"Public callables of NumPy {np.__version__} by namespace (differentiable: a "
           f"registered rule; declared: non-differentiable; excluded: left out with a reason; "
           f"no rule yet: differentiable, listed with the reason; unclassified: none of these)")
    header = ("namespace", *STATUSES, "total")
    rows = [(namespace, *(str(c[s]) for s in STATUSES), str(sum(c.values())))
            for namespace, c in counts.items()]
    totals = [sum(c[s] for c in counts.values()) for s in STATUSES]
    rows.append(("all", *map(str, totals), str(sum(totals))))
    if markdown:
        yield "| " + " | ".join(header) + " |"
        yield "|---" * len(header) + "|"
        for row in rows:
            yield "| " + " | ".join(row) + " |"
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        yield "  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths)))


# --- NumPy: docs/numpy-coverage.md --------------------------------------------------------


def numpy_coverage_markdown() -> str:
    """docs/numpy-coverage.md: the NumPy functions chainrules differentiates, from the
    registry and the namespace walk (``python -m chainrules.coverage --numpy``)."""
    import numpy as np

    walk = namespace_walk()
    lines = [
        "# NumPy coverage",
        "",
        f"Generated from chainrules' registry by `python -m chainrules.coverage --numpy` "
        f"(NumPy {np.__version__}); `tests/test_coverage_docs.py` checks that it is up to date. "
        f"\"rrule + frule\": a reverse and a forward rule, checked by the test kit against "
        f"finite differences; \"declared non-differentiable\": predicates, indices and counts, "
        f"whose traced arguments get no gradient (not an error).",
        "",
        "## Every public callable, by namespace",
        "",
    ]
    counts = list(_count_lines(namespace_counts(walk), markdown=True))
    lines += [counts[0], "", *counts[1:], ""]
    current = None
    for category, name, has_rrule, has_frule, non_differentiable in coverage_rows():
        if category.startswith("scipy"):
            continue
        if category != current:
            lines += ["", f"## {category[:1].upper()}{category[1:]}", "",
                      "| function | rules |", "|---|---|"]
            current = category
        lines.append(f"| `{name}` | {_status(has_rrule, has_frule, non_differentiable)} |")
    missing = [(name, detail) for entries in walk.values()
               for name, (status, detail) in entries.items() if status == "no rule yet"]
    lines += ["", "## Differentiable, without a rule yet", ""]
    if missing:
        lines += ["Calling one of these on a traced value raises an error naming it and how "
                  "to register a rule.", "", "| function | why not yet |", "|---|---|"]
        lines += [f"| `{name}` | {detail or '—'} |" for name, detail in missing]
    else:
        lines.append("None: every differentiable public callable of these namespaces has a "
                     "rule.")
    lines.append("")
    return "\n".join(lines)


# --- SciPy: the table in docs/scipy-coverage.md ----------------------------------------------

# What the peers differentiate in SciPy (HIPS autograd 1.7, jax 0.4: their scipy namespaces).
PEERS_SCIPY = {"special functions": ("29", "53"),
               "stats distributions (methods)": ("8 (27)", "26 (112)"),
               "scipy.integrate": ("odeint", "—"), "scipy.signal": ("convolve", "—")}
SCIPY_AREAS = ("scipy.special", "scipy.linalg", "scipy.signal", "scipy.integrate",
               "scipy.optimize", "scipy.sparse", "scipy.spatial", "scipy.stats")


def scipy_rows() -> list[tuple[str, str, str, str]]:
    """``(area, name, status, arguments without a derivative)`` per listed SciPy function."""
    import chainrules  # noqa: F401  (registers the rules)
    from .rules.refused_arguments import REFUSED

    rows = []
    for name in CATEGORIES["scipy (optional)"]:
        function = resolve(name)
        if function is None:
            continue
        area = next(a for a in SCIPY_AREAS if name.startswith(a + "."))
        if function in NON_DIFFERENTIABLE:
            status = "declared non-differentiable"
        elif rrule.lookup(function) is None or frule.lookup(function) is None:
            status = "missing"
        elif function in FIRST_ORDER_ONLY:
            status = "reverse, forward; first order only"
        else:
            status = "reverse, forward, order 2"
        refused = ", ".join(argument for (f, _), argument in REFUSED.items() if f is function)
        rows.append((area, name, status, refused))
    return rows


def _distribution_lines() -> Iterator[str]:
    from .rules.scipy.stats import univariate as scipy_stats

    yield "| distribution | differentiable in | methods |"
    yield "|---|---|---|"
    for name, table in scipy_stats.CONTINUOUS.items():
        shapes = [s for s, partial in zip(table.shapes, table.dlogf) if partial is not None]
        arguments = ", ".join(("x", *shapes, "loc", "scale"))
        yield f"| `{name}` | {arguments} | {', '.join(scipy_stats.CONTINUOUS_METHODS)} |"
    for name, table in scipy_stats.DISCRETE.items():
        shapes = [s for s, partial in zip(table.shapes, table.dlogpmf) if partial is not None]
        methods = [m for m in scipy_stats.DISCRETE_METHODS if m not in ("ppf", "isf")]
        yield (f"| `{name}` | {', '.join(shapes)} (k, loc and integer parameters have no "
               f"tangent) | {', '.join(methods)}; ppf, isf declared (integer results) |")


def scipy_coverage_markdown() -> str:
    """docs/scipy-coverage.md: the SciPy functions chainrules differentiates, from the
    registry (``python -m chainrules.coverage --scipy``)."""
    import scipy

    rows = scipy_rows()
    by_area = {area: [r for r in rows if r[0] == area] for area in SCIPY_AREAS}
    special = [r for r in by_area["scipy.special"] if "declared" not in r[2]]
    stats = by_area["scipy.stats"]
    distributions = {r[1].split(".")[2] for r in stats}
    lines = [
        "# SciPy coverage",
        "",
        f"Generated from chainrules' registry by `python -m chainrules.coverage --scipy` "
        f"(SciPy {scipy.__version__}); `tests/test_coverage_docs.py` checks that it is up "
        f"to date. Every function here has a reverse rule (rrule) and a forward rule (frule) "
        f"checked by the test kit against finite differences, and passes the order-2 checks "
        f"unless it says otherwise; every one works however it was imported "
        f"(docs/engine.md, \"Imports in any style\").",
        "",
        "| | chainrules | HIPS autograd | jax.scipy |",
        "|---|---|---|---|",
        f"| special functions | {len(special)} | {PEERS_SCIPY['special functions'][0]} | "
        f"{PEERS_SCIPY['special functions'][1]} |",
        f"| stats distributions (methods) | {len(distributions)} ({len(stats)}) | "
        f"{PEERS_SCIPY['stats distributions (methods)'][0]} | "
        f"{PEERS_SCIPY['stats distributions (methods)'][1]} |",
        f"| scipy.linalg | {len(by_area['scipy.linalg'])} | — | — |",
        f"| scipy.signal | {len(by_area['scipy.signal'])} | "
        f"{PEERS_SCIPY['scipy.signal'][0]} | — |",
        f"| scipy.integrate | {len(by_area['scipy.integrate'])} | "
        f"{PEERS_SCIPY['scipy.integrate'][0]} | — |",
        f"| scipy.optimize (implicit function theorem) | {len(by_area['scipy.optimize'])} "
        f"| — | — |",
        f"| scipy.spatial.distance | {len(by_area['scipy.spatial'])} | — | — |",
        "",
    ]
    for area in SCIPY_AREAS:
        if area == "scipy.stats":
            continue
        lines += [f"## {area}", "", "| function | rules | arguments without a derivative |",
                  "|---|---|---|"]
        lines += [f"| `{name}` | {status} | {refused or '—'} |"
                  for _, name, status, refused in by_area[area]]
        lines.append("")
    lines += ["## scipy.stats", "",
              "Plain (`st.norm.logpdf(x, loc, scale)`) and frozen (`st.norm(loc, scale)"
              ".logpdf(x)`) calls, parameters by position or keyword.", ""]
    lines += list(_distribution_lines())
    multivariate = sorted({r[1].rsplit(".", 1)[0] for r in stats} - {
        f"scipy.stats.{d}" for d in (*_stats_tables()[0], *_stats_tables()[1])})
    for name in multivariate:
        methods = [r[1].rsplit(".", 1)[1] for r in stats if r[1].startswith(name + ".")]
        lines.append(f"| `{name.rsplit('.', 1)[1]}` | see docs/scipy-multivariate.md | "
                     f"{', '.join(methods)} |")
    lines.append("")
    return "\n".join(lines)


def _stats_tables() -> tuple:
    from .rules.scipy.stats import univariate as scipy_stats

    return scipy_stats.CONTINUOUS, scipy_stats.DISCRETE


def main(argv: list[str] | None = None) -> int:
    """Print the coverage listing."""
    parser = argparse.ArgumentParser(prog="python -m chainrules.coverage",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--autograd", action="store_true",
                        help="compare with HIPS autograd's registry (if installed)")
    parser.add_argument("--scipy", action="store_true",
                        help="print docs/scipy-coverage.md: the SciPy functions covered")
    parser.add_argument("--namespaces", action="store_true",
                        help="list every public callable of numpy, numpy.linalg, numpy.fft "
                             "and ndarray with its status (the namespace walk)")
    parser.add_argument("--numpy", action="store_true",
                        help="print docs/numpy-coverage.md: the NumPy functions covered")
    options = parser.parse_args(argv)
    if options.numpy:
        print(numpy_coverage_markdown(), end="")
        return 0
    if options.scipy:
        print(scipy_coverage_markdown(), end="")
        return 0
    walk = namespace_walk()
    if options.namespaces:
        for line in _walk_lines(walk):
            print(line)
        print()
    else:
        for line in _lines(options.markdown, options.autograd):
            print(line)
        print()
    for line in _count_lines(namespace_counts(walk), options.markdown):
        print(line)
    print()
    for line in _first_order_lines():
        print(line)
    return 0


def first_order_only_rows() -> list[tuple[str, str]]:
    """``(function name, reason)`` for every rule declared first-order only (its pullback or
    pushforward cannot be differentiated yet), sorted by name.

    >>> from chainrules.core.registry import first_order_only
    >>> def my_op(x): return x
    >>> _ = first_order_only(my_op, "its pullback calls a C extension")
    >>> [reason for name, reason in first_order_only_rows() if name.endswith("my_op")]
    ['its pullback calls a C extension']
    >>> del FIRST_ORDER_ONLY[my_op]
    """
    _register_every_rule()

    return sorted((function_name(f), reason) for f, reason in FIRST_ORDER_ONLY.items())


def _first_order_lines() -> Iterator[str]:
    rows = first_order_only_rows()
    differentiable = [f for f in set(rrule.functions()) | set(frule.functions())
                      if f not in NON_DIFFERENTIABLE and f not in FIRST_ORDER_ONLY]
    yield (f"Order 2: {len(differentiable)} functions with rules are differentiable again "
           f"(the kit's test_rrule_order2/test_frule_order2 check them: "
           f"tests/rules/test_order2_registry.py); first-order only: {len(rows)}"
           + ("" if rows else " (none)"))
    for name, reason in rows:
        yield f"  {name:<48} first-order only: {reason}"


if __name__ == "__main__":
    sys.exit(main())
