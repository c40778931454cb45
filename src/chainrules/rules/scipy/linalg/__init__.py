"""Rules for ``scipy.linalg``: `factorizations` (``solve``, ``inv``, ``det``, ``cholesky``,
``eigh``, ``lu``, ``schur``, matrix functions...) and `stacked` (``solve_triangular``,
``expm``, ``cho_solve`` on stacks of matrices).
"""
