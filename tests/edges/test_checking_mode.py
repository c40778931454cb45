"""The checking mode (`chainrules.checking`, ``CHAINRULES_CHECK=1``): an injected wrong
in-place accumulation, a NaN's source line, a lazy cotangent of the wrong shape and a wrong
rule caught by the directional check; nothing of it when off."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.checking import is_checking


@cr.primitive
def _scale(x):
    return 2.0 * x


def _wrong_inplace_rule(x):
    """The seed defect's family: an in-place add that disagrees with the value (adds twice)."""
    def pullback(dy):
        value = cr.Thunk(lambda: 2.0 * dy)
        wrong_add = cr.InplaceableThunk(lambda b: np.add(b, 4.0 * dy, out=b), value,
                                        shape=np.shape(x), dtype=np.result_type(x))
        return cr.NoTangent(), wrong_add
    return 2.0 * x, pullback


cr.rrule.register(_scale)(_wrong_inplace_rule)


def _two_uses(x):
    # x gets two contributions: the second is added into an owned buffer, in place
    return np.sum(_scale(x) + _scale(x) + np.sin(x) * x)


def test_an_injected_wrong_accumulation_is_caught():
    x = np.array([0.3, 0.7])
    with cr.checking():
        with pytest.raises(cr.CheckError, match=r"in-place accumulation differs from the eager "
                                                r"sum.*InplaceableThunk"):
            cr.grad(_two_uses)(x)
    # off, it is not (the wrong rule gives a wrong gradient): the check is what finds it
    assert not is_checking()
    cr.grad(_two_uses)(x)


def test_the_first_nan_is_reported_with_the_users_line():
    def loss(x):
        safe = x + 1.0
        root = np.sqrt(x)          # the line that records sqrt at 0
        return np.sum(root * safe)

    with cr.checking():
        with pytest.raises(cr.CheckError) as caught:
            cr.grad(loss)(np.array([1.0, 0.0]))
    message = str(caught.value)
    assert "the pullback of numpy.sqrt made inf from a finite cotangent (argument 0)" in message
    assert __file__ in message and "root = np.sqrt(x)" in message


def test_a_nan_from_a_nan_cotangent_is_not_blamed_on_the_next_operation():
    def loss(x):
        return np.sum(np.exp(np.sqrt(x)))

    with cr.checking():
        with pytest.raises(cr.CheckError, match="numpy.sqrt"):
            cr.grad(loss)(np.array([0.0, 1.0]))


def test_a_lazy_cotangent_of_the_wrong_shape_is_caught():
    @cr.primitive
    def f(x):
        return np.sum(x)

    cr.rrule.register(f)(lambda x: (np.sum(x), lambda dy: (cr.NoTangent(),
                                                           cr.Thunk(lambda: np.ones(5) * dy))))
    with cr.checking():
        with pytest.raises(cr.RuleError, match=r"shape \(5,\).*argument has shape \(3,\)"):
            cr.grad(f)(np.ones(3))


def test_the_directional_check_catches_a_wrong_rule():
    @cr.primitive
    def cube(x):
        return x ** 3

    cr.scalar_rule(cube, lambda y, x: 2 * x ** 2)  # wrong: 3 x^2
    with cr.checking(directional=True):
        with pytest.raises(cr.CheckError, match="disagrees with finite differences"):
            cr.grad(lambda x: np.sum(cube(x)))(np.array([0.5, 1.5]))
        np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.sin(x) * x))(np.ones(3)),
                                   np.sin(1.0) + np.cos(1.0))


def test_the_directional_check_leaves_the_users_random_streams_alone():
    np.random.seed(4)
    expected = np.random.rand()
    np.random.seed(4)
    with cr.checking(directional=True):
        cr.grad(lambda p: p["w"] ** 2 + np.sum(p["v"] ** 2))({"w": 1.0, "v": np.ones(2)})
    assert np.random.rand() == expected


def test_right_programs_pass_every_check():
    def model(p, x):
        h = np.tanh(p["W"] @ x + p["b"])
        return np.sum(h ** 2) + 0.1 * np.sum(p["W"][0] ** 2)

    rng = np.random.default_rng(0)
    params = {"W": rng.standard_normal((3, 4)), "b": rng.standard_normal(3)}
    plain = cr.grad(model)(params, rng.standard_normal(4))
    with cr.checking(directional=True):
        checked = cr.grad(model)(params, rng.standard_normal(4) * 0 + np.ones(4))
    assert checked["W"].shape == plain["W"].shape


def test_the_environment_variable_turns_it_on_for_a_run():
    code = ("import numpy as np, chainrules as cr\n"
            "from chainrules.core.checking import is_checking, checks_directions\n"
            "print(is_checking(), checks_directions())\n"
            "try:\n"
            "    cr.grad(lambda x: np.sum(np.sqrt(x)))(np.zeros(2))\n"
            "except cr.CheckError:\n"
            "    print('caught')\n")
    for value, expected in (("1", "True False\ncaught"), ("directional", "True True\ncaught"),
                            ("0", "False False")):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "CHAINRULES_CHECK": value}, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == expected, value
