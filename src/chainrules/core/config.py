"""RuleConfig: what the AD system running a rule can do, and the way back into it.

Higher-order rules (``vectorize``, ``apply_along_axis``, solvers taking a user function) need
the derivative of a function they were given. They ask the config: ``rrule_via_ad(config, f,
*args)`` differentiates ``f`` with whichever engine is running the rule.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["RuleConfig", "rrule_via_ad", "frule_via_ad"]


class RuleConfig:
    """The capabilities of an AD system, passed to rules that ask for it.

    The base config has no AD of its own: ``rrule_via_ad`` uses a registered rule or fails
    with an error saying so. Engines subclass it and set ``has_reverse_mode`` /
    ``has_forward_mode``.

    >>> import numpy as np
    >>> y, pullback = rrule_via_ad(RuleConfig(), np.sin, np.float64(0.0))
    >>> y, pullback(1.0)[1]
    (np.float64(0.0), np.float64(1.0))
    """

    has_reverse_mode: bool = False
    has_forward_mode: bool = False

    def rrule_via_ad(self, f: Callable, *args: Any, **kwargs: Any):
        """``(y, pullback)`` for ``f(*args, **kwargs)``, by a rule or by this config's AD."""
        from .registry import rrule

        result = rrule(self, f, *args, **kwargs)
        if result is None:
            raise NotImplementedError(
                f"rrule_via_ad: no rule for {_name(f)} and {type(self).__name__} has no "
                f"reverse-mode AD. Run this under chainrules.grad/vjp (whose config "
                f"differentiates any Python function), or register a rule for {_name(f)}.")
        return result

    def frule_via_ad(self, tangents: tuple, f: Callable, *args: Any, **kwargs: Any):
        """``(y, dy)`` for ``f(*args, **kwargs)`` with input tangents ``tangents``.

        Uses ``f``'s frule; without one, derives ``dy`` from reverse mode (``rrule_via_ad``),
        one pullback per real output component: fine for the small outputs of the functions
        that higher-order rules call per element, row or piece.
        """
        from .registry import frule

        result = frule(self, tangents, f, *args, **kwargs)
        if result is not None:
            return result
        try:
            y, pullback = self.rrule_via_ad(f, *args, **kwargs)
        except NotImplementedError:
            raise NotImplementedError(
                f"frule_via_ad: no forward rule for {_name(f)}, and no reverse rule to derive "
                f"one from. Register an frule for {_name(f)}.") from None
        return y, _pushforward_by_pullbacks(y, pullback, tangents)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _name(f: Any) -> str:
    module = getattr(f, "__module__", None)
    if module is None and type(f).__module__ == "numpy":  # NumPy 1's ufuncs have no module
        module = "numpy"
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return f"{module}.{name}" if module and module not in ("builtins",) else name


def _real_inner(cotangent: Any, tangent: Any) -> float:
    """``Re <cotangent, tangent>``, summed over the fields of structural tangents."""
    import numpy as np

    from .tangents import AbstractZero, Tangent
    from .thunks import unthunk

    cotangent, tangent = unthunk(cotangent), unthunk(tangent)
    if isinstance(cotangent, AbstractZero) or isinstance(tangent, AbstractZero):
        return 0.0
    if isinstance(cotangent, Tangent):
        fields = tangent if isinstance(tangent, Tangent) else None
        return sum(_real_inner(value, fields[key] if fields is not None else tangent[key])
                   for key, value in cotangent.items())
    if isinstance(cotangent, (tuple, list)):
        if isinstance(tangent, Tangent):  # fields by position; missing ones are zero
            return sum(_real_inner(c, tangent[i]) for i, c in enumerate(cotangent))
        return sum(_real_inner(c, t) for c, t in zip(cotangent, tangent))
    if isinstance(cotangent, dict):
        return sum(_real_inner(value, tangent[key] if isinstance(tangent, Tangent) else
                               tangent.get(key, 0.0)) for key, value in cotangent.items())
    # no float(): inside an outer trace (order 2) the product is a traced value
    return np.real(np.vdot(np.asarray(cotangent), np.asarray(tangent)))


def _pushforward_by_pullbacks(y: Any, pullback: Callable, tangents: tuple) -> Any:
    """``J dx`` for a numeric output ``y``, from ``J^H dy`` for each real output direction:
    ``Re dy_k = Re <J^H e_k, dx>`` and ``Im dy_k = Re <J^H (i e_k), dx>``."""
    import numpy as np

    values = np.asarray(y)
    complex_output = values.dtype.kind == "c"
    dtype = values.dtype if values.dtype.kind in "fc" else np.dtype(float)
    parts: list = []
    for index in np.ndindex(values.shape):
        part: Any = 0.0
        for unit in ((1.0, 1j) if complex_output else (1.0,)):
            seed = np.zeros(values.shape, dtype)
            seed[index] = unit
            cotangents = pullback(seed if values.ndim else seed[()])
            part = part + unit * sum(_real_inner(c, t) for c, t in zip(cotangents, tangents))
        parts.append(part)
    if all(issubclass(type(part), (float, complex, np.number)) for part in parts):
        dy = np.array(parts, dtype).reshape(values.shape)
    else:  # traced parts (the pushforward differentiated again): stacked, no writes
        dy = np.reshape(np.stack(parts), values.shape)
    return dy if values.ndim else dy[()]


DEFAULT_CONFIG = RuleConfig()


def rrule_via_ad(config: RuleConfig, f: Callable, *args: Any, **kwargs: Any):
    """Differentiate ``f`` in reverse mode with the AD system behind ``config``."""
    return config.rrule_via_ad(f, *args, **kwargs)


def frule_via_ad(config: RuleConfig, tangents: tuple, f: Callable, *args: Any, **kwargs: Any):
    """Differentiate ``f`` in forward mode with the AD system behind ``config``."""
    return config.frule_via_ad(tangents, f, *args, **kwargs)
