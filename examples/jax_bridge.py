"""chainrules' rules inside JAX: any function with an rrule becomes a ``jax.custom_vjp``
function whose value and pullback run on the host through ``jax.pure_callback``, so JAX
programs (jitted or not) can call NumPy and SciPy functions and still get gradients.

    >>> import jax, jax.numpy as jnp, scipy.special
    >>> jax.config.update("jax_enable_x64", True)
    >>> gammaln = as_jax(scipy.special.gammaln)
    >>> jax.grad(lambda x: jnp.sum(gammaln(x)))(jnp.array([1.5, 3.0]))    # digamma(x)
    Array([0.03648997, 0.92278434], dtype=float64)

The contract it relies on is docs/engine-authors.md's, as in examples/torch_bridge.py: one
cotangent per positional argument, zeros as ``ZeroTangent``/``NoTangent``, refused
derivatives as ``NotImplementedCotangent``. JAX arrays are immutable, so aliasing between
cotangents cannot matter here; the callback copies each into a new array anyway.

Run it with ``python examples/jax_bridge.py`` (JAX installed): it checks a few rules with
``jax.test_util.check_grads``.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from chainrules import NotImplementedCotangent, rrule, unthunk
from chainrules.core import AbstractZero


def as_jax(function: Callable, **constants: Any) -> Callable:
    """``function`` (anything with an rrule) as a function of JAX arrays that JAX can
    differentiate in reverse mode; ``constants`` are keyword arguments held fixed."""

    def host_value(*args: np.ndarray) -> np.ndarray:
        return np.asarray(rrule.with_constants(function, *args, **constants)[0])

    def host_cotangents(dy: np.ndarray, *args: np.ndarray) -> tuple:
        cotangents = rrule.with_constants(function, *args, **constants)[1](np.asarray(dy))[1:]
        out = []
        for arg, cotangent in zip(args, cotangents):
            if isinstance(cotangent, NotImplementedCotangent):
                raise NotImplementedError(cotangent.message)
            value = (np.zeros_like(arg) if isinstance(cotangent, AbstractZero)
                     else np.array(unthunk(cotangent), dtype=arg.dtype))
            out.append(np.broadcast_to(value, np.shape(arg)).copy())
        return tuple(out)

    def shape_of(*args: Any) -> jax.ShapeDtypeStruct:
        """The output's shape, from a call at stand-in values (under jit the arguments have
        none): positive, unequal numbers, valid for most functions' domains."""
        rng = np.random.default_rng(0)
        host = [rng.uniform(0.5, 1.5, np.shape(a)).astype(a.dtype) for a in args]
        return jax.ShapeDtypeStruct(np.shape(host_value(*host)), jnp.result_type(*args))

    @jax.custom_vjp
    def call(*args: Any) -> jax.Array:
        return jax.pure_callback(host_value, shape_of(*args), *args)

    def forward(*args: Any) -> tuple:
        return call(*args), args

    def backward(args: tuple, dy: jax.Array) -> tuple:
        shapes = tuple(jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args)
        return jax.pure_callback(host_cotangents, shapes, dy, *args)

    call.defvjp(forward, backward)
    return call


def main() -> None:
    import operator

    import scipy.special
    import scipy.stats
    from jax.test_util import check_grads

    jax.config.update("jax_enable_x64", True)
    x = jnp.array([0.3, -1.2, 0.8])
    checks = {
        "np.sin": (as_jax(np.sin), (x,)),
        "np.add (one array for both cotangents)": (as_jax(np.add), (x, x * 2)),
        "operator.mul": (as_jax(operator.mul), (x, jnp.array([0.5, 2.0, -1.0]))),
        "scipy.special.gammaln": (as_jax(scipy.special.gammaln), (jnp.abs(x) + 1.0,)),
        "scipy.stats.norm.logpdf": (as_jax(scipy.stats.norm.logpdf),
                                    (x, jnp.array(0.5), jnp.array(2.0))),
        "np.sum(axis=0)": (as_jax(np.sum, axis=0), (jnp.ones((3, 2)) * 0.7,)),
        "np.linalg.solve": (as_jax(np.linalg.solve), (jnp.eye(3) + 0.5, x)),
    }
    for name, (function, args) in checks.items():
        check_grads(function, args, order=1, modes=["rev"])
        print(f"check_grads passed: {name}")
    jitted = jax.jit(jax.grad(lambda x: jnp.sum(as_jax(np.tanh)(x))))
    assert np.allclose(jitted(x), 1 - np.tanh(np.asarray(x)) ** 2)
    print("jit(grad) passed: np.tanh")


if __name__ == "__main__":
    main()
