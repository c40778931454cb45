"""Plane geometry with the ``math`` module on scalars (module attributes and names bound at
import time)."""

import math
from math import atan2, exp, hypot, log


def rotate(point, angle):
    """``point`` rotated by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return (c * point[0] - s * point[1], s * point[0] + c * point[1])


def polar(point):
    """(radius, angle) of a point."""
    return math.sqrt(point[0] ** 2 + point[1] ** 2), atan2(point[1], point[0])


def soft_distance(a, b, temperature):
    """log(exp(d/T) + 1) * T, the distance d from hypot."""
    d = hypot(a[0] - b[0], a[1] - b[1])
    return log(exp(d / temperature) + 1.0) * temperature


def is_degenerate(point):
    """A test the library makes on values: no derivative involved."""
    return math.isclose(point[0], 0.0) and math.isfinite(point[1])
