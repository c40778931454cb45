"""Rules for ``scipy.special``: `elementary` (log-gamma family, ``erf``, ``expit``, ``xlogy``,
``logsumexp``, ``softmax``), `gamma` (error-function, normal, gamma, beta and zeta families),
`bessel`, `other_functions` (exponential integrals, divergences, Box-Cox, elliptic integrals,
...) and `parameters` (derivatives in parameters without a closed form: ``gammainc`` in ``a``,
``betainc`` in ``a`` and ``b``, ``zeta`` in ``x``).
"""
