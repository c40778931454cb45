"""Inputs that are not plain ndarrays get the right gradient or a TypeError naming the type.

Decisions (also in the README): a plain ndarray subclass (no arithmetic or indexing of its own)
is differentiated as its data and its gradient has its type; np.matrix, masked arrays, record
and structured arrays, subclasses with their own arithmetic, and object arrays holding numbers
are refused with what to pass instead. Object arrays of non-numbers (strings) get NoTangent().
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import chainrules as cr

from .finite_differences import numerical_gradient

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix


class Tagged(np.ndarray):
    """An ndarray subclass that only carries metadata."""

    def __array_finalize__(self, obj):
        self.unit = getattr(obj, "unit", "m")


class Doubling(np.ndarray):
    """An ndarray subclass whose `*` means something else."""

    def __mul__(self, other):
        return np.multiply(self, other) * 2


def loss(x):
    return np.sum(np.sin(x) * x)


def test_a_plain_subclass_gets_its_gradient_in_its_own_type():
    x = np.array([0.3, 1.1, -0.4]).view(Tagged)
    g = cr.grad(loss)(x)
    assert type(g) is Tagged
    np.testing.assert_allclose(np.asarray(g), numerical_gradient(loss, np.asarray(x)),
                               rtol=1e-7)
    g = cr.grad(lambda p: loss(p["x"]))({"x": x})
    assert type(g["x"]) is Tagged


@pytest.mark.parametrize("make, names", [
    (lambda: np.matrix([[1.0, 2.0]]), ["np.matrix", "np.asarray", "@"]),
    (lambda: np.ma.array([1.0, 2.0], mask=[False, True]), ["masked array", "np.where"]),
    (lambda: np.rec.array([(1.0, 2.0)], dtype=[("a", float), ("b", float)]),
     ["structured dtype", "x.dtype.names"]),
    (lambda: np.array([(1.0, 2.0)], dtype=[("a", float), ("b", float)]), ["structured"]),
    (lambda: np.arange(3.0).view(Doubling), ["Doubling", "__mul__", "np.asarray"]),
    (lambda: np.array([1.0, 2.5], dtype=object), ["object-dtype", "astype"]),
    (lambda: np.array([1.0 + 1j, "a"], dtype=object), ["object-dtype"]),
])
def test_inputs_whose_gradient_would_be_wrong_are_refused_by_name(make, names):
    for wrap in (lambda x: x, lambda x: {"params": [x]}):
        with pytest.raises(TypeError) as error:
            cr.grad(lambda p: 1.0)(wrap(make()))
        for name in names:
            assert name in str(error.value)
        assert "argument 0" in str(error.value)


def test_object_arrays_of_non_numbers_are_not_differentiable():
    labels = np.array(["a", "b"], dtype=object)
    g = cr.grad(lambda x, labels: np.sum(x ** 2), argnums=(0, 1))(np.ones(2), labels)
    np.testing.assert_array_equal(g[0], [2.0, 2.0])
    assert g[1] is cr.NoTangent()


def test_subclasses_inside_dataclasses_and_the_refusal_names_the_function():
    @dataclass
    class Model:
        w: np.ndarray

    def model_loss(model):
        return np.sum(model.w ** 2)

    g = cr.grad(model_loss)(Model(np.array([1.0, 2.0]).view(Tagged)))
    assert type(g.w) is Tagged and np.asarray(g.w).tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match="model_loss"):
        cr.grad(model_loss)(Model(np.matrix([[1.0, 2.0]])))
