"""chainrules._compat: the signatures given to NumPy functions that have none on older releases
are the ones newer releases give them, and every function with a rule has a signature."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from chainrules._compat import _STAND_INS, _ufunc_signature, signature
from chainrules.core import frule, rrule

UFUNCS = sorted({f for f in vars(np).values() if isinstance(f, np.ufunc)}, key=lambda f: f.__name__)


def _own_signatures(functions) -> dict:
    """The signatures that the installed NumPy gives ``functions`` (those it gives one)."""
    own = {}
    for f in functions:
        try:
            own[f] = inspect.signature(f)
        except ValueError:
            pass
    if not own:
        pytest.skip(f"NumPy {np.__version__} gives none of them a signature to compare with")
    return own


def _parameters(signature: inspect.Signature) -> list:
    # NumPy 2.4's np.array also takes ndmax=, which no rule reads.
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()
            if p.name != "ndmax"]


def test_a_ufunc_gets_the_signature_numpy_gives_it():
    own = _own_signatures(UFUNCS)
    assert {f.__name__: str(_ufunc_signature(f)) for f in own} == \
        {f.__name__: str(signature) for f, signature in own.items()}


def test_a_c_function_gets_the_signature_numpy_gives_it():
    stand_ins = dict(_STAND_INS)
    own = _own_signatures(stand_ins)
    assert {f.__name__: _parameters(inspect.signature(stand_ins[f])) for f in own} == \
        {f.__name__: _parameters(signature) for f, signature in own.items()}


def test_every_function_with_a_rule_has_a_signature():
    import chainrules.rules.scipy.special.elementary  # noqa: F401  (its rules too)

    for f in {*rrule.functions(), *frule.functions()}:
        assert isinstance(signature(f), inspect.Signature), f


def test_binding_a_ufunc_call_is_the_same_on_every_release():
    bound = signature(np.add).bind(1.0, 2.0, where=True)
    assert bound.args == (1.0, 2.0) and bound.kwargs == {"where": True}
    with pytest.raises(TypeError):
        signature(np.add).bind(x1=1.0, x2=2.0)  # positional only
