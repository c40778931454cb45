"""Rules for ``scipy.special``'s orthogonal polynomials, ``eval_*(n, ..., x)``, in ``x``: each
derivative is a polynomial of the same families one degree lower, so the rules differentiate
again through each other (order 2 and beyond).

- Jacobi: ``d/dx P_n^(a,b) = (n + a + b + 1)/2 P_{n-1}^(a+1,b+1)``; Legendre is ``a = b = 0``
  (and the shifted Legendre at ``2x - 1``);
- Gegenbauer: ``d/dx C_n^(a) = 2a C_{n-1}^(a+1)``; Chebyshev U is ``C^(1)``, and
  ``d/dx T_n = n U_{n-1}``; ``chebyc``, ``chebys`` and the shifted forms at ``x/2``, ``2x - 1``;
- Hermite: ``d/dx H_n = 2n H_{n-1}`` (``He``: ``n He_{n-1}``);
- Laguerre: ``d/dx L_n^(a) = -L_{n-1}^(a+1)``;
- the associated Legendre functions ``lpmv(m, v, x)``: ``(x^2 - 1) dP/dx = v x P_v^m -
  (v + m) P_{v-1}^m``, inside ``(-1, 1)``.

The identities hold for a non-integer degree too (SciPy's hypergeometric forms), and at
``n = 0`` (SciPy's degree -1 polynomials are 0; Hermite's degree is kept at 0 there). The
degree and the parameters have no derivative here: a traced float one is refused by name.

>>> import numpy as np, scipy.special as sps
>>> from chainrules import frule, NoTangent
>>> frule((NoTangent(), NoTangent(), 1.0), sps.eval_legendre, 2, 0.5)[1]  # P_2' = 3x
np.float64(1.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sps

from ...refused_arguments import scalar_rule_refusing

__all__: list[str] = []

_WHY = "no closed form (a hypergeometric series in it)"


def _lower(n: Any) -> Any:
    """Hermite's degree less one, kept at 0 (SciPy takes integer degrees >= 0 only, and the
    derivative at ``n = 0`` is 0 times it)."""
    return np.maximum(np.asarray(n) - 1, 0).astype(np.int_)


def _refusing(f: Any, parameters: tuple, dx: Any) -> None:
    """Register ``f(*parameters, x)``: its derivative in ``x`` and the parameters refused."""
    name = f"scipy.special.{f.__name__}"
    scalar_rule_refusing(f, name, (None,) * len(parameters) + (dx,),
                         {i: (parameter, _WHY) for i, parameter in enumerate(parameters)})


_refusing(sps.eval_jacobi, ("n", "alpha", "beta"), lambda y, n, a, b, x:
          (n + a + b + 1) / 2 * sps.eval_jacobi(n - 1, a + 1, b + 1, x))
_refusing(sps.eval_legendre, ("n",), lambda y, n, x:
          (n + 1) / 2 * sps.eval_jacobi(n - 1, 1.0, 1.0, x))
_refusing(sps.eval_sh_legendre, ("n",), lambda y, n, x:
          (n + 1) * sps.eval_jacobi(n - 1, 1.0, 1.0, 2 * x - 1))
_refusing(sps.eval_gegenbauer, ("n", "alpha"), lambda y, n, a, x:
          2 * a * sps.eval_gegenbauer(n - 1, a + 1, x))
_refusing(sps.eval_chebyt, ("n",), lambda y, n, x: n * sps.eval_chebyu(n - 1, x))
_refusing(sps.eval_chebyu, ("n",), lambda y, n, x: 2 * sps.eval_gegenbauer(n - 1, 2.0, x))
_refusing(sps.eval_chebyc, ("n",), lambda y, n, x: n * sps.eval_chebyu(n - 1, x / 2))
_refusing(sps.eval_chebys, ("n",), lambda y, n, x: sps.eval_gegenbauer(n - 1, 2.0, x / 2))
_refusing(sps.eval_sh_chebyt, ("n",), lambda y, n, x: 2 * n * sps.eval_chebyu(n - 1, 2 * x - 1))
_refusing(sps.eval_sh_chebyu, ("n",), lambda y, n, x:
          4 * sps.eval_gegenbauer(n - 1, 2.0, 2 * x - 1))
_refusing(sps.eval_hermite, ("n",), lambda y, n, x: 2 * n * sps.eval_hermite(_lower(n), x))
_refusing(sps.eval_hermitenorm, ("n",), lambda y, n, x: n * sps.eval_hermitenorm(_lower(n), x))
# associated Legendre functions: (x^2 - 1) dP_v^m/dx = v x P_v^m - (v + m) P_{v-1}^m (SciPy's
# phase in both), for |x| < 1
_refusing(sps.lpmv, ("m", "v"), lambda y, m, v, x:
          (v * x * y - (v + m) * sps.lpmv(m, v - 1, x)) / (x * x - 1))
_refusing(sps.eval_laguerre, ("n",), lambda y, n, x: -sps.eval_genlaguerre(n - 1, 1.0, x))
_refusing(sps.eval_genlaguerre, ("n", "alpha"), lambda y, n, a, x:
          -sps.eval_genlaguerre(n - 1, a + 1, x))
