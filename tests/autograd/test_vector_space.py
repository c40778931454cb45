"""Types of your own as gradients (`chainrules.vector_space`, and autograd's ``VSpace`` in
`chainrules.autograd.extend`): a function in a reproducing-kernel Hilbert space trained by
gradient descent, as autograd's RKHS example does it (only the imports changed), its gradient
against the closed form; the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.autograd import grad
from chainrules.autograd.extend import Box, VSpace, defvjp, primitive, vspace


def rbf(x1, x2):
    return np.exp(-(x1 - x2) ** 2)


class RKHSFun:
    def __init__(self, kernel, alphas=None):
        self.alphas = dict(alphas or {})
        self.kernel = kernel
        self.vs = RKHSFunVSpace(self)

    @primitive
    def __call__(self, x):
        return sum([a * self.kernel(x, x_repr) for x_repr, a in self.alphas.items()], 0.0)

    def __add__(self, f):
        return self.vs.add(self, f)

    def __mul__(self, a):
        return self.vs.scalar_mul(self, a)


class RKHSFunBox(Box, RKHSFun):
    @property
    def kernel(self):
        return self._value.kernel


RKHSFunBox.register(RKHSFun)


class RKHSFunVSpace(VSpace):
    def __init__(self, value):
        self.kernel = value.kernel

    def zeros(self):
        return RKHSFun(self.kernel)

    def _add(self, f, g):
        alphas = dict(f.alphas)
        for x, a in g.alphas.items():
            alphas[x] = alphas.get(x, 0.0) + a
        return RKHSFun(f.kernel, alphas)

    def _scalar_mul(self, f, a):
        return RKHSFun(f.kernel, {x: a * value for x, value in f.alphas.items()})


RKHSFunVSpace.register(RKHSFun)
defvjp(RKHSFun.__call__, lambda ans, f, x: lambda g: RKHSFun(f.kernel, {x: 1.0}) * g)

XS, YS = [0.0, 0.5, 1.0, 2.0], [1, -1, 1, -1]


def logistic_loss(f, xs, ys):
    return sum([np.log(1 + np.exp(-y * f(x))) for x, y in zip(xs, ys)])


def test_the_gradient_is_a_function_of_the_space_and_matches_the_closed_form():
    f = RKHSFun(rbf, {0.25: 0.3, 1.5: -0.2})
    g = grad(logistic_loss)(f, XS, YS)
    assert type(g) is RKHSFun and isinstance(vspace(g), RKHSFunVSpace)
    # d loss / d f = sum_i -y_i sigmoid(-y_i f(x_i)) k(x_i, .)
    expected = {x: -y / (1 + np.exp(y * f(x))) for x, y in zip(XS, YS)}
    assert g.alphas.keys() == expected.keys()
    for x in XS:
        assert g.alphas[x] == pytest.approx(expected[x])


def test_gradient_descent_in_the_space_lowers_the_loss():
    f = RKHSFun(rbf)
    losses = [logistic_loss(f, XS, YS)]
    for _ in range(20):
        f = f + grad(logistic_loss)(f, XS, YS) * -0.5
        losses.append(logistic_loss(f, XS, YS))
    assert losses[-1] < 0.75 * losses[0] and all(b <= a for a, b in zip(losses, losses[1:]))


def test_chainrules_vector_space_and_its_refusals():
    @cr.vector_space
    class Poly:
        def __init__(self, c):
            self.c = np.asarray(c, float)

        def __add__(self, other):
            return Poly(self.c + other.c)

        def __mul__(self, s):
            return Poly(self.c * s)

        def __call__(self, x):  # not a primitive
            return np.polyval(self.c, x)

    @cr.primitive
    def at(p, x):
        return np.polyval(p.c, x)

    @cr.rrule.register(at)
    def _(p, x):
        return at(p, x), lambda dy: (cr.NoTangent(), Poly(x ** np.arange(len(p.c))[::-1] * dy),
                                     cr.NoTangent())

    p = Poly([1.0, 2.0, 3.0])
    g = cr.grad(lambda p: at(p, 2.0) ** 2)(p)  # 2 p(2) [4, 2, 1]
    np.testing.assert_allclose(g.c, 2 * 11.0 * np.array([4.0, 2.0, 1.0]))
    with pytest.raises(AttributeError, match="'Traced' object has no attribute 'c'"):
        cr.grad(lambda p: at(p, 1.0) * len(p.c))(p)  # its fields: read inside rules only
    with pytest.raises(cr.TracingError, match=r"Poly.__call__ is not a primitive"):
        cr.grad(lambda p: p(2.0))(p)

    @cr.primitive
    def wrong(p):
        return float(np.sum(p.c))

    @cr.rrule.register(wrong)
    def _(p):
        return wrong(p), lambda dy: (cr.NoTangent(), np.ones(3) * dy)

    with pytest.raises(cr.RuleError, match=r"wrong returned, for argument 0, a cotangent of "
                                           r"shape \(3,\)"):
        cr.grad(wrong)(p)
    with pytest.raises(Exception, match=r"Poly \(declared a vector space\) takes cotangents "
                                        r"of type Poly, got a float"):
        cr.ProjectTo(p)(1.5)
    with pytest.raises(TypeError, match="has no __mul__"):
        cr.vector_space(type("Scalarless", (), {"__add__": lambda a, b: a}))
