"""Rules for ``scipy.stats``: `univariate` (continuous and discrete distributions, plain and
frozen, in ``x`` and every parameter) and `multivariate` (``multivariate_normal``,
``dirichlet``, ``multinomial``).
"""
