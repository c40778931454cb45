"""SciPy's interpolants of scattered data while tracing: ``LinearNDInterpolator``,
``NearestNDInterpolator``, ``CloughTocher2DInterpolator`` (and ``griddata``, which builds them)
and ``RBFInterpolator``, built on traced data values or called at traced points.

SciPy builds and evaluates them in compiled code, which cannot take traced values. Each
constructor builds the interpolant on the plain values (every check and option is SciPy's) and
keeps the traced ones; a call runs SciPy's on the plain values too (its checks, and its fill
value outside the data's convex hull) and computes the traced result from SciPy's own
triangulation, tree or coefficients:

- **Linear** (``LinearNDInterpolator``, ``griddata(method='linear')``): the barycentric
  coordinates of each point in the simplex of the Delaunay triangulation that holds it, from the
  triangulation's affine ``transform``, weighting the values at the simplex's vertices: in
  NumPy operations, so differentiable in the values and the points, at every order.
- **Nearest** (``NearestNDInterpolator``, ``griddata(method='nearest')``): the value of the
  nearest data point, found by SciPy's tree on the plain points: piecewise constant in the
  points (their derivative is zero), the identity in the values.
- **Clough-Tocher** (``CloughTocher2DInterpolator``, ``griddata(method='cubic')``): linear in
  the values, with the gradients it estimates at the data points (a global iterative solve, to
  its ``tol``): the values at the points are ``Φ @ values``, where ``Φ`` is the interpolant of
  the identity (one column per data point, built once per interpolant on SciPy's own
  triangulation). Its derivative in the evaluation points is not followed (refused by name).
- **Radial basis functions** (``RBFInterpolator``): the coefficients are linear in the data
  values ``d`` (``solve(lhs, [d; 0])``), so they are ``C @ d`` with ``C`` the coefficients of
  the identity's interpolant; the value at ``x`` is the kernel of ``epsilon * |x - y_i|``
  against the first ones plus the polynomial of ``(x - shift) / scale`` against the rest, in
  NumPy operations: differentiable in ``d`` and ``x``. With ``neighbors`` (a local system per
  point) only ``d`` is followed: ``Φ @ d`` as above.

Not followed (loud): traced data point coordinates (the nodes), a traced ``fill_value``,
``smoothing`` or ``epsilon``.

>>> import numpy as np, chainrules as cr, scipy.interpolate
>>> points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
>>> value = lambda v: scipy.interpolate.LinearNDInterpolator(points, v)([[0.25, 0.25]])[0]
>>> cr.grad(value)(np.array([1.0, 2.0, 3.0]))   # the point's barycentric coordinates
array([0.5 , 0.25, 0.25])
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import primal_value
from ..trace.values import holds_traced
from .interpolants import (argument_of, refuse_traced_interpolant, refuse_traced_nodes,
                           replaced_argument)
from .routes import Swap, loaded_module

__all__ = ["swaps"]

_DATA = "_chainrules_traced_values"  # the traced data values an interpolant was built on
_BUILT = "_chainrules_construction"  # (args, kwargs) of its construction, values plain
_BASIS = "_chainrules_basis"  # the identity's interpolant (or its coefficients), when made
# class -> (name of the nodes, name of the values, options that must be constants: positions)
_ARGUMENTS = {
    "LinearNDInterpolator": ("points", "values", {"fill_value": 2}),
    "CloughTocher2DInterpolator": ("points", "values", {"fill_value": 2}),
    "NearestNDInterpolator": ("x", "y", {}),
    "RBFInterpolator": ("y", "d", {"smoothing": 3, "epsilon": 5}),
}


# --- construction -----------------------------------------------------------------------------

def _init(name: str, original: Any) -> Any:
    """``__init__(self, nodes, values, ...)`` that keeps traced ``values``."""
    nodes_name, value_name, constants = _ARGUMENTS[name]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        values = argument_of(args, kwargs, 1, value_name)
        refuse_traced_nodes(name, argument_of(args, kwargs, 0, nodes_name))
        for option, position in constants.items():
            if holds_traced(argument_of(args, kwargs, position, option)):
                raise TracingError(
                    f"{name}: {option} holds a traced value; it is a constant to chainrules. "
                    f"Pass chainrules.primal({option}).")
        if not holds_traced(values):
            return original(self, *args, **kwargs)
        plain_args, plain_kwargs = replaced_argument(args, kwargs, 1, value_name,
                                             np.asarray(primal_value(values)))
        original(self, *plain_args, **plain_kwargs)
        self.__dict__[_DATA] = np.asarray(values)
        self.__dict__[_BUILT] = (plain_args, plain_kwargs, value_name)

    return __init__


def _basis(self: Any, **options: Any) -> Any:
    """The interpolant of the identity with ``self``'s construction (options replaced by
    ``options``), built at the first call, then kept."""
    kept = self.__dict__.get(_BASIS)
    if kept is None:
        args, kwargs, value_name = self.__dict__[_BUILT]
        n = np.shape(args[1] if len(args) > 1 else kwargs[value_name])[0]
        args, kwargs = replaced_argument(args, kwargs, 1, value_name, np.eye(n))
        for option, value in options.items():  # (fill_value: the third argument)
            args, kwargs = replaced_argument(args, kwargs, 2, option, value)
        with warnings.catch_warnings():  # (SciPy's warnings were given by the construction)
            warnings.simplefilter("ignore")
            kept = self.__dict__[_BASIS] = type(self)(*args, **kwargs)
    return kept


# --- evaluation points ------------------------------------------------------------------------

def _coordinates(args: tuple, dimensions: int) -> Any:
    """The points of a call ``ip(x)`` or ``ip(x1, x2, ...)``, shape ``(..., dimensions)``, as
    SciPy reads them (``_ndim_coords_from_arrays``), traced or not."""
    points = args[0] if len(args) == 1 else tuple(args)
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        return np.stack(np.broadcast_arrays(*points), axis=-1)
    if isinstance(points, list) and holds_traced(points):
        points = np.stack([np.asarray(part) for part in points])
    points = np.asarray(points)
    if np.ndim(primal_value(points)) == 1:
        points = np.reshape(points, (-1, dimensions))
    return points


def _scaled(self: Any, points: Any) -> Any:
    """The points in the coordinates of SciPy's triangulation or tree (``rescale=True``)."""
    scale = getattr(self, "scale", None)
    return points if scale is None else (points - self.offset) / scale


def _stored_values(self: Any) -> Any:
    """The data values, shape ``(n, ...)``: the traced ones, or SciPy's plain ones."""
    values = self.__dict__.get(_DATA)
    if values is not None:
        return values
    values = np.asarray(self.values)
    shape = getattr(self, "values_shape", None)
    return values if shape is None else np.reshape(values, (values.shape[0],) + tuple(shape))


# --- calls ------------------------------------------------------------------------------------

def _triangulated_call(original: Any) -> Any:
    """``__call__`` of ``LinearNDInterpolator`` and ``CloughTocher2DInterpolator``."""
    def __call__(self, *args: Any) -> Any:
        traced_points = holds_traced(args)
        if _DATA not in self.__dict__ and not traced_points:
            refuse_traced_interpolant(self)
            return original(self, *args)
        plain = np.asarray(original(self, *(primal_value(arg) for arg in args)))
        name = type(self).__name__
        dimensions = self.points.shape[1]
        points = _coordinates(args, dimensions)
        leading = np.shape(primal_value(points))[:-1]
        flat = np.reshape(_scaled(self, points), (-1, dimensions))
        simplex = self.tri.find_simplex(np.asarray(primal_value(flat), dtype=float))
        outside = simplex < 0
        if name == "CloughTocher2DInterpolator" or not hasattr(self.tri, "transform"):
            if traced_points:
                raise TracingError(
                    f"{name} at traced points: its derivative in the evaluation points is "
                    f"not followed (only in the data values). Use LinearNDInterpolator or "
                    f"RBFInterpolator, differentiable in both.")
            basis = _basis(self, fill_value=0.0)
            unit_values = np.reshape(np.asarray(basis(*args)), (-1, self.points.shape[0]))
            values = self.__dict__[_DATA]
            result = np.tensordot(unit_values, values, axes=1)
        else:
            result = _barycentric(self.tri, flat, simplex, _stored_values(self))
        result = np.reshape(result, plain.shape)
        if outside.any():  # SciPy's fill value there (a constant)
            mask = np.reshape(outside, leading + (1,) * (plain.ndim - len(leading)))
            result = np.where(mask, plain, result)
        return result

    return __call__


def _barycentric(triangulation: Any, points: Any, simplex: np.ndarray, values: Any) -> Any:
    """The linear interpolant at ``points`` (shape ``(k, d)``) in the simplices ``simplex`` of
    ``triangulation``: the points' barycentric coordinates weighting the vertices' values.
    Points outside (simplex -1) get a finite stand-in, replaced by the caller."""
    transform = triangulation.transform
    usable = np.flatnonzero(np.isfinite(transform).all(axis=(1, 2)))
    simplex = np.where(simplex < 0, usable[0] if len(usable) else 0, simplex)
    dimensions = transform.shape[2]
    affine = transform[simplex]
    coordinates = np.sum(affine[:, :dimensions, :] *
                         (points - affine[:, dimensions, :])[:, None, :], axis=2)
    weights = np.concatenate(
        [coordinates, 1.0 - np.sum(coordinates, axis=1, keepdims=True)], axis=1)
    corners = values[triangulation.simplices[simplex]]  # (k, d + 1, ...)
    extra = np.ndim(primal_value(corners)) - 2
    return np.sum(np.reshape(weights, np.shape(weights) + (1,) * extra) * corners, axis=1)


def _nearest_call(original: Any) -> Any:
    """``NearestNDInterpolator.__call__``."""
    def __call__(self, *args: Any, **query_options: Any) -> Any:
        if _DATA not in self.__dict__ and not holds_traced(args):
            refuse_traced_interpolant(self)
            return original(self, *args, **query_options)
        plain = np.asarray(original(self, *(primal_value(arg) for arg in args),
                                    **query_options))
        dimensions = self.points.shape[1]
        points = np.asarray(primal_value(_coordinates(args, dimensions)))
        leading = points.shape[:-1]
        flat = np.reshape(_scaled(self, points), (-1, dimensions))
        distance, index = self.tree.query(flat, **query_options)
        found = np.isfinite(distance)
        values = _stored_values(self)
        result = values[np.where(found, index, 0)]
        result = np.reshape(result, plain.shape)
        if not found.all():  # no data point within distance_upper_bound: SciPy's NaN
            mask = np.reshape(~found, leading + (1,) * (plain.ndim - len(leading)))
            result = np.where(mask, plain, result)
        return result

    return __call__


# --- radial basis functions -------------------------------------------------------------------

def _safe_norm(squared: Any) -> tuple:
    """``(positive, r)``: where ``squared > 0``, and ``sqrt(squared)`` there (0 elsewhere),
    whose derivative is finite at 0 (the kernels are even in ``r``: their derivative there
    is 0, or undefined for ``-r``)."""
    positive = np.asarray(primal_value(squared)) > 0
    return positive, np.where(positive, np.sqrt(np.where(positive, squared, 1.0)), 0.0)


def _kernel(name: str, squared: Any) -> Any:
    """SciPy's radial basis function ``name`` of ``r`` given ``r ** 2``."""
    if name == "gaussian":
        return np.exp(-squared)
    if name == "multiquadric":
        return -np.sqrt(squared + 1.0)
    if name == "inverse_multiquadric":
        return 1.0 / np.sqrt(squared + 1.0)
    if name == "inverse_quadratic":
        return 1.0 / (squared + 1.0)
    positive, r = _safe_norm(squared)
    if name == "linear":
        return -r
    if name == "cubic":
        return squared * r
    if name == "quintic":
        return -(squared * squared * r)
    if name == "thin_plate_spline":  # r^2 log r, 0 at r = 0
        return np.where(positive, 0.5 * squared * np.log(np.where(positive, squared, 1.0)), 0.0)
    raise TracingError(f"RBFInterpolator: kernel {name!r} is not one chainrules follows.")


def _monomials(scaled: Any, powers: np.ndarray) -> Any:
    """The monomials ``prod(scaled ** powers[k])`` of each point, shape ``(m, len(powers))``,
    as products (a power 0 contributes 1: no ``0 ** -1`` in a derivative)."""
    columns = []
    for exponents in np.asarray(powers):
        column = np.ones(np.shape(primal_value(scaled))[0])
        for axis, exponent in enumerate(exponents):
            for _ in range(int(exponent)):
                column = column * scaled[:, axis]
        columns.append(column)
    if not columns:
        return np.zeros((np.shape(primal_value(scaled))[0], 0))
    return np.stack(columns, axis=1)


def _rbf_values(self: Any, x: Any, coefficients: Any) -> Any:
    """``K(x) @ coefficients[:n] + P(x) @ coefficients[n:]`` (``neighbors=None``)."""
    nodes = np.asarray(self.y)
    difference = (x[:, None, :] - nodes[None, :, :]) * self.epsilon
    kernel = _kernel(self.kernel, np.sum(difference * difference, axis=2))
    monomials = _monomials((x - self._shift) / self._scale, self.powers)
    n = nodes.shape[0]
    return kernel @ coefficients[:n] + monomials @ coefficients[n:]


def _plain_coefficients(self: Any) -> np.ndarray:
    """SciPy's coefficients, with the columns of complex values made complex again."""
    coefficients = np.asarray(self._coeffs)
    if np.dtype(self.d_dtype).kind == "c":
        coefficients = np.ascontiguousarray(coefficients).view(complex)
    return coefficients


def _rbf_call(original: Any) -> Any:
    """``RBFInterpolator.__call__``."""
    def __call__(self, x: Any) -> Any:
        values = self.__dict__.get(_DATA)
        traced_points = holds_traced(x)
        if values is None and not traced_points:
            refuse_traced_interpolant(self)
            return original(self, x)
        plain = np.asarray(original(self, primal_value(x)))  # SciPy's checks
        x = np.asarray(x)
        n = np.asarray(self.y).shape[0]
        flat_values = None if values is None else np.reshape(values, (n, -1))
        if self.neighbors is not None:
            if traced_points:
                raise TracingError(
                    "RBFInterpolator with neighbors at traced points: the derivative in the "
                    "evaluation points is followed without neighbors (neighbors=None) only.")
            unit_values = np.asarray(_basis(self)(x))  # (m, n)
            result = unit_values @ flat_values
        else:
            if flat_values is None:
                coefficients = _plain_coefficients(self)
            else:
                coefficients = _basis(self)._coeffs @ flat_values
            result = _rbf_values(self, x, coefficients)
        return np.reshape(result, plain.shape)

    return __call__


# --- the swaps --------------------------------------------------------------------------------

_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.interpolate`` is imported."""
    module = loaded_module("scipy.interpolate")
    if module is None:
        return []
    if _made:
        return _made
    linear, nearest = module.LinearNDInterpolator, module.NearestNDInterpolator
    clough_tocher, rbf = module.CloughTocher2DInterpolator, module.RBFInterpolator
    base = next(c for c in linear.__mro__ if "__call__" in vars(c))
    made = [Swap(base, "__call__", _triangulated_call(vars(base)["__call__"]),
                 vars(base)["__call__"]),
            Swap(nearest, "__call__", _nearest_call(vars(nearest)["__call__"]),
                 vars(nearest)["__call__"]),
            Swap(rbf, "__call__", _rbf_call(vars(rbf)["__call__"]), vars(rbf)["__call__"])]
    for cls in (linear, clough_tocher, nearest, rbf):
        own = vars(cls)["__init__"]
        made.append(Swap(cls, "__init__", _init(cls.__name__, own), own))
    _made.extend(made)
    return _made
