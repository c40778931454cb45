"""NumPy's whole public namespace, classified: every public callable of ``numpy``,
``numpy.linalg``, ``numpy.fft`` and every ndarray method and operator is differentiable (a
registered rule), declared non-differentiable, excluded with a reason, or listed as
differentiable without a rule yet, with the reason (chainrules.coverage's tables). A public
callable that a new NumPy release adds fails here, named, with how to classify it."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import coverage
from chainrules.coverage import EXCLUDED, NO_RULE_YET, classify, namespace_walk, resolve

# ---- Rules that other branches of issue 13 add (rules13a, rules13b). ---------------------------
# ---- The lead deletes this table when merging them; until then these names count as missing. ---
CASES: list = []  # no rules of its own (tests/rules/test_coverage.py reads every CASES list)

_HOW = ("Classify it: register its rule (chainrules.rules; add a kit case), declare it with "
        "chainrules.non_differentiable (chainrules.rules.numpy.non_differentiable) if its outputs do not "
        "depend differentiably on its inputs, or add it with a reason to EXCLUDED or "
        "NO_RULE_YET in src/chainrules/coverage.py.")


def _unclassified(walk: dict) -> list[str]:
    return [f"{name} ({namespace}{': ' + detail if detail else ''})"
            for namespace, entries in walk.items()
            for name, (status, detail) in entries.items()
            if status == "unclassified"]


@pytest.fixture(scope="module")
def walk():
    return namespace_walk()


def test_every_public_callable_is_classified(walk):
    unclassified = _unclassified(walk)
    assert not unclassified, (f"{len(unclassified)} public NumPy {np.__version__} callables "
                              f"are not classified: {', '.join(unclassified)}.\n{_HOW}")


def test_the_walk_sees_every_namespace(walk):
    assert set(walk) == set(coverage.NAMESPACES)
    assert walk["numpy"]["np.sum"] == ("differentiable", "")
    assert walk["numpy"]["np.all"] == ("declared", "")
    assert walk["numpy"]["np.save"][0] == "excluded"
    assert walk["numpy"]["np.float32"][0] == "excluded"
    assert walk["numpy.linalg"]["np.linalg.solve"][0] == "differentiable"
    assert walk["numpy.fft"]["np.fft.rfft"][0] == "differentiable"
    assert walk["ndarray methods"]["ndarray.cumsum"] == ("differentiable", "routes to np.cumsum")
    assert walk["ndarray methods"]["ndarray.fill"][0] == "excluded"
    assert walk["ndarray operators"]["ndarray.__rmatmul__"][0] == "differentiable"
    assert walk["ndarray operators"]["ndarray.__lt__"][0] == "declared"
    assert "ndarray.__repr__" not in walk["ndarray operators"]


def test_a_new_numpy_function_fails_the_walk_naming_it(monkeypatch):
    def brand_new_function(x):
        return x

    monkeypatch.setattr(np, "brand_new_function", brand_new_function, raising=False)
    assert classify("np.brand_new_function", brand_new_function) == ("unclassified", "")
    assert "np.brand_new_function (numpy)" in _unclassified(namespace_walk())


def test_the_tables_are_not_stale():
    """A table entry that now has a rule or a declaration must leave the table."""
    import chainrules.rules  # noqa: F401  (registers the rules)
    from chainrules.core.registry import NON_DIFFERENTIABLE, rrule

    stale = [f"{name} ({table})" for table, names in (("EXCLUDED", EXCLUDED),
                                                      ("NO_RULE_YET", NO_RULE_YET))
             for name in names if (f := resolve(name)) is not None
             and (f in rrule or f in NON_DIFFERENTIABLE)]
    assert not stale, f"remove these entries, which now have a rule: {', '.join(stale)}"
    assert not set(EXCLUDED) & set(NO_RULE_YET)


def test_the_no_rule_yet_table_is_short():
    assert len(NO_RULE_YET) <= 60


def test_plain_functions_listed_as_traced_through_are_differentiated():
    """np.fft.fftfreq(n, d) = k / (n d) and np.fromfunction's function are traced: checked
    against closed forms."""
    n, d = 6, 0.5
    k = np.fft.fftfreq(n) * n  # the integer frequencies
    np.testing.assert_allclose(cr.grad(lambda d: np.sum(np.fft.fftfreq(n, d) ** 2))(d),
                               -2 * np.sum(k ** 2) / (n ** 2 * d ** 3))
    kr = np.arange(n // 2 + 1)
    np.testing.assert_allclose(cr.grad(lambda d: np.sum(np.fft.rfftfreq(n, d)))(d),
                               -np.sum(kr) / (n * d ** 2))
    np.testing.assert_allclose(
        cr.grad(lambda a: np.sum(np.fromfunction(lambda i, j: a * i + j, (3, 2))))(1.5),
        np.sum(np.indices((3, 2))[0]))


def test_coverage_report_prints_the_counts(capsys):
    assert coverage.main(["--namespaces"]) == 0
    out = capsys.readouterr().out
    for namespace in coverage.NAMESPACES:
        assert namespace in out
    assert "differentiable" in out and "declared" in out and "excluded" in out
