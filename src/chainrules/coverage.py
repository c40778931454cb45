"""Which NumPy (and SciPy) functions have rules: a listing generated from the registry.

Run ``python -m chainrules.coverage`` (``--markdown`` for a table, ``--autograd`` to compare
with HIPS autograd's registry when it is installed). Functions are listed by the categories of
the rule library; each is marked ``rrule``/``frule`` when registered, ``non-differentiable``
when declared so, and ``missing`` otherwise. The last lines list the rules declared
first-order only (``chainrules.core.registry.first_order_only``), each with its reason.

>>> rows = coverage_rows()
>>> ("elementwise", "np.sin", True, True, False) in rows
True
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Iterator

from .core.config import _name
from .core.registry import FIRST_ORDER_ONLY, NON_DIFFERENTIABLE, frule, rrule

__all__ = ["CATEGORIES", "coverage_rows", "first_order_only_rows", "resolve", "main"]

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
        "chainrules.rules.shape.astype", "np.astype", "np.append", "np.insert", "np.delete",
        "np.rollaxis", "np.row_stack",
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
    ],
    "higher-order": [
        "chainrules.rules.higher_order.vectorized_call", "np.apply_along_axis",
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
    ],
}


def resolve(name: str) -> Any:
    """The function object a listed name refers to (``None`` if its module is missing).

    >>> resolve("np.linalg.inv").__name__
    'inv'
    """
    module_name, _, attribute = name.replace("np.", "numpy.", 1).rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None


def coverage_rows() -> list[tuple[str, str, bool, bool, bool]]:
    """``(category, name, has rrule, has frule, declared non-differentiable)`` per function."""
    import chainrules  # noqa: F401  (registers the rules)

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
    scipy = [r for r in rows if r[0].startswith("scipy")]
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


def main(argv: list[str] | None = None) -> int:
    """Print the coverage listing."""
    parser = argparse.ArgumentParser(prog="python -m chainrules.coverage",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--autograd", action="store_true",
                        help="compare with HIPS autograd's registry (if installed)")
    options = parser.parse_args(argv)
    for line in _lines(options.markdown, options.autograd):
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
    import chainrules  # noqa: F401  (registers the rules, and their declarations)

    return sorted((_name(f), reason) for f, reason in FIRST_ORDER_ONLY.items())


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
