"""SciPy's FITPACK splines while tracing: ``splev`` at traced points or of traced coefficients,
``splrep`` of traced data, and ``InterpolatedUnivariateSpline``, ``LSQUnivariateSpline`` and
``UnivariateSpline(s=0)`` built on traced data; differentiable at every order.

FITPACK fits and evaluates in Fortran, which cannot take traced values. What the engine uses:

- **Evaluation** (``splev``, a spline object's call): the spline ``(t, c, k)`` is a
  ``BSpline``, whose values are followed in the points and in the coefficients
  (`chainrules.ad.dispatch.interpolants`); FITPACK's modes outside the knots are kept (``ext``
  0: extrapolated, 1: zero, 2: SciPy's error, 3: the boundary value, or extrapolated for a
  derivative, as FITPACK does).
- **Fits with knots fixed** (``splrep`` with ``s=0`` or given knots ``t``, the interpolating
  and least-squares spline classes): the coefficients are linear in the data, ``c = C y``,
  where the columns of ``C`` are FITPACK's fits of unit vectors on the same knots (one fit
  per data point, each linear in time: a quadratic cost, for the data sizes splines are
  fitted to).
- **Not followed** (loud): a smoothing fit (``s > 0`` with knots FITPACK chooses, the default
  of ``UnivariateSpline``), whose knots and smoothing depend on the data (use
  ``make_smoothing_spline``, differentiable); traced nodes ``x``, weights or knots; the
  methods of a spline built on traced data other than its values (``integral``, ``roots``,
  ``derivative``...) and ``get_residual``.

>>> import numpy as np, chainrules as cr, scipy.interpolate as si
>>> x = np.linspace(0.0, 3.0, 7)
>>> value = lambda y: si.splev(1.5, si.splrep(x, y))
>>> bool(np.isclose(cr.grad(value)(np.sin(x))[3], 1.0))   # 1.5 is a node: its own value
True
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import primal_value
from ..trace.values import holds_traced
from .interpolants import refuse_methods, refuse_traced_nodes
from .routes import REROUTED, Rerouted, Swap, loaded_module

__all__ = ["swaps"]

_REFUSED = ("integral", "derivatives", "roots", "derivative", "antiderivative",
            "set_smoothing_factor", "get_residual")


# --- evaluation -------------------------------------------------------------------------------

def _splev(own: Any) -> Any:
    def splev(x: Any, tck: Any, der: int = 0, ext: int = 0) -> Any:
        """FITPACK's ``splev`` of traced points or coefficients, as a ``BSpline``."""
        if isinstance(tck, tuple | list) and len(tck) == 3:
            t, c, k = tck
        else:
            return own(x, tck, der, ext)
        if not holds_traced(x) and not holds_traced(c):
            return own(x, tck, der, ext)
        refuse_traced_nodes("splev (the knots t)", t)
        plain = own(primal_value(x), (t, _plain(c), k), der, ext)  # checks; ext=2's error
        if isinstance(plain, list):  # a parametric spline: one coefficient array per dimension
            return [splev(x, (t, part, k), der, ext) for part in c]
        from scipy.interpolate import BSpline

        t = np.asarray(t)
        lower, upper = t[k], t[len(t) - k - 1]
        points = np.asarray(x)
        flat = np.reshape(points, (-1,))
        if ext == 3 and der == 0:  # the boundary value outside (FITPACK's derivatives
            # extrapolate, as ext=0)
            flat = np.clip(flat, lower, upper)
        values = BSpline.construct_fast(t, np.asarray(c), k)(flat, der)
        if ext == 1:  # zero outside
            plain_flat = np.reshape(np.asarray(primal_value(points)), (-1,))
            values = np.where((plain_flat < lower) | (plain_flat > upper), 0.0, values)
        return np.reshape(values, np.shape(plain))

    return splev


def _plain(c: Any) -> Any:
    """Plain coefficients: an array's primal, or a parametric spline's list of them."""
    if isinstance(c, list | tuple) and c and np.ndim(primal_value(c[0])) > 0:
        return [np.asarray(primal_value(part)) for part in c]
    return np.asarray(primal_value(c))


# --- fits with fixed knots: linear in the data --------------------------------------------------

def _unit_fits(fit: Any, count: int) -> np.ndarray:
    """The coefficients of ``fit(e_j)`` for each unit vector, as columns."""
    return np.stack([np.asarray(fit(unit)) for unit in np.eye(count)], axis=1)


def _refuse_smoothing(where: str) -> None:
    raise TracingError(
        f"{where}: a smoothing spline (s > 0, knots chosen by FITPACK) depends on the data "
        f"through its knots and its smoothing, which chainrules does not follow. Pass s=0 (an "
        f"interpolating spline) or the knots t (a least-squares fit), or use "
        f"scipy.interpolate.make_smoothing_spline, which is differentiable.")


def _refuse_traced_options(where: str, **options: Any) -> None:
    for name, value in options.items():
        if holds_traced(value):
            raise TracingError(
                f"{where}: {name} holds traced values; chainrules follows the fit in the data "
                f"values y only. Pass chainrules.primal({name}).")


def _splrep(own: Any) -> Any:
    def splrep(x: Any, y: Any, w: Any = None, xb: Any = None, xe: Any = None, k: int = 3,
               task: int = 0, s: Any = None, t: Any = None, full_output: int = 0,
               per: int = 0, quiet: int = 1) -> Any:
        """FITPACK's ``splrep`` of traced values: ``(t, C y, k)`` for an interpolating
        (``s=0``) or least-squares (knots given) fit."""
        refuse_traced_nodes("splrep", x)
        _refuse_traced_options("splrep", w=w, t=t, xb=xb, xe=xe, s=s)
        if not holds_traced(y):
            return own(x, y, w, xb, xe, k, task, s, t, full_output, per, quiet)
        count = np.shape(primal_value(y))[0]
        smoothing = s if s is not None else (count - np.sqrt(2 * count) if w is not None
                                             else 0.0)
        if task != -1 and t is None and smoothing != 0:
            _refuse_smoothing("splrep")
        result = own(x, np.asarray(primal_value(y)), w, xb, xe, k, task, s, t, full_output,
                     per, quiet)
        knots = (result[0] if full_output else result)[0]
        interior = knots[k + 1:len(knots) - k - 1]
        fits = _unit_fits(lambda unit: own(x, unit, w, xb, xe, k, -1, s, interior, 0, per,
                                           quiet)[1], count)
        tck = (knots, fits @ np.asarray(y), k)
        return (tck,) + tuple(result[1:]) if full_output else tck

    return splrep


def _spline_init(cls: type, original: Any, smoothing: bool) -> Any:
    """``__init__(self, x, y, ...)`` of a FITPACK spline class, keeping traced ``y``."""
    name = cls.__name__

    def __init__(self, x: Any, y: Any, *args: Any, **kwargs: Any) -> None:
        refuse_traced_nodes(name, x)
        _refuse_traced_options(name, options=(args, kwargs))
        if not holds_traced(y):
            return original(self, x, y, *args, **kwargs)
        if smoothing:  # UnivariateSpline(x, y, w, bbox, k, s, ...): s defaults to len(w)
            s = args[3] if len(args) > 3 else kwargs.get("s")
            if s is None or s != 0:
                _refuse_smoothing(name)
        original(self, x, np.asarray(primal_value(y)), *args, **kwargs)
        t, _, k = self._eval_args
        fits = _unit_fits(lambda unit: _built(cls, original, x, unit, args, kwargs)[1],
                          np.shape(primal_value(y))[0])
        self._eval_args = (t, fits @ np.asarray(y), k)
        self.__dict__["get_coeffs"] = functools.partial(_traced_coefficients, self)
        refuse_methods(self, _REFUSED, "its values and derivatives at points (spline(x, nu)) "
                                       "and get_coeffs")

    return __init__


def _built(cls: type, original: Any, x: Any, y: Any, args: tuple, kwargs: dict) -> tuple:
    instance = cls.__new__(cls)
    original(instance, x, y, *args, **kwargs)
    return instance._eval_args


def _traced_coefficients(self: Any) -> Any:
    """``get_coeffs()`` of a spline built on traced data: its traced coefficients."""
    t, c, k = self._eval_args
    return c[:len(t) - k - 1]


# --- the swaps --------------------------------------------------------------------------------

_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.interpolate`` is imported."""
    module = loaded_module("scipy.interpolate")
    if module is None:
        return []
    if _made:
        return _made
    implementation = sys.modules.get("scipy.interpolate._fitpack_impl")
    made: list = []
    for function, replacement in ((getattr(implementation, "splev", None), _splev),
                                  (module.splrep, _splrep)):
        if type(function) is types.FunctionType:
            rerouted = REROUTED.get(function)
            if rerouted is None:
                rerouted = REROUTED[function] = Rerouted(function, replacement)
            made.append(rerouted)
    base = module.UnivariateSpline
    for cls, smoothing in ((base, True), (module.InterpolatedUnivariateSpline, False),
                           (module.LSQUnivariateSpline, False)):
        own = vars(cls)["__init__"]
        made.append(Swap(cls, "__init__", _spline_init(cls, own, smoothing), own))
    _made.extend(made)
    return _made
