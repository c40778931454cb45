"""Rules for ``scipy.sparse``: `products` (a sparse matrix times a dense array, ``A @ x``,
where the matrix is a constant: its entries are never traced values) and `linalg`
(``scipy.sparse.linalg.spsolve`` and ``expm_multiply`` in their dense right-hand side).
"""
