"""``scipy.spatial.transform``'s ``Rotation`` and ``RigidTransform`` while tracing (SciPy 1.16
and later, which compute them either in compiled code or in array-API operations): a call of
the compiled backend whose arguments hold traced values (angles, quaternions, rotation
vectors, matrices, the vectors a rotation applies to, a rotation made from traced values)
runs the array-API backend's function of the same name instead, which is written in NumPy
operations and so traced (the arrays it makes are followed: `writes.FOLLOWED`). Calls on plain
values keep the compiled backend. Older SciPy releases compile ``Rotation`` as one class, which
cannot take traced values: a traced value reaching it raises, naming the line.

>>> import numpy as np, chainrules as cr, pytest
>>> _ = pytest.importorskip("scipy.spatial.transform._rotation_xp")   # SciPy 1.16+
>>> from scipy.spatial.transform import Rotation
>>> angle = cr.grad(lambda t: Rotation.from_rotvec([0.0, 0.0, t]).apply([1.0, 0.0, 0.0])[1])
>>> round(float(angle(0.0)), 12)   # d sin(t)/dt at 0
1.0
"""

from __future__ import annotations

from typing import Any

from ..trace.values import holds_traced
from .routes import Swap, loaded_module

__all__ = ["swaps"]

# (compiled backend, array-API backend): modules of SciPy 1.16 and later
_BACKENDS = (("scipy.spatial.transform._rotation_cy", "scipy.spatial.transform._rotation_xp"),
             ("scipy.spatial.transform._rigid_transform_cy",
              "scipy.spatial.transform._rigid_transform_xp"))


def _either(compiled: Any, array_api: Any) -> Any:
    """``compiled``, or ``array_api`` when an argument holds a traced value."""
    def either(*args: Any, **kwargs: Any) -> Any:
        if any(holds_traced(a) for a in args) or any(holds_traced(v) for v in
                                                     kwargs.values()):
            return array_api(*args, **kwargs)
        return compiled(*args, **kwargs)

    either.__wrapped__ = compiled
    return either


_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.spatial.transform`` is
    imported: each function of a compiled backend that its array-API backend also has."""
    if _made:
        return _made
    for compiled_name, array_api_name in _BACKENDS:
        compiled, array_api = loaded_module(compiled_name), loaded_module(array_api_name)
        if compiled is None or array_api is None:
            return []
        for name, function in vars(compiled).items():
            twin = getattr(array_api, name, None)
            if not name.startswith("_") and callable(function) and callable(twin) and \
                    not isinstance(function, type):
                _made.append(Swap(compiled, name, _either(function, twin), function))
    return _made
