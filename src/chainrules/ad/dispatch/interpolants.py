"""SciPy's interpolators while tracing: traced data values (``CubicSpline(x, y)``,
``interp1d(x, y)``, ``make_interp_spline(x, y)`` with a traced ``y``) and traced evaluation
points (``s(q)`` with a traced ``q``), differentiable in both, at every order.

SciPy builds and evaluates its interpolants in compiled code, which cannot take traced values.
What the engine uses instead:

- **Evaluation points.** ``s(q)`` of a ``PPoly`` (``CubicSpline``, ``PchipInterpolator``,
  ``Akima1DInterpolator``...), a ``BSpline`` or an ``interp1d`` is recorded as
  ``evaluate(s, q)`` (`chainrules.rules.scipy.interpolate.splines`), whose derivative in ``q``
  is the interpolant's own derivative.
- **Data values.** Each of these interpolants is linear in ``y`` (affine, with boundary
  conditions that give derivative values): ``s(q) = Φ(q) y + z(q)``, where ``Φ(q)`` holds the
  values at ``q`` of the interpolant of each unit vector (one interpolant of the identity
  matrix, built once per construction) and ``z`` is the interpolant of zeros (the affine part:
  boundary values, ``interp1d``'s ``fill_value``). With a traced ``y`` the constructor builds
  the interpolant on the plain values (so every option and check is SciPy's), and keeps the
  traced ``y``; a call is then ``Φ(q) @ y + z(q)``, ``Φ`` and ``z`` evaluated through
  ``evaluate`` (so ``q`` may be traced too). The identity's interpolant costs ``n`` times the
  memory of one: meant for the data sizes interpolation is used with (up to a few thousand
  nodes).
- **Regular grids.** ``RegularGridInterpolator`` (and ``interpn``, which builds one) with
  traced values or points, for ``'linear'``, ``'slinear'`` and ``'nearest'``, on ascending or
  descending nodes (SciPy flips the latter, and the traced values with them): the value at a
  point is computed in NumPy operations from the ``2^d`` corners of its cell (each weighted by
  the product of the point's fractions along the axes) or from the nearest one, the cells
  found on the plain points; outside the grid, SciPy's fill value or its extrapolation.
- **Coefficients.** A ``PPoly`` whose coefficients hold traced values, as ``CubicHermiteSpline(x,
  y, dydx)`` and ``PchipInterpolator(x, y)`` build them from traced data (with Pchip's
  derivative estimates in NumPy operations, ``TRACED_PATHS``), is evaluated in NumPy operations
  (`chainrules.rules.scipy.interpolate.piecewise`).
- **B-spline coefficients.** A ``BSpline`` whose coefficients hold traced values (built by
  hand, or by ``make_smoothing_spline``, which solves for them in NumPy operations) is
  evaluated as the B-spline basis (the spline of the identity's coefficients) against them
  (its ``derivative`` and ``antiderivative`` are SciPy's, in NumPy operations; ``integrate``
  is the antiderivative's difference);
  ``make_lsq_spline`` of traced data makes one, its coefficients ``B y`` with ``B`` SciPy's fits
  of unit vectors.
- **Lagrange polynomials.** ``lagrange(x, w)`` is computed in NumPy operations (SciPy's trims
  a value that is exactly zero out of the gradient: see `_lagrange`).
- **Not followed** (loud): traced nodes ``x``; other methods of an interpolant built on traced
  values (``derivative``, ``antiderivative``, ``integrate``, ``roots``, ``solve``) raise a
  `TracingError` rather than answer from the plain values. Reading the coefficients directly
  (``s.c``) gives the plain values: an attribute is not something the engine can see.

>>> import numpy as np, chainrules as cr, scipy.interpolate
>>> nodes = np.array([0.0, 1.0, 2.0, 3.0])
>>> cr.grad(lambda y: scipy.interpolate.CubicSpline(nodes, y)(1.5))(nodes ** 2)
array([-0.0625,  0.5625,  0.5625, -0.0625])
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import primal_value
from ..trace.values import holds_traced, holds_variables
from .routes import INHERITED, REROUTED, Rerouted, Swap, loaded_module

__all__ = ["swaps", "argument_of", "replaced_argument", "refuse_traced_nodes",
           "refuse_traced_interpolant", "refuse_methods"]

_DATA = "_chainrules_traced_values"  # an interpolant's traced data: (y, axis, basis, zero)
_REFUSED = ("derivative", "antiderivative", "integrate", "roots", "solve")
# interp1d's kinds evaluated by its own formula that are a spline of this degree (linear: the
# same values as a degree-1 spline); spline kinds keep theirs; the others are piecewise constant.
_SPLINE_DEGREE = {"linear": 1}


def _evaluate(interpolant: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    from ...rules.scipy.interpolate.splines import Interpolant, evaluate  # (rerouted)
    return evaluate(Interpolant(interpolant), x, nu, extrapolate)


def refuse_traced_interpolant(instance: Any) -> None:
    """An interpolant whose own fields hold traced values (passed to grad as an input): its
    coefficients' derivatives are not followed, and must not silently be zero."""
    if holds_traced(instance):
        raise TracingError(
            f"{type(instance).__name__}: the interpolant's own coefficients hold traced values "
            f"(it was passed to the differentiated function as an input, or built from traced "
            f"arrays by hand); chainrules differentiates interpolants in the data values they "
            f"are built from and in their evaluation points. Build the interpolant inside the "
            f"function from the traced data (CubicSpline(x, y), make_interp_spline(x, y)...).")


def argument_of(args: tuple, kwargs: dict, position: int, name: str) -> Any:
    return args[position] if len(args) > position else kwargs.get(name)


def replaced_argument(args: tuple, kwargs: dict, position: int, name: str, value: Any) -> tuple:
    if len(args) > position:
        return args[:position] + (value,) + args[position + 1:], kwargs
    return args, {**kwargs, name: value}


def refuse_traced_nodes(where: str, x: Any) -> None:
    if holds_variables(x):  # (nodes the function made, np.arange(5.0), are constants)
        raise TracingError(
            f"{where}: the interpolation nodes x hold traced values; chainrules differentiates "
            f"interpolants in their data values y and their evaluation points, not in their "
            f"nodes. Pass chainrules.primal(x) for the nodes (a constant), or write the "
            f"interpolation with NumPy (np.interp is differentiable in every argument).")


def _unit_values(n: int, like: np.ndarray) -> np.ndarray:
    return np.eye(n, dtype=np.result_type(like.dtype, np.float64))


def _on_traced_values(name: str, build: Any, args: tuple, kwargs: dict, y_position: int,
                      axis_default: int) -> Any:
    """``build(*args, **kwargs)`` where ``y`` holds traced values: ``(interpolant of the plain
    values, (y, axis, basis, zero))``, or None when ``y`` holds none."""
    y = argument_of(args, kwargs, y_position, "y")
    refuse_traced_nodes(name, argument_of(args, kwargs, y_position - 1, "x"))
    if not holds_traced(y):
        return None
    y = np.asarray(y)
    plain = np.asarray(primal_value(y))
    # (x, y, axis, bc_type, ...) for CubicSpline; (x, y, k, t, bc_type, axis, ...) for
    # make_interp_spline
    axis_position = y_position + (4 if name == "make_interp_spline" else 1)
    bc_position = y_position + (3 if name == "make_interp_spline" else 2)
    axis = argument_of(args, kwargs, axis_position, "axis")
    axis = axis_default if axis is None else axis
    axis = axis % plain.ndim
    n = plain.shape[axis]
    plain_args, plain_kwargs = replaced_argument(args, kwargs, y_position, "y", plain)
    built = build(*plain_args, **plain_kwargs)
    basis_args, basis_kwargs = replaced_argument(args, kwargs, y_position, "y",
                                                 _unit_values(n, plain))
    zero_args, zero_kwargs = replaced_argument(args, kwargs, y_position, "y",
                                               np.zeros_like(plain))
    bc = argument_of(basis_args, basis_kwargs, bc_position, "bc_type")
    if bc is not None:  # derivative values: the zero interpolant's; the basis' are zeros
        basis_args, basis_kwargs = replaced_argument(basis_args, basis_kwargs, bc_position,
                                                     "bc_type", _homogeneous(bc, (n,)))
    basis_args, basis_kwargs = replaced_argument(basis_args, basis_kwargs, axis_position,
                                                 "axis", 0)
    return built, (y, axis, (basis_args, basis_kwargs), build(*zero_args, **zero_kwargs))


def _homogeneous(bc: Any, shape: tuple) -> Any:
    """Boundary conditions ``bc`` with every derivative value, ``(order, value)``, made zeros
    of ``shape``: those of the identity's interpolant (the values are the affine part)."""
    if type(bc) is tuple and len(bc) == 2 and issubclass(type(bc[0]), (int, np.integer)) and \
            type(bc[0]) is not bool:
        return (bc[0], np.zeros(shape))
    if isinstance(bc, (tuple, list)):
        return type(bc)(_homogeneous(part, shape) for part in bc)
    return bc


def _values(data: tuple, q: Any, nu: int, extrapolate: Any, basis: Any,
            inside: Any = None) -> Any:
    """``Φ(q) y + z(q)`` (derivative ``nu``), in SciPy's layout (``q``'s axes at ``axis``);
    ``inside``: where ``Φ`` applies (interp1d's fill values are ``z``'s alone outside)."""
    y, axis, _, zero = data
    unit_values = _evaluate(basis, q, nu, extrapolate)
    if inside is not None:
        unit_values = unit_values * inside[..., None]
    linear = np.tensordot(unit_values, np.moveaxis(y, axis, 0), axes=1)
    if axis:
        q_axes = np.ndim(primal_value(q))
        order = list(range(q_axes, q_axes + axis)) + list(range(q_axes)) + \
            list(range(q_axes + axis, np.ndim(primal_value(linear))))
        linear = np.transpose(linear, order)
    return linear if zero is None else linear + _evaluate(zero, q, nu, extrapolate)


def _basis(instance: Any, data: tuple, build: Any) -> Any:
    """The interpolant of the identity (built at the first call, then kept)."""
    kept = instance.__dict__.get("_chainrules_basis")
    if kept is None:
        args, kwargs = data[2]
        kept = instance.__dict__["_chainrules_basis"] = build(*args, **kwargs)
    return kept


# --- PPoly, BSpline: construction and calls ---------------------------------------------------

def _spline_init(cls: type, original: Any, y_position: int = 1, axis_default: int = 0) -> Any:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        found = _on_traced_values(cls.__name__, lambda *a, **k: _Plain(cls, original, a, k),
                                  args, kwargs, y_position, axis_default)
        if found is None:
            return original(self, *args, **kwargs)
        plain, data = found
        original(self, *plain.args, **plain.kwargs)
        self.__dict__[_DATA] = data[:3] + (data[3].make(),)
        refuse_methods(self, _REFUSED, _FOLLOWS)
        self.__dict__["_chainrules_build"] = lambda *a, **k: _Plain(cls, original, a,
                                                                    k).make()

    return __init__


class _Plain:
    """A construction of ``cls`` on plain values, made when asked for (``make``)."""

    def __init__(self, cls: type, init: Any, args: tuple, kwargs: dict):
        self.cls, self.init, self.args, self.kwargs = cls, init, args, kwargs

    def make(self) -> Any:
        instance = self.cls.__new__(self.cls)
        self.init(instance, *self.args, **self.kwargs)
        return instance


def _spline_call(original: Any, piecewise: bool = False) -> Any:
    """``__call__`` of a ``PPoly`` (``piecewise``) or a ``BSpline``."""
    def __call__(self, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
        data = self.__dict__.get(_DATA)
        if data is None:
            if piecewise and holds_traced(self.c):  # CubicHermiteSpline, PchipInterpolator
                from ...rules.scipy.interpolate.piecewise import ppoly_values
                return ppoly_values(self.c, self.x, x, nu, self.extrapolate
                                    if extrapolate is None else extrapolate, self.axis)
            if not piecewise and holds_traced(self.c) and not holds_traced(self.t):
                return _bspline_values(self, x, nu, extrapolate)
            refuse_traced_interpolant(self)
            if holds_traced(x):
                return _evaluate(self, x, nu, extrapolate)
            return original(self, x, nu, extrapolate)
        basis = _basis(self, data, self.__dict__["_chainrules_build"])
        return _values(data, x, nu, extrapolate, basis)

    return __call__


def _bspline_values(self: Any, x: Any, nu: int, extrapolate: Any) -> Any:
    """A ``BSpline`` whose coefficients hold traced values (``make_smoothing_spline`` and
    ``make_lsq_spline`` of traced data solve for them in NumPy operations, or
    ``BSpline(t, c, k)`` of traced ``c``): linear in them, so its values at ``x`` are those
    of the B-spline basis (the spline of the identity's coefficients, built once) against
    the coefficients, differentiable in both."""
    from scipy.interpolate import BSpline

    count = len(self.t) - self.k - 1  # (SciPy ignores coefficients past this many)
    basis = self.__dict__.get("_chainrules_basis")
    if basis is None:
        basis = self.__dict__["_chainrules_basis"] = BSpline(
            self.t, np.eye(count), self.k, extrapolate=self.extrapolate, axis=0)
    coefficients = np.moveaxis(self.c[:count], 0, self.axis)
    return _values((coefficients, self.axis, None, None), x, nu, extrapolate, basis)


def _bspline_integrate(original: Any) -> Any:
    """``BSpline.integrate``: for traced coefficients, the difference of the antiderivative
    (its coefficients computed in NumPy operations) at the two ends, the ends first clipped to
    the base interval where the spline does not extrapolate, as SciPy does."""
    def integrate(self, a: Any, b: Any, extrapolate: Any = None) -> Any:
        if not holds_traced(self.c) or holds_traced(self.t):
            return original(self, a, b, extrapolate)
        extrapolate = self.extrapolate if extrapolate is None else extrapolate
        if extrapolate == "periodic":
            raise TracingError(
                "BSpline.integrate with extrapolate='periodic' of traced coefficients is not "
                "followed; integrate over whole periods and the remainder with "
                "spline.antiderivative() evaluated at the ends.")
        if not extrapolate:
            lower, upper = self.t[self.k], self.t[len(self.t) - self.k - 1]
            a, b = np.clip(a, lower, upper), np.clip(b, lower, upper)
        antiderivative = self.antiderivative()
        return antiderivative(b, extrapolate=True) - antiderivative(a, extrapolate=True)

    return integrate


def refuse_methods(instance: Any, names: tuple, follows: str) -> None:
    """Shadow the methods ``names`` of an interpolant built on traced data values by ones that
    raise, naming what chainrules ``follows`` instead: they would answer from the plain values.
    An instance attribute comes before its class's method, so no class is changed (a class
    attribute swapped at every trace would cost every trace)."""
    cls = type(instance)
    for name in names:
        if hasattr(cls, name):
            instance.__dict__[name] = functools.partial(_refused_method, cls.__name__, name,
                                                        follows)


def _refused_method(owner: str, name: str, follows: str, *args: Any, **kwargs: Any) -> Any:
    raise TracingError(
        f"{owner}.{name} of an interpolant built on traced data values: chainrules follows "
        f"{follows}, not its {name}. Build the interpolant of the derivative or integral you "
        f"need from the values (a spline of the same degree), or compute it with NumPy.")


_FOLLOWS = "its values at points (calling it)"


def _make_interp_spline(own: Any) -> Any:
    def make_interp_spline(*args: Any, **kwargs: Any) -> Any:
        found = _on_traced_values("make_interp_spline", own, args, kwargs, 1, 0)
        if found is None:
            return own(*args, **kwargs)
        spline, data = found
        spline.__dict__[_DATA] = data
        refuse_methods(spline, _REFUSED, _FOLLOWS)
        spline.__dict__["_chainrules_build"] = own
        return spline

    return make_interp_spline


# --- interp1d ---------------------------------------------------------------------------------

def _interp1d_init(cls: type, original: Any) -> Any:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        y = argument_of(args, kwargs, 1, "y")
        refuse_traced_nodes("interp1d", argument_of(args, kwargs, 0, "x"))
        if not holds_traced(y):
            return original(self, *args, **kwargs)
        y = np.asarray(y)
        plain = np.asarray(primal_value(y))
        plain_args, plain_kwargs = replaced_argument(args, kwargs, 1, "y", plain)
        original(self, *plain_args, **plain_kwargs)
        axis = self.axis  # (interp1d keeps it non-negative)
        if not argument_of(args, kwargs, 7, "assume_sorted"):  # interp1d sorts the nodes
            order = np.argsort(np.asarray(primal_value(argument_of(args, kwargs, 0, "x"))),
                               kind="mergesort")
            y = np.take(y, order, axis=axis)
        self.__dict__[_DATA] = (y, axis, None, _interp1d_zero(self))

    return __init__


def _spline_degree(self: Any) -> int | None:
    """The degree of the spline an interp1d evaluates, None for a piecewise-constant kind."""
    if self._kind == "spline":
        return self._spline.k
    return _SPLINE_DEGREE.get(self._kind)


def _kind(self: Any) -> Any:
    """interp1d's ``kind`` argument that makes an interpolant like ``self``."""
    return self._spline.k if self._kind == "spline" else self._kind


def _interp1d_basis(self: Any) -> Any:
    kept = self.__dict__.get("_chainrules_basis")
    if kept is None:
        from scipy.interpolate import interp1d, make_interp_spline

        n = self.x.shape[0]
        degree = _spline_degree(self)
        if degree is not None:
            kept = make_interp_spline(self.x, np.eye(n), k=degree, axis=0)
        else:
            kept = interp1d(self.x, np.eye(n), kind=self._kind, axis=0, bounds_error=False,
                            fill_value="extrapolate" if self._extrapolate else 0.0,
                            assume_sorted=True)
        self.__dict__["_chainrules_basis"] = kept
    return kept


def _interp1d_call(original: Any) -> Any:
    def __call__(self, x: Any) -> Any:
        data = self.__dict__.get(_DATA)
        if data is None:
            refuse_traced_interpolant(self)
            if not holds_traced(x):
                return original(self, x)
        original(self, primal_value(x))  # SciPy's checks (bounds_error), on the values
        if data is None:
            plain = np.asarray(self.y)
            data = (plain, self.axis, None, _interp1d_zero(self))
        basis = _interp1d_basis(self)
        points = np.asarray(primal_value(x))
        inside = (points >= self.x[0]) & (points <= self.x[-1]) | \
            bool(getattr(self, "_extrapolate", False))
        return _values(data, x, 0, None, basis, inside)

    return __call__


def _interp1d_zero(self: Any) -> Any:
    """The interp1d of zeros with this one's options (its fill values outside)."""
    kept = self.__dict__.get("_chainrules_zero_interpolant")
    if kept is None:
        kept = self.__dict__["_chainrules_zero_interpolant"] = type(self)(
            self.x, np.zeros_like(np.asarray(self.y)), kind=_kind(self), axis=self.axis,
            bounds_error=False, fill_value=self.fill_value, assume_sorted=True)
    return kept


# --- RegularGridInterpolator (and interpn): multilinear and nearest, in NumPy operations -------

_GRID_VALUES = "_chainrules_traced_grid_values"
_GRID_METHODS = {"linear": "linear", "slinear": "linear", "nearest": "nearest"}


def _grid_init(original: Any) -> Any:
    def __init__(self, points: Any, values: Any, *args: Any, **kwargs: Any) -> None:
        refuse_traced_nodes("RegularGridInterpolator", points)
        if not holds_traced(values):
            return original(self, points, values, *args, **kwargs)
        fill = args[2] if len(args) > 2 else kwargs.get("fill_value", np.nan)
        if holds_traced(fill):
            raise TracingError(
                "RegularGridInterpolator: fill_value holds a traced value; it is a constant "
                "to chainrules. Fill the points outside with np.where after the call.")
        original(self, points, np.asarray(primal_value(values)), *args, **kwargs)
        descending = getattr(self, "_descending_dimensions", None)
        if descending:  # SciPy keeps the values of a descending grid flipped, as its nodes
            values = np.flip(values, axis=tuple(descending))
        self.__dict__[_GRID_VALUES] = values

    return __init__


def _grid_call(original: Any) -> Any:
    def __call__(self, xi: Any, method: Any = None, **options: Any) -> Any:
        values = self.__dict__.get(_GRID_VALUES)
        if values is None and not holds_traced(xi):
            refuse_traced_interpolant(self)
            return original(self, xi, method, **options)
        method = self.method if method is None else method
        if method not in _GRID_METHODS or options.get("nu") is not None:
            raise TracingError(
                f"RegularGridInterpolator: method={method!r}" + (
                    " with nu=" if options.get("nu") is not None else "") +
                " is not supported on traced values; chainrules follows 'linear', 'slinear' "
                "and 'nearest' (values and points), or build a spline of the values "
                "(make_interp_spline) and evaluate it.")
        if isinstance(xi, tuple):  # coordinate arrays, broadcast together
            xi = np.stack(np.broadcast_arrays(*xi), axis=-1)
        plain = original(self, primal_value(xi), method)  # SciPy's checks and fill values
        values = self.values if values is None else values
        return _on_grid(self, values, xi, _GRID_METHODS[method], plain)

    return __call__


def _on_grid(self: Any, values: Any, xi: Any, method: str, plain: Any) -> Any:
    """The interpolant's value at the points ``xi`` (shape ``(..., d)``): the ``2^d`` corners
    of each point's cell weighted by the products of its fractions along each axis
    (``linear``), or the nearest corner."""
    grid, dimensions = self.grid, len(self.grid)
    points = np.reshape(xi, (-1, dimensions))
    plain_points = np.asarray(primal_value(points))
    below, fractions = [], []
    for axis, nodes in enumerate(grid):
        nodes = np.asarray(nodes)
        lower = np.clip(np.searchsorted(nodes, plain_points[:, axis], side="right") - 1, 0,
                        max(len(nodes) - 2, 0))
        upper = np.minimum(lower + 1, len(nodes) - 1)
        width = np.where(upper > lower, nodes[upper] - nodes[lower], 1.0)
        below.append(lower)
        fractions.append((points[:, axis] - nodes[lower]) / width)
    extra = (1,) * (np.ndim(primal_value(values)) - dimensions)
    if method == "nearest":
        index = tuple(np.where(np.asarray(primal_value(t)) <= 0.5, lower, lower + 1)
                      for lower, t in zip(below, fractions))
        result = values[index]
    else:
        result = 0
        for corner in np.ndindex(*(2,) * dimensions):
            index = tuple(np.minimum(lower + step, len(nodes) - 1)
                          for lower, step, nodes in zip(below, corner, grid))
            weight = 1
            for t, step in zip(fractions, corner):
                weight = weight * (t if step else 1 - t)
            result = result + np.reshape(weight, np.shape(weight) + extra) * values[index]
    shape = np.shape(plain)
    result = np.reshape(result, shape)
    fill = self.fill_value
    if fill is not None:  # outside the grid: SciPy's fill value (a constant)
        outside = np.zeros(len(plain_points), bool)
        for axis, nodes in enumerate(grid):
            outside |= (plain_points[:, axis] < nodes[0]) | (plain_points[:, axis] > nodes[-1])
        outside = np.reshape(outside, shape[:len(shape) - len(extra)] + extra)
        result = np.where(outside, plain, result)
    return result


def _make_lsq_spline(own: Any) -> Any:
    def make_lsq_spline(x: Any, y: Any, t: Any, k: int = 3, w: Any = None, axis: int = 0,
                        *args: Any, **kwargs: Any) -> Any:
        """SciPy's least-squares spline of traced values ``y``: its coefficients are linear in
        ``y`` (``c = B y``, ``B`` the coefficients of the fits of unit vectors, which SciPy
        computes in one call), and the spline is evaluated from them (`_bspline_values`)."""
        refuse_traced_nodes("make_lsq_spline", x)
        refuse_traced_nodes("make_lsq_spline", t)
        if holds_traced(w):
            raise TracingError(
                "make_lsq_spline: the weights w hold traced values; chainrules follows the "
                "fit in the values y only. Pass chainrules.primal(w).")
        if not holds_traced(y):
            return own(x, y, t, k, w, axis, *args, **kwargs)
        y = np.asarray(y)
        spline = own(x, np.asarray(primal_value(y)), t, k, w, axis, *args, **kwargs)
        count = np.shape(primal_value(y))[axis % np.ndim(primal_value(y))]
        fits = own(x, np.eye(count), t, k, w, 0, *args, **kwargs).c  # (coefficients, count)
        spline.c = np.tensordot(fits, np.moveaxis(y, axis, 0), axes=1)
        return spline

    return make_lsq_spline


def _interpn(own: Any) -> Any:
    def interpn(points: Any, values: Any, xi: Any, method: str = "linear",
                bounds_error: bool = True, fill_value: Any = np.nan) -> Any:
        """SciPy's ``interpn`` at traced points ``xi``: its checks on the plain values, then the
        ``RegularGridInterpolator`` it builds, called with the traced points (traced values
        alone reach that interpolator through ``interpn`` itself)."""
        if not holds_traced(xi):
            return own(points, values, xi, method, bounds_error, fill_value)
        refuse_traced_nodes("interpn", points)
        own(points, primal_value(values), primal_value(xi), method, bounds_error, fill_value)
        if method not in _GRID_METHODS:
            raise TracingError(
                f"interpn: method={method!r} is not supported at traced points xi; chainrules "
                f"follows 'linear', 'slinear' and 'nearest', or build a spline of the values "
                f"(make_interp_spline) and evaluate it.")
        from scipy.interpolate import RegularGridInterpolator
        return RegularGridInterpolator(points, values, method=method, bounds_error=bounds_error,
                                       fill_value=fill_value)(xi)

    return interpn


def _lagrange(own: Any) -> Any:
    def lagrange(x: Any, w: Any) -> np.poly1d:
        """SciPy's ``lagrange`` on traced nodes or values, in NumPy operations: the sum of
        ``w[j]`` times the coefficients of ``prod_(k != j) (t - x[k]) / (x[j] - x[k])``
        (``np.poly`` of the other nodes, whose leading coefficient is never zero). SciPy
        builds each term as ``np.poly1d(w[j])``, which NumPy trims to a new constant ``[0]``
        when ``w[j] = 0``: a value at zero would get no derivative, though the polynomial is
        smooth in it. The coefficients are kept as they are (a leading coefficient exactly
        zero included, so that its derivative is kept too)."""
        if not holds_traced(x) and not holds_traced(w):
            return own(x, w)
        x, w = np.asarray(x), np.asarray(w)
        count = np.shape(primal_value(x))[0]
        terms = []
        for j in range(count):
            others = np.concatenate([x[:j], x[j + 1:]])
            terms.append(np.poly(others) / np.prod(x[j] - others))
        coefficients = np.tensordot(w, np.stack(terms), axes=1) if count > 1 else w * 1.0
        polynomial = np.poly1d(primal_value(coefficients))
        polynomial._coeffs = coefficients  # (untrimmed: see above)
        return polynomial

    return lagrange


# --- the swaps --------------------------------------------------------------------------------

_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.interpolate`` is imported."""
    module = loaded_module("scipy.interpolate")
    if module is None:
        return []
    if _made:
        return _made
    from scipy.interpolate import BSpline, CubicSpline, PPoly, RegularGridInterpolator, interp1d

    ppoly_base = next(c for c in PPoly.__mro__ if "__call__" in vars(c))
    made = [Swap(ppoly_base, "__call__", _spline_call(vars(ppoly_base)["__call__"], True),
                 vars(ppoly_base)["__call__"]),
            Swap(BSpline, "__call__", _spline_call(vars(BSpline)["__call__"]),
                 vars(BSpline)["__call__"]),
            Swap(BSpline, "integrate", _bspline_integrate(vars(BSpline)["integrate"]),
                 vars(BSpline)["integrate"]),
            Swap(CubicSpline, "__init__",
                 _spline_init(CubicSpline, vars(CubicSpline)["__init__"]),
                 vars(CubicSpline)["__init__"]),
            Swap(interp1d, "__init__", _interp1d_init(interp1d, vars(interp1d)["__init__"]),
                 vars(interp1d)["__init__"]),
            Swap(interp1d, "__call__", _interp1d_call(interp1d.__call__), INHERITED),
            Swap(RegularGridInterpolator, "__init__",
                 _grid_init(vars(RegularGridInterpolator)["__init__"]),
                 vars(RegularGridInterpolator)["__init__"]),
            Swap(RegularGridInterpolator, "__call__",
                 _grid_call(vars(RegularGridInterpolator)["__call__"]),
                 vars(RegularGridInterpolator)["__call__"])]
    for function, replacement in ((module.make_interp_spline, _make_interp_spline),
                                  (module.make_lsq_spline, _make_lsq_spline),
                                  (module.interpn, _interpn), (module.lagrange, _lagrange)):
        if type(function) is types.FunctionType:
            rerouted = REROUTED.get(function)
            if rerouted is None:
                rerouted = REROUTED[function] = Rerouted(function, replacement)
            made.append(rerouted)
    _made.extend(made)
    return _made
