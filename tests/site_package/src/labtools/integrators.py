"""Time steppers: arrays that are not fresh creations (results of arithmetic, copies,
``np.asarray`` of lists) written into, and a class that updates its arrays in place."""

import numpy as np


def euler(rate, y0, dt, steps):
    """dy/dt = -rate * y by explicit Euler; the trajectory array is ``np.zeros(...) + 0.0``
    and the state a copy of a fresh array."""
    trajectory = np.zeros((steps + 1, len(y0))) + 0.0
    y = np.zeros(len(y0)).copy()
    y[:] = y0
    trajectory[0] = y
    for n in range(steps):
        y = y - dt * rate * y
        trajectory[n + 1] = y
    return trajectory


def running_sums(x):
    """Partial sums into ``np.asarray([0.0] * n)``."""
    out = np.asarray([0.0] * len(x))
    total = 0.0
    for i in range(len(x)):
        total = total + x[i]
        out[i] = total
    return out


def shifted_square(x):
    """An in-place operator on a view of a temporary."""
    v = np.reshape(x * 2.0, (2, 2))
    v -= 1.0
    return v


class Particles:
    """Particles on a line, pushed by a force: arrays kept as attributes, updated in place."""

    def __init__(self, n):
        self.x = np.arange(n) * 1.0
        self.v = np.zeros(n)

    def step(self, force, dt):
        self.v += dt * force
        self.x += dt * self.v

    def energy(self):
        return 0.5 * np.sum(self.v ** 2)


def simulate(force, steps=5, dt=0.1):
    """The particles' positions after ``steps`` steps under a constant ``force``."""
    particles = Particles(len(force))
    for _ in range(steps):
        particles.step(force, dt)
    return particles.x
