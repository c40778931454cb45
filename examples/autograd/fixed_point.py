"""Cube roots by Newton's iteration and the equilibrium of a small recurrent map, both as
fixed points, differentiated by the implicit function theorem (not through the iterations).
The autograd form differs only in its import lines.
"""
import chainrules.autograd.numpy as np
from chainrules.autograd import grad, jacobian
from chainrules.autograd.misc.fixed_points import fixed_point


def newton_step(a):
    return lambda x: x - (x ** 3 - a) / (3 * x ** 2)


def largest_change(x, previous):
    return np.max(np.abs(x - previous))


def cube_root(a):
    return fixed_point(newton_step, a, 1.0, largest_change, 1e-12)


root = cube_root(5.0)
slope = grad(cube_root)(5.0)                 # (1/3) a^(-2/3)
curvature = grad(grad(cube_root))(5.0)       # (-2/9) a^(-5/3)

W = np.array([[0.3, -0.2], [0.1, 0.4]])


def equilibrium(inputs):
    """The state h with h = tanh(W h + inputs)."""
    step = lambda u: lambda h: np.tanh(np.dot(W, h) + u)
    return fixed_point(step, inputs, np.zeros(2), largest_change, 1e-13)


u = np.array([0.5, -1.0])
state = equilibrium(u)
sensitivity = jacobian(equilibrium)(u)       # d state / d inputs

if __name__ == "__main__":
    print("cube root of 5:", root, "derivative:", slope, "second derivative:", curvature)
    print("equilibrium:", state)
    print("its Jacobian in the inputs:\n", sensitivity)
