"""stop_gradient and checkpoint: values, derivatives (finite differences and closed forms) at
orders 1 and 2, in reverse and forward mode, and checkpoint's memory (tracemalloc peaks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.testing import peak_memory
from chainrules import checkpoint, stop_gradient
from chainrules.ad.transforms.api import ENGINE_CONFIG
from chainrules.ad.transforms.gradient_control import checkpointed_call
from chainrules.ad.trace.tape import Tape
from chainrules.ad.dispatch.routing import tracing

from .finite_differences import numerical_gradient

X = np.array([0.3, -0.7, 1.1])


# --- stop_gradient ----------------------------------------------------------------------------

def test_stop_gradient_is_the_identity_in_value():
    x = np.arange(3.0)
    assert stop_gradient(x) is x and stop_gradient(2.5) == 2.5
    assert stop_gradient({"a": x})["a"] is x


@settings(max_examples=20, deadline=None)
@given(st.floats(-3, 3))
def test_stop_gradient_holds_the_value_fixed(x):
    # d/dx [x * c]_{c=x} = c; d/dx sin(c) = 0
    assert cr.grad(lambda x: x * stop_gradient(x) + np.sin(stop_gradient(x)))(x) == \
        pytest.approx(x)


def test_stop_gradient_gives_zero_at_every_order_and_mode():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(stop_gradient(x) ** 3))(x), [0, 0])
    # jvp: d(x * c) = c dx with c = x held fixed
    y, dy = cr.jvp(lambda x: x * stop_gradient(x), (x,), (np.array([1.0, -1.0]),))
    np.testing.assert_allclose(dy, [1.0, -2.0])
    # Hessian of sum(x**2 * c): 2 c on the diagonal
    np.testing.assert_allclose(cr.hessian(lambda x: np.sum(x ** 2 * stop_gradient(x)))(x),
                               np.diag([2.0, 4.0]))
    # grad of grad: d/dx [2 y c]_{y=c=x} = 2 x
    assert cr.grad(cr.grad(lambda y: y ** 2 * stop_gradient(y)))(2.0) == pytest.approx(4.0)
    # stop_gradient inside the inner derivative only: g(x) = d/dy [y * s(y)**2] = s(x)**2
    assert cr.grad(lambda x: cr.grad(lambda y: y * stop_gradient(y) ** 2)(x))(3.0) == 0.0
    np.testing.assert_allclose(cr.jacfwd(lambda x: stop_gradient(x) * x)(x), np.diag(x))


def test_stop_gradient_of_a_structure_and_straight_through():
    grads = cr.grad(lambda p: p["a"] * stop_gradient(p)["b"] + stop_gradient(p)["a"])(
        {"a": 2.0, "b": 5.0})
    assert grads == {"a": 5.0, "b": 0.0}
    # straight-through rounding: forward rounds, backward is the identity
    x = np.array([0.4, 1.6])
    rounded = lambda x: x + stop_gradient(np.round(x) - x)  # noqa: E731
    np.testing.assert_array_equal(rounded(x), [0.0, 2.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(rounded(x) ** 2))(x), [0.0, 4.0])


# --- checkpoint: derivatives --------------------------------------------------------------------

def _segment(x, c):
    return np.sin(x) * c + x ** 2 * 0.1


def _two_segments(x):
    segment = checkpoint(_segment)
    return np.sum(segment(segment(x, 0.5), 1.5) ** 2)


def test_checkpoint_value_and_gradient_match_finite_differences():
    assert _two_segments(X) == pytest.approx(
        np.sum(_segment(_segment(X, 0.5), 1.5) ** 2))
    np.testing.assert_allclose(cr.grad(_two_segments)(X), numerical_gradient(_two_segments, X),
                               rtol=1e-6, atol=1e-8)


def test_checkpoint_records_one_operation_and_recomputes_once():
    calls = []

    def body(x):
        calls.append(1)
        for _ in range(20):
            x = np.tanh(x) * 1.1
        return x

    tape = Tape(ENGINE_CONFIG)
    with tracing(tape):
        checkpoint(body)(tape.leaf(X))
    recorded = [record[1] for record in tape.records if record[1] is not None]  # no inputs
    assert recorded == [checkpointed_call]  # one operation, nothing of the 40 inside it
    calls.clear()
    g = cr.grad(lambda x: np.sum(checkpoint(body)(x)))(X)
    assert len(calls) == 2  # the forward pass, and its recomputation in the backward pass
    np.testing.assert_allclose(g, numerical_gradient(lambda x: np.sum(body(x)), X), rtol=1e-6)


def test_checkpoint_of_a_closure_over_traced_values_and_keywords():
    def loss(x):
        w = x * 2.0
        inner = checkpoint(lambda y, scale: scale * np.sum(w * np.cos(y)))
        return inner(x[::-1], scale=x[0])

    expected = numerical_gradient(loss, X)
    np.testing.assert_allclose(cr.grad(loss)(X), expected, rtol=1e-6, atol=1e-8)


@dataclass
class State:
    position: np.ndarray
    velocity: np.ndarray
    steps: int


def _leapfrog(state: State, dt: float) -> State:
    velocity = state.velocity - dt * np.sin(state.position)
    return State(state.position + dt * velocity, velocity, state.steps + 1)


def test_checkpoint_with_structured_inputs_and_outputs():
    step = checkpoint(_leapfrog)

    def energy_after(x, checkpointed=True):
        state = State(x, np.zeros_like(x), 0)
        for _ in range(4):
            state = (step if checkpointed else _leapfrog)(state, 0.1)
        assert state.steps == 4
        return np.sum(state.position ** 2) + np.sum(state.velocity ** 2)

    assert energy_after(X) == pytest.approx(energy_after(X, checkpointed=False))
    np.testing.assert_allclose(cr.grad(energy_after)(X), numerical_gradient(energy_after, X),
                               rtol=1e-6, atol=1e-8)

    nested = checkpoint(lambda u: {"pair": (u, u ** 2), "count": 3, "tag": "t"})
    out = nested(X)
    assert out["count"] == 3 and out["tag"] == "t"
    np.testing.assert_allclose(out["pair"][1], X ** 2)
    loss = lambda x: np.sum(nested(x)["pair"][1] * 2.0) + np.sum(nested(x)["pair"][0])  # noqa
    np.testing.assert_allclose(cr.grad(loss)(X), 4.0 * X + 1.0)


def test_checkpoint_in_forward_mode():
    v = np.array([1.0, 0.5, -2.0])
    y, dy = cr.jvp(lambda x: checkpoint(_segment)(x, 0.5), (X,), (v,))
    np.testing.assert_allclose(y, _segment(X, 0.5))
    np.testing.assert_allclose(dy, (0.5 * np.cos(X) + 0.2 * X) * v)
    # a structured output, and a closure's captured value moving with the input
    y, dy = cr.jvp(lambda x: checkpoint(lambda u: {"b": (u, x * u ** 2)})(x), (X,), (v,))
    np.testing.assert_allclose(dy["b"][1], 3 * X ** 2 * v)
    np.testing.assert_allclose(cr.jacfwd(lambda x: checkpoint(_segment)(x, 0.5))(X),
                               np.diag(0.5 * np.cos(X) + 0.2 * X))


def test_checkpoint_at_order_two():
    hessian = cr.hessian(_two_segments)(X)
    gradient = cr.grad(_two_segments)
    expected = np.array([numerical_gradient(lambda x: gradient(x)[i], X) for i in range(3)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)
    loss = lambda x: np.sum(cr.grad(_two_segments)(x) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(loss)(X), numerical_gradient(loss, X), rtol=1e-5,
                               atol=1e-6)
    # closed form: f(x) = sum(x**3) inside a checkpoint; Hessian diag(6x)
    np.testing.assert_allclose(cr.hessian(lambda x: checkpoint(lambda u: np.sum(u ** 3))(x))(X),
                               np.diag(6 * X))


def test_checkpoint_called_on_plain_values_is_f():
    assert checkpoint(_segment)(X, 0.5) == pytest.approx(_segment(X, 0.5))
    assert checkpoint(lambda a, b: (a + b, "s"))(1.0, 2.0) == (3.0, "s")


# --- checkpoint: memory -------------------------------------------------------------------------

SIZE = 4096  # elements of the loop's state: one array of it is ARRAY bytes
ARRAY = SIZE * 8
SEGMENT = 16




def _step(x):
    return np.sin(x) * 0.99 + 0.01


def _steps(x, k):
    for _ in range(k):
        x = _step(x)
    return x


_checkpointed_steps = checkpoint(_steps)


def _plain_loop(x, n):
    return np.sum(_steps(x, n))


def _checkpointed_loop(x, n):
    for _ in range(n // SEGMENT):
        x = _checkpointed_steps(x, SEGMENT)
    return np.sum(x)


def test_checkpointed_loop_memory_is_bounded_by_the_segment_length():
    x0 = np.linspace(0.0, 1.0, SIZE)
    n = 2 * SEGMENT
    plain = [peak_memory(lambda: cr.grad(_plain_loop)(x0, m)) for m in (n, 8 * n)]
    checkpointed = [peak_memory(lambda: cr.grad(_checkpointed_loop)(x0, m)) for m in (n, 8 * n)]
    # Without checkpoints the tape holds a few arrays per step: 8x the steps, ~8x the peak.
    assert plain[1] > 5 * plain[0]
    # With them: the segment inputs (N / SEGMENT arrays) and one segment's tape at a time:
    # at most a few arrays more per extra segment, and far below the plain loop's.
    extra_segments = (8 * n - n) // SEGMENT
    assert checkpointed[1] - checkpointed[0] < 4 * ARRAY * extra_segments
    assert checkpointed[1] < plain[1] / 5
    # and the gradient is the plain loop's (one step's derivative: 0.99 cos)
    small = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(cr.grad(_checkpointed_loop)(small, 4 * SEGMENT),
                               cr.grad(_plain_loop)(small, 4 * SEGMENT), rtol=1e-12)
    np.testing.assert_allclose(cr.grad(_checkpointed_loop)(small, 2 * SEGMENT),
                               numerical_gradient(lambda x: _plain_loop(x, 2 * SEGMENT), small),
                               rtol=1e-6)
