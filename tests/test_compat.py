"""chainrules._compat: the signatures given to NumPy functions that have none on older releases
are the ones newer releases give them, and every function with a rule has a signature."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from chainrules._compat import _STAND_INS, _ufunc_signature, signature
from chainrules.core import frule, rrule

UFUNCS = sorted({f for f in vars(np).values() if isinstance(f, np.ufunc)}, key=lambda f: f.__name__)


def _own_signature(f):
    try:
        return inspect.signature(f)
    except ValueError:
        pytest.skip(f"NumPy {np.__version__} gives {f.__name__} no signature to compare with")


@pytest.mark.parametrize("f", UFUNCS, ids=lambda f: f.__name__)
def test_a_ufunc_gets_the_signature_numpy_gives_it(f):
    assert str(_ufunc_signature(f)) == str(_own_signature(f))


@pytest.mark.parametrize("real, stand_in", _STAND_INS, ids=lambda f: f.__name__)
def test_a_c_function_gets_the_signature_numpy_gives_it(real, stand_in):
    own = _own_signature(real).parameters
    ours = inspect.signature(stand_in).parameters
    # NumPy 2.4's np.array also takes ndmax=, which no rule reads.
    assert [(p.name, p.kind, p.default) for p in ours.values()] == \
        [(p.name, p.kind, p.default) for p in own.values() if p.name != "ndmax"]


def test_every_function_with_a_rule_has_a_signature():
    import chainrules.rules.scipy  # noqa: F401  (its rules too)

    for f in {*rrule.functions(), *frule.functions()}:
        assert isinstance(signature(f), inspect.Signature), f


def test_binding_a_ufunc_call_is_the_same_on_every_release():
    bound = signature(np.add).bind(1.0, 2.0, where=True)
    assert bound.args == (1.0, 2.0) and bound.kwargs == {"where": True}
    with pytest.raises(TypeError):
        signature(np.add).bind(x1=1.0, x2=2.0)  # positional only
