"""Every SciPy function that chainrules differentiates works however the program imported it:
``from scipy.special import logsumexp`` before ``import chainrules``, the same after it, and
the module attribute ``scipy.special.logsumexp``; for distributions, a bound method taken
before (``logpdf = scipy.stats.norm.logpdf``) and the method looked up at the call
(ad/dispatch/routing.py: a Python function's code is rerouted in place while a trace is active;
ufuncs dispatch by themselves).

The check runs in a fresh interpreter, so that the from-imports really come before chainrules
is imported. For each function it takes the cheapest kit case of the rule tests and compares
the gradient of a fixed random linear functional of the output, through each reference, with
a central finite difference along a random direction.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chainrules.coverage import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
SCIPY_NAMES = CATEGORIES["scipy (optional)"]

_SCRIPT = r'''
import importlib, json, sys, warnings
names = json.loads(sys.argv[1])


def resolve(name):
    """``scipy.special.logsumexp`` -> the function; ``scipy.stats.norm.logpdf`` -> the bound
    method of the distribution object (the module is the longest importable prefix)."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(name)


before = {}
for name in names:  # `from scipy.x import name` (a bound method: `lp = norm.logpdf`), first
    try:
        before[name] = resolve(name)
    except (ImportError, AttributeError):
        pass

import numpy as np
import chainrules as cr
from chainrules.core.structure import leaves
from chainrules.core.registry import NON_DIFFERENTIABLE
from chainrules.testing import perturbable_leaves
from tests.rules.all_cases import cases_by_function, double_precision

from chainrules.coverage import resolve as registered

cases = cases_by_function()
after = {name: resolve(name) for name in before}
results = {}


def directional_check(name, call, c):
    """The gradient of <w, call(*args)> along v, by chainrules and by finite differences."""
    rng = np.random.default_rng(0)
    paths = [leaf.path for leaf in perturbable_leaves(c.args)]
    values = [leaf.value for leaf in perturbable_leaves(c.args)]

    weights = {}

    def loss(*new):
        out = call(*_substitute(c.args, dict(zip(paths, new))), **c.fkwargs)
        total = 0.0
        for index, (_, leaf) in enumerate(leaves(out, lambda v: hasattr(v, "dtype") or
                                                  isinstance(v, (float, complex)))):
            if np.result_type(getattr(leaf, "dtype", type(leaf))).kind not in "fc":
                continue
            w = weights.setdefault(index, rng.standard_normal(np.shape(leaf)))
            total = total + np.sum(np.real(leaf * w))
        return total

    gradient = cr.grad(loss, argnums=tuple(range(len(values))))(*values)
    direction = [rng.standard_normal(np.shape(v)) + (1j * rng.standard_normal(np.shape(v))
                 if np.iscomplexobj(v) else 0) for v in values]
    if name.split(".")[2] in ("dirichlet", "multinomial"):  # stay on the simplex SciPy checks
        direction = [d - np.mean(d, axis=-1, keepdims=True) if np.ndim(d) else d
                     for d in direction]
    # the gradient of a real loss of complex z is dL/dRe z + i dL/dIm z: the slope is Re<g, d>
    slope = sum(float(np.real(np.vdot(g, d))) for g, d in zip(gradient, direction))
    h = 1e-6
    plus = loss(*[v + h * d for v, d in zip(values, direction)])
    minus = loss(*[v - h * d for v, d in zip(values, direction)])
    estimate = float(plus - minus) / (2 * h)
    if not np.isclose(slope, estimate, rtol=1e-4, atol=1e-6):
        return f"gradient {slope} != finite difference {estimate}"
    return "ok"


def _substitute(args, table):
    def walk(value, path):
        if path in table:
            return table[path]
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(walk(v, path + (i,)) for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: walk(v, path + (k,)) for k, v in value.items()}
        return value
    return tuple(walk(a, (i,)) for i, a in enumerate(args))


for name in before:
    function = registered(name)  # a distribution method's rule is its stand-in's
    usable = [c for c in cases.get(function, []) if double_precision(c)]
    if not usable:
        results[name] = ("declared non-differentiable" if function in NON_DIFFERENTIABLE
                         else "no direct float64 case")
        continue
    c = usable[0]
    styles = {
        "from-import before chainrules": before[name],
        "from-import after chainrules": after[name],
    }
    outcome = {}
    for style, reference in styles.items():
        try:
            outcome[style] = directional_check(name, reference, c)
        except Exception as error:
            outcome[style] = f"{type(error).__name__}: {str(error)[:300]}"
    try:
        outcome["module attribute"] = directional_check(
            name, lambda *a, **k: resolve(name)(*a, **k), c)
    except Exception as error:
        outcome["module attribute"] = f"{type(error).__name__}: {str(error)[:300]}"
    results[name] = outcome
print(json.dumps(results))
'''


@pytest.fixture(scope="module")
def outcomes() -> dict:
    pytest.importorskip("scipy")
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(SCIPY_NAMES)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", SCIPY_NAMES)
def test_every_import_style_reaches_the_rule(outcomes, name):
    if name not in outcomes:
        pytest.skip(f"{name} is not in the installed SciPy")
    outcome = outcomes[name]
    if isinstance(outcome, str):
        pytest.skip(f"{name}: {outcome}")
    assert outcome == {style: "ok" for style in outcome}, outcome


# NumPy's creation functions written in Python are rerouted in place too: arrays made by
# `from numpy import ones` (imported at the top of this module, before any trace) take writes.
from numpy import eye as imported_eye, full as imported_full  # noqa: E402
from numpy import identity as imported_identity, ones as imported_ones  # noqa: E402


def test_from_imported_numpy_creation_functions_make_writable_arrays():
    import chainrules as cr

    def f(x):
        a = imported_ones(3)
        a[1] = x[0] ** 2
        b = imported_eye(2)
        b[0, 1] = x[1]
        c = imported_full(2, 0.0)
        c[0] = x[2]
        d = imported_identity(2)
        d[1, 1] = x[0] * x[2]
        return np.sum(a) + np.sum(b * b) + np.sum(c) + np.sum(d)

    x = np.array([1.0, 2.0, 3.0])
    # closed form: d/dx0 (x0^2 + x0 x2) = 2 x0 + x2; d/dx1 x1^2 = 2 x1; d/dx2 (x2 + x0 x2)
    np.testing.assert_allclose(cr.grad(f)(x), [2 * 1 + 3, 2 * 2, 1 + 1], rtol=1e-14)
    np.testing.assert_allclose(cr.hessian(f)(x), [[2, 0, 1], [0, 2, 0], [1, 0, 0]], atol=1e-14)


def test_compiled_extensions_never_see_traced_constants():
    """numpy.random's Cython code casts what np.empty returns to an ndarray without a check: it
    must see NumPy's own function while a trace is active (this crashed the interpreter)."""
    import chainrules as cr

    rng = np.random.default_rng(0)
    noise = np.random.default_rng(0).standard_normal(3)
    gradient = cr.grad(lambda x: np.sum(x * rng.standard_normal(3)))(np.ones(3))
    np.testing.assert_array_equal(gradient, noise)


def test_rerouting_leaves_functions_as_they_were():
    scipy_special = pytest.importorskip("scipy.special")
    import inspect

    import chainrules as cr

    logsumexp = scipy_special.logsumexp
    code, defaults, signature = logsumexp.__code__, logsumexp.__defaults__, \
        inspect.signature(logsumexp)
    seen = []

    def f(x):
        seen.append(inspect.signature(logsumexp))
        return logsumexp(x)

    x = np.array([0.1, 0.5, -0.3])
    np.testing.assert_allclose(cr.grad(f)(x), np.exp(x) / np.sum(np.exp(x)), rtol=1e-13)
    assert seen == [signature]  # inspect.signature reads the original during the trace
    assert logsumexp.__code__ is code and logsumexp.__defaults__ == defaults
    assert "__signature__" not in vars(logsumexp)


# --- SciPy imported after chainrules (its rules are registered lazily) ----------------------

def _run_fresh(script: str) -> dict:
    """Run ``script`` in a fresh interpreter that has not imported SciPy; its last line of
    output, JSON."""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_CHECKS = r'''
def checks(sps, st):
    """Gradients through SciPy, against closed forms (digamma from SciPy, not chainrules)."""
    x = np.array([0.7, 1.9, 3.2])
    got = {}
    got["logsumexp"] = (cr.grad(lambda v: sps.logsumexp(v))(x),
                        np.exp(x) / np.sum(np.exp(x)))
    got["gammaln"] = (cr.grad(lambda v: np.sum(sps.gammaln(v)))(x), sps.digamma(x))
    got["gammaln jvp"] = (cr.jvp(sps.gammaln, (x,), (np.ones(3),))[1], sps.digamma(x))
    got["rrule gammaln"] = (cr.rrule(sps.gammaln, x)[1](np.ones(3))[1], sps.digamma(x))
    got["norm.logpdf"] = (cr.grad(lambda v: np.sum(st.norm.logpdf(v, loc=0.5, scale=2.0)))(x),
                          -(x - 0.5) / 4.0)
    logpdf = st.norm.logpdf  # a bound method taken after the import, before the trace
    got["bound logpdf, loc"] = (cr.grad(lambda m: np.sum(logpdf(x, loc=m)))(0.5),
                                np.sum(x - 0.5))
    return {name: bool(np.allclose(a, b, rtol=1e-10, atol=1e-12))
            for name, (a, b) in got.items()}
'''


@pytest.mark.parametrize("first_trace", [False, True], ids=["no trace before", "after a trace"])
def test_scipy_imported_after_chainrules_reaches_the_rules(first_trace):
    pytest.importorskip("scipy")
    outcome = _run_fresh(f'''
import json, sys
import numpy as np
import chainrules as cr
{_CHECKS}
assert not [m for m in sys.modules if m.startswith("scipy")]
if {first_trace}:  # the routing plan is made before SciPy is imported
    assert np.allclose(cr.grad(lambda v: np.sum(v ** 3))(np.ones(2)), 3.0)
import scipy.special as sps
import scipy.stats as st
print(json.dumps(checks(sps, st)))
''')
    assert outcome == {name: True for name in outcome} and len(outcome) == 6, outcome


def test_scipy_imported_inside_the_differentiated_function():
    """The first trace meets SciPy only inside the function: the import itself routes it."""
    pytest.importorskip("scipy")
    outcome = _run_fresh(r'''
import json, sys
import numpy as np
import chainrules as cr
assert np.allclose(cr.grad(lambda v: np.sum(v ** 3))(np.ones(2)), 3.0)
x = np.array([0.7, 1.9, 3.2])


def f(v):
    import scipy.special
    return scipy.special.logsumexp(v) + np.sum(scipy.special.gammaln(v))


def g(v):
    from scipy.stats import norm
    return np.sum(norm.logpdf(v, loc=0.5))


def h(v):  # forward mode
    from scipy.linalg import expm
    return expm(np.diag(v))


def softmax(v):
    return np.exp(v) / np.sum(np.exp(v))


gradient_f = cr.grad(f)(x)  # each import happens in the trace
gradient_g = cr.grad(g)(x)
tangent_h = cr.jvp(h, (x,), (np.ones(3),))[1]
import scipy.special  # for the expected values only
got = {"reverse, scipy.special": bool(np.allclose(
           gradient_f, softmax(x) + scipy.special.digamma(x), rtol=1e-10)),
       "reverse, scipy.stats": bool(np.allclose(gradient_g, -(x - 0.5), rtol=1e-10)),
       "forward, scipy.linalg": bool(np.allclose(tangent_h, np.diag(np.exp(x)), rtol=1e-10))}
print(json.dumps(got))
''')
    assert outcome == {name: True for name in outcome}, outcome
