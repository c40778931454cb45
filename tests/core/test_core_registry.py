"""The rule registry (rrule, frule, config-aware rules, non_differentiable) and scalar_rule.

scalar_rule is checked on functions defined here (so the library's own rules for np.sin etc.
stay untouched) against central finite differences written here, including broadcasting,
float32 and the complex convention ``cotangent = conj(f'(z)) * dy``.
"""

from __future__ import annotations

import numpy as np
import pytest

from chainrules.core import (AbstractThunk, NoTangent, RuleConfig, Thunk, ZeroTangent, frule,
                             frule_via_ad, non_differentiable, rrule, rrule_via_ad, scalar_rule,
                             unthunk)
from chainrules.core.registry import NON_DIFFERENTIABLE, UnusedRuleWarning, recorded_whole


@pytest.fixture
def forget():
    """Register test rules freely: every function passed to ``forget`` leaves the tables."""
    functions = []
    yield functions.append
    for f in functions:
        rrule._rules.pop(f, None)
        frule._rules.pop(f, None)
        NON_DIFFERENTIABLE.discard(f)


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

def test_register_and_look_up(forget):
    @recorded_whole
    def cube(x):
        return x ** 3

    forget(cube)
    assert rrule(cube, 2.0) is None and frule((NoTangent(), 1.0), cube, 2.0) is None
    assert rrule.lookup(cube) is None and cube not in rrule

    @rrule.register(cube)
    def cube_rrule(x):
        return x ** 3, lambda dy: (NoTangent(), 3 * x ** 2 * dy)

    @frule.register(cube)
    def cube_frule(tangents, x):
        return x ** 3, 3 * x ** 2 * tangents[1]

    assert rrule.lookup(cube) == (cube_rrule, False)
    assert cube in rrule and cube in rrule.functions()
    y, pullback = rrule(cube, 2.0)
    assert y == 8.0 and pullback(0.5) == (NoTangent(), 6.0)
    assert frule((NoTangent(), 0.5), cube, 2.0) == (8.0, 6.0)
    assert "rrule" in repr(rrule)


def test_unhashable_callables_have_no_rule():
    class Unhashable:
        __hash__ = None

        def __call__(self, x):
            return x

    assert rrule.lookup(Unhashable()) is None
    assert rrule(Unhashable(), 1.0) is None


def test_registering_twice_without_replace_raises(forget):
    @recorded_whole
    def double(x):
        return 2 * x

    forget(double)
    rrule.register(double)(lambda x: (2 * x, lambda dy: (NoTangent(), 2 * dy)))
    with pytest.raises(ValueError, match=r"double.*already registered.*replace=True"):
        rrule.register(double)(lambda x: (2 * x, lambda dy: (NoTangent(), 3 * dy)))
    assert rrule(double, 1.0)[1](1.0)[1] == 2   # the first rule is still the rule

    rrule.register(double, replace=True)(lambda x: (2 * x, lambda dy: (NoTangent(), 5 * dy)))
    assert rrule(double, 1.0)[1](1.0)[1] == 5


class RecordingConfig(RuleConfig):
    has_reverse_mode = True


def test_config_aware_rules_receive_the_config(forget):
    @recorded_whole
    def scaled(x, factor=1.0):
        return factor * x

    forget(scaled)
    seen = []

    @rrule.register(scaled, config=True)
    def scaled_rrule(config, x, factor=1.0):
        seen.append(config)
        return factor * x, lambda dy: (NoTangent(), factor * dy)

    @frule.register(scaled, config=True)
    def scaled_frule(config, tangents, x, factor=1.0):
        seen.append(config)
        return factor * x, factor * tangents[1]

    config = RecordingConfig()
    assert rrule.lookup(scaled) == (scaled_rrule, True)
    y, pullback = rrule.with_constants(config, scaled, 2.0, factor=3.0)  # factor: a constant
    assert y == 6.0 and pullback(1.0) == (NoTangent(), 3.0)
    assert frule.with_constants(config, (NoTangent(), 1.0), scaled, 2.0, factor=3.0) == \
        (6.0, 3.0)
    assert seen == [config, config]

    rrule(scaled, 2.0)   # without a config: the default one
    assert isinstance(seen[-1], RuleConfig) and seen[-1] is not config

    assert rrule_via_ad(config, scaled, 2.0)[0] == 2.0
    assert seen[-1] is config
    assert frule_via_ad(config, (NoTangent(), 1.0), scaled, 2.0) == (2.0, 1.0)


def test_rules_without_config_do_not_see_it(forget):
    @recorded_whole
    def plain(x):
        return x

    forget(plain)
    rrule.register(plain)(lambda x: (x, lambda dy: (NoTangent(), dy)))
    frule.register(plain)(lambda tangents, x: (x, tangents[1]))
    assert rrule(RecordingConfig(), plain, 4.0)[0] == 4.0
    assert frule(RecordingConfig(), (NoTangent(), 1.0), plain, 4.0) == (4.0, 1.0)


def test_rule_config_without_ad_says_so():
    def nameless_function(x):
        return x

    with pytest.raises(NotImplementedError, match="nameless_function"):
        rrule_via_ad(RuleConfig(), nameless_function, 1.0)
    with pytest.raises(NotImplementedError, match="nameless_function"):
        frule_via_ad(RuleConfig(), (NoTangent(), 1.0), nameless_function, 1.0)


def test_non_differentiable(forget):
    def first_index_above(x, threshold, *, strict=True):
        return int(np.argmax(x > threshold if strict else x >= threshold))

    forget(first_index_above)
    non_differentiable(first_index_above)
    assert first_index_above in NON_DIFFERENTIABLE
    x = np.array([0.1, 0.7, 0.9])
    y, pullback = rrule(first_index_above, x, 0.5, strict=False)
    assert y == 1
    assert pullback(1.0) == (NoTangent(), NoTangent(), NoTangent())
    assert all(t is NoTangent() for t in pullback(1.0))
    y, dy = frule((NoTangent(), np.ones(3), 1.0), first_index_above, x, 0.5)
    assert y == 1 and dy is ZeroTangent()


def test_a_reverse_rule_registered_later_replaces_the_declaration(forget):
    @recorded_whole
    def rounded_scale(x):
        return np.round(x) * 2.0

    forget(rounded_scale)
    non_differentiable(rounded_scale)
    assert rrule.lookup(rounded_scale)[1] is None  # the declaration, marked for engines

    @frule.register(rounded_scale, replace=True)
    def forward(tangents, x):
        return rounded_scale(x), 2.0 * tangents[1]

    assert rounded_scale in NON_DIFFERENTIABLE  # an frule leaves the reverse declaration

    @rrule.register(rounded_scale, replace=True)
    def reverse(x):  # a straight-through gradient
        return rounded_scale(x), lambda dy: (NoTangent(), 2.0 * dy)

    assert rounded_scale not in NON_DIFFERENTIABLE
    assert rrule.lookup(rounded_scale)[1] is False
    assert rrule(rounded_scale, 0.7)[1](1.0) == (NoTangent(), 2.0)


# ---------------------------------------------------------------------------------------------
# scalar_rule against central finite differences
# ---------------------------------------------------------------------------------------------

@recorded_whole

def my_sin(x, **kwargs):
    return np.sin(x, **kwargs)


@recorded_whole


def my_exp(x, **kwargs):
    return np.exp(x, **kwargs)


@recorded_whole


def my_multiply(a, b, **kwargs):
    return np.multiply(a, b, **kwargs)


@recorded_whole


def my_divide(a, b, **kwargs):
    return np.divide(a, b, **kwargs)


scalar_rule(my_sin, lambda y, x: np.cos(x))
scalar_rule(my_exp, lambda y, x: y)
scalar_rule(my_multiply, lambda y, a, b: b, lambda y, a, b: a)
scalar_rule(my_divide, lambda y, a, b: 1 / b, lambda y, a, b: -y / b)

H = 1e-6


def numerical_vjp(f, args, position, dy):
    """Central differences of ``L = Re(sum(conj(dy) * f(*args)))`` w.r.t. ``args[position]``:
    ``dL/dRe x + i dL/dIm x`` (the gradient convention), element by element, in float64."""
    args = [np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64) for a in args]
    x = args[position]
    dy = np.asarray(dy)

    def loss(value):
        shifted = list(args)
        shifted[position] = value
        return float(np.sum(np.conj(dy) * f(*shifted)).real)

    grad = np.zeros(x.shape, x.dtype)
    for index in np.ndindex(x.shape):
        for direction in ((1.0, 1j) if np.iscomplexobj(x) else (1.0,)):
            plus, minus = x.copy(), x.copy()
            plus[index] += H * direction
            minus[index] -= H * direction
            grad[index] += direction * (loss(plus) - loss(minus)) / (2 * H)
    return grad


def numerical_jvp(f, args, tangents):
    """Central differences of ``f`` along the direction ``tangents``, in float64/complex128."""
    args = [np.asarray(a, np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(t)
                       else np.float64) for a, t in zip(args, tangents)]
    plus = [a + H * np.asarray(t) for a, t in zip(args, tangents)]
    minus = [a - H * np.asarray(t) for a, t in zip(args, tangents)]
    return (f(*plus) - f(*minus)) / (2 * H)


def random(rng, shape, complex_=False, low=0.5, high=2.0):
    value = rng.uniform(low, high, shape)
    if complex_:
        value = value + 1j * rng.uniform(-1.0, 1.0, shape)
    return value


UNARY = [(my_sin, np.sin), (my_exp, np.exp)]
BINARY = [(my_multiply, np.multiply), (my_divide, np.divide)]
SHAPE_PAIRS = [((3,), (3,)), ((3, 1), (4,)), ((2, 3), ()), ((), (2, 2)), ((1, 4), (3, 1))]


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
@pytest.mark.parametrize("f, reference", UNARY, ids=["sin", "exp"])
def test_unary_scalar_rule_matches_finite_differences(f, reference, shape, complex_):
    rng = np.random.default_rng(len(shape) + 7 * complex_)
    x = random(rng, shape, complex_)
    dy = random(rng, shape, complex_)
    y, pullback = rrule(f, x)
    np.testing.assert_allclose(y, reference(x), rtol=0, atol=0)
    _, dx = pullback(dy)
    dx = unthunk(dx)
    assert np.shape(dx) == np.shape(x)
    assert np.asarray(dx).dtype == np.asarray(x).dtype
    np.testing.assert_allclose(dx, numerical_vjp(reference, [x], 0, dy), rtol=1e-6, atol=1e-8)

    tangent = random(rng, shape, complex_)
    y, dy_forward = frule((NoTangent(), tangent), f, x)
    np.testing.assert_allclose(dy_forward, numerical_jvp(reference, [x], [tangent]),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("f, reference", BINARY, ids=["multiply", "divide"])
def test_binary_scalar_rule_with_broadcasting_matches_finite_differences(f, reference, shapes,
                                                                       complex_):
    rng = np.random.default_rng(sum(map(len, shapes)) + 7 * complex_)
    a = random(rng, shapes[0], complex_)
    b = random(rng, shapes[1], complex_)
    y, pullback = rrule(f, a, b)
    np.testing.assert_allclose(y, reference(a, b), rtol=0, atol=0)
    dy = random(rng, np.shape(y), complex_)
    cotangents = pullback(dy)
    assert cotangents[0] is NoTangent() and len(cotangents) == 3
    for position, (arg, cotangent) in enumerate(zip((a, b), cotangents[1:])):
        cotangent = unthunk(cotangent)
        assert np.shape(cotangent) == np.shape(arg), "broadcast dimensions were not summed out"
        np.testing.assert_allclose(cotangent, numerical_vjp(reference, [a, b], position, dy),
                                   rtol=1e-6, atol=1e-8)

    da = random(rng, shapes[0], complex_)
    db = random(rng, shapes[1], complex_)
    _, dy_forward = frule((NoTangent(), da, db), f, a, b)
    np.testing.assert_allclose(dy_forward, numerical_jvp(reference, [a, b], [da, db]),
                               rtol=1e-6, atol=1e-8)
    _, dy_forward = frule((NoTangent(), ZeroTangent(), db), f, a, b)
    np.testing.assert_allclose(dy_forward, numerical_jvp(reference, [a, b], [0 * da, db]),
                               rtol=1e-6, atol=1e-8)


def test_complex_convention_is_conj_derivative_times_dy():
    z = 1.0 + 2.0j
    dy = 0.5 - 0.25j
    _, dz = rrule(my_sin, z)[1](dy)
    assert dz == pytest.approx(np.conj(np.cos(z)) * dy, rel=1e-15)
    _, da, db = rrule(my_multiply, z, 3.0 - 1.0j)[1](dy)
    assert da == pytest.approx(np.conj(3.0 - 1.0j) * dy, rel=1e-15)
    assert db == pytest.approx(np.conj(z) * dy, rel=1e-15)
    # A real argument of a complex product keeps only the real part of its cotangent.
    _, da, db = rrule(my_multiply, 2.0, z)[1](1.0)
    assert type(da) is float and da == pytest.approx((np.conj(z) * 1.0).real)


@pytest.mark.parametrize("f, args", [
    (my_sin, (np.array([0.1, 0.2], np.float32),)),
    (my_exp, (np.float32(0.3),)),
    (my_multiply, (np.array([0.5, 2.0], np.float32), np.float32(3.0))),
    (my_divide, (np.array([[0.5], [2.0]], np.float32), np.array([1.5, 3.0], np.float32))),
], ids=["sin-array", "exp-scalar", "multiply", "divide-broadcast"])
def test_float32_stays_float32(f, args):
    y, pullback = rrule(f, *args)
    dy = np.ones(np.shape(y), np.float64) * 0.7   # a float64 cotangent
    reference = {my_sin: np.sin, my_exp: np.exp, my_multiply: np.multiply,
                 my_divide: np.divide}[f]
    for position, (arg, cotangent) in enumerate(zip(args, pullback(dy)[1:])):
        cotangent = unthunk(cotangent)
        assert type(cotangent) is type(arg)
        assert np.asarray(cotangent).dtype == np.float32
        np.testing.assert_allclose(cotangent, numerical_vjp(reference, list(args), position, dy),
                                   rtol=2e-5)
    tangents = [np.ones(np.shape(a), np.float32) for a in args]
    _, dy_forward = frule((NoTangent(), *tangents), f, *args)
    assert np.asarray(dy_forward).dtype == np.float32
    np.testing.assert_allclose(dy_forward, numerical_jvp(reference, list(args), tangents),
                               rtol=2e-5)


def test_zero_cotangent_and_non_differentiable_arguments(forget):
    @recorded_whole
    def shift(x, n):
        return x + n

    forget(shift)
    scalar_rule(shift, lambda y, x, n: 1.0, None)
    _, pullback = rrule(shift, np.ones(3), 2)
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())
    assert pullback(Thunk(lambda: ZeroTangent()))[1] is ZeroTangent()
    _, dx, dn = pullback(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(unthunk(dx), [1.0, 2.0, 3.0])
    assert dn is NoTangent()

    # An integer argument gets NoTangent even when its partial is given.
    _, da, db = rrule(my_multiply, np.array([1.0, 2.0]), 3)[1](np.ones(2))
    np.testing.assert_array_equal(unthunk(da), [3.0, 3.0])
    assert db is NoTangent()

    assert frule((NoTangent(), ZeroTangent()), my_sin, 1.0) == (np.sin(1.0), ZeroTangent())


def test_array_cotangents_of_several_arguments_are_lazy():
    calls = []

    def counted(y, a, b):
        calls.append(1)
        return b

    @recorded_whole

    def product(a, b):
        return a * b

    scalar_rule(product, counted, lambda y, a, b: a)
    try:
        _, pullback = rrule(product, np.ones(3), np.full(3, 2.0))
        _, da, db = pullback(np.ones(3))
        assert isinstance(da, AbstractThunk) and calls == []
        np.testing.assert_array_equal(unthunk(da), [2.0, 2.0, 2.0])
        assert calls == [1]
    finally:
        rrule._rules.pop(product, None)
        frule._rules.pop(product, None)


@pytest.mark.parametrize("keyword", ["out", "where"])
def test_out_and_where_are_refused_with_a_clear_error(keyword):
    x = np.array([0.1, 0.2])
    value = np.empty(2) if keyword == "out" else np.array([True, False])
    with pytest.raises(TypeError, match=rf"my_sin.*{keyword}="):
        rrule(my_sin, x, **{keyword: value})
    with pytest.raises(TypeError, match=rf"my_multiply.*{keyword}="):
        rrule(my_multiply, x, x, **{keyword: value})
    with pytest.raises(TypeError, match=rf"my_sin.*{keyword}="):
        frule((NoTangent(), np.ones(2)), my_sin, x, **{keyword: value})
    if keyword == "out":
        np.testing.assert_array_equal(x, [0.1, 0.2])


def test_wrong_number_of_arguments_is_a_clear_error():
    with pytest.raises(TypeError, match=r"my_multiply.*2"):
        rrule(my_multiply, 1.0)
    with pytest.raises(TypeError, match=r"my_sin.*expected 2 tangents"):
        frule((NoTangent(),), my_sin, 1.0)


def test_a_rule_for_a_plain_python_function_warns_with_the_fix(forget):
    def softplus(x):
        return np.log1p(np.exp(x))

    forget(softplus)
    with pytest.warns(UnusedRuleWarning, match=r"softplus.*never calls this rule.*primitive"):
        rrule.register(softplus)(lambda x: (softplus(x), lambda dy: (NoTangent(), dy)))
    with pytest.warns(UnusedRuleWarning, match="frule registered for"):
        frule.register(softplus)(lambda tangents, x: (softplus(x), tangents[1]))


def test_rules_for_primitives_and_numpy_functions_do_not_warn(forget):
    import warnings

    import chainrules as cr

    @cr.primitive
    def softplus(x):
        return np.log1p(np.exp(x))

    forget(softplus)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rrule.register(softplus)(lambda x: (softplus(x), lambda dy: (NoTangent(), dy)))
        rrule.register(np.fabs, replace=True)(rrule.lookup(np.fabs)[0])
        # the engine uses the rule: the gradient is the rule's (1), not softplus' derivative
        assert cr.grad(softplus)(0.0) == 1.0


# --- lazy loaders: rules registered when their library is imported -------------------------

@pytest.fixture
def lazy_loader():
    """Add a lazy loader for the test; removed after it."""
    from chainrules.core import registry

    added = []

    def add(loader):
        registry.add_lazy_loader(loader)
        added.append(loader)

    yield add
    for loader in added:
        registry._LAZY_LOADERS.remove(loader)


def _new_module_imported(name: str) -> None:
    """Make ``sys.modules`` grow, as an import does (a module made here, no file)."""
    import sys
    import types

    sys.modules[name] = types.ModuleType(name)


def test_a_lazy_loader_registers_a_rule_on_the_first_lookup_after_an_import(
        lazy_loader, forget):
    import sys

    def double(x):
        return 2 * x

    recorded_whole(double)
    forget(double)
    calls = []

    def loader():
        calls.append(len(sys.modules))
        if "_chainrules_test_library" in sys.modules and double not in rrule._rules:
            rrule.register(double)(lambda x: (2 * x, lambda dy: (NoTangent(), 2 * dy)))

    lazy_loader(loader)
    assert rrule.lookup(double) is None and len(calls) == 1  # ran once: no rule yet
    assert rrule.lookup(double) is None and len(calls) == 1  # nothing imported: not again
    try:
        _new_module_imported("_chainrules_test_library")
        y, pullback = rrule(double, 3.0)  # the miss runs the loader, which registers it
        assert (y, pullback(1.0)) == (6.0, (NoTangent(), 2.0))
        assert len(calls) == 2
        rrule(double, 1.0)  # a hit never runs the loaders
        assert len(calls) == 2
    finally:
        del sys.modules["_chainrules_test_library"]


def test_a_lazy_loader_is_not_run_again_by_its_own_imports_and_lookups(lazy_loader):
    import sys

    depth = []

    def loader():
        depth.append(1)
        assert len(depth) == 1, "the loader was re-entered"
        try:
            _new_module_imported(f"_chainrules_test_nested_{len(sys.modules)}")
            assert rrule.lookup(object()) is None  # a miss inside a loader: no recursion
        finally:
            depth.pop()

    lazy_loader(loader)
    before = set(sys.modules)
    try:
        assert rrule.lookup(object()) is None
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
