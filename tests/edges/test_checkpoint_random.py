"""`checkpoint` recomputes with the same random draws (family 7 of "never silent at the
edges"): the recomputed function is the one that was run, and the caller's streams go on as if
the recomputation had not happened."""

from __future__ import annotations

import random

import numpy as np
import pytest

import chainrules as cr


def test_numpy_global_generator():
    def noisy(a):
        return a * np.random.rand()

    np.random.seed(0)
    first = np.random.rand()
    np.random.seed(0)
    g = cr.grad(cr.checkpoint(noisy))(1.0)
    assert g == first                          # the gradient of the function that ran
    np.random.seed(0)
    np.random.rand()
    expected_next = np.random.rand()
    np.random.seed(0)
    cr.grad(cr.checkpoint(noisy))(1.0)
    assert np.random.rand() == expected_next    # the stream went on from the forward's draw


def test_python_random_module():
    def noisy(a):
        return a * random.random()

    random.seed(1)
    first = random.random()
    random.seed(1)
    assert cr.grad(cr.checkpoint(noisy))(2.0) == first


def test_a_generator_closed_over():
    rng = np.random.default_rng(3)
    first = np.random.default_rng(3).random()

    def noisy(a):
        return a * rng.random()

    assert cr.grad(cr.checkpoint(noisy))(1.0) == first
    reference = np.random.default_rng(3)
    reference.random()
    assert rng.random() == reference.random()


def test_a_generator_passed_as_an_argument():
    def noisy(a, generator):
        return np.sum(a * generator.normal(size=a.shape))

    x = np.ones(3)
    draws = np.random.default_rng(5).normal(size=3)
    g = cr.grad(lambda x: cr.checkpoint(noisy)(x, np.random.default_rng(5)))(x)
    np.testing.assert_allclose(g, draws, rtol=0, atol=0)


_MODULE_RNG = np.random.default_rng(11)


def _module_noisy(a):
    return a * _MODULE_RNG.random()


def test_a_module_level_generator_the_function_names():
    _MODULE_RNG.bit_generator.state = np.random.default_rng(11).bit_generator.state
    assert cr.grad(cr.checkpoint(_module_noisy))(1.0) == pytest.approx(
        np.random.default_rng(11).random(), abs=0)
