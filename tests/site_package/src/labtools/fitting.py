"""Curve fitting and image helpers as packages write them: a pseudo-inverse, polynomial roots,
masked placement, SciPy's interpolators and image filters."""

import numpy as np
import scipy.interpolate
import scipy.linalg
import scipy.ndimage


def least_squares(design, targets):
    """Coefficients by the pseudo-inverse."""
    return scipy.linalg.pinv(design) @ targets


def largest_real_root(coefficients):
    """The largest real root of a polynomial with real roots."""
    return np.max(np.real(np.roots(coefficients)))


def clipped(values, limit):
    """Values above ``limit`` replaced by ``limit`` (with np.place)."""
    out = np.array(values, dtype=float)
    np.place(out, values > limit, limit)
    return out


def resample(nodes, values, points, kind="cubic"):
    """Values at ``points`` of the interpolant through (nodes, values)."""
    if kind == "spline":
        return scipy.interpolate.CubicSpline(nodes, values)(points)
    if kind == "bspline":
        return scipy.interpolate.make_interp_spline(nodes, values, k=3)(points)
    return scipy.interpolate.interp1d(nodes, values, kind=kind)(points)


def smoothed_edges(image, sigma=1.0):
    """Edge strength of a smoothed image."""
    smooth = scipy.ndimage.gaussian_filter(image, sigma)
    dx = scipy.ndimage.convolve(smooth, np.array([[1.0, 0.0, -1.0]]))
    return np.sqrt(dx ** 2 + 1e-6)


def sample(image, rows, cols):
    """Bilinear samples of an image at (rows, cols)."""
    return scipy.ndimage.map_coordinates(image, np.stack([rows, cols]), order=1)
