"""``scipy.linalg``'s Hermitian band and tridiagonal functions computed from functions that
have rules, for engines to trace: ``cholesky_banded``, ``cho_solve_banded``, ``eig_banded``,
``eigvals_banded``, ``eigh_tridiagonal``, ``eigvalsh_tridiagonal``. SciPy calls LAPACK's band
routines on them (``pbtrf``, ``pbtrs``, ``sbevx``, ``stemr``), which cannot take traced
values.

- ``cholesky_banded``: the band split into blocks of ``m = max(u, 32)`` rows (``u`` the
  bandwidth; the fastest size measured),
  which makes the matrix block tridiagonal; the factor of block ``k`` is the Cholesky factor of
  ``A_kk - C_k C_k^H`` with ``C_k = A_k,k-1 L_k-1^-H``: ``n / m`` steps of ``m x m`` operations,
  O(n m^2) work and O(n / m) recorded operations. The entries of the storage that LAPACK does
  not read (its corner) are SciPy's copies of the input's.
- ``cho_solve_banded``: two ``solve_banded`` calls with the triangular factor.
- The eigenproblems: ``eigh`` of the dense Hermitian (tridiagonal) matrix, O(n^3) (LAPACK's
  tridiagonal solvers take O(n^2) for the eigenvalues), the selected eigenpairs (``select``
  'a', 'i' or 'v') and LAPACK's signs (phases) of the eigenvectors (`band_eigen_phases`, on
  plain values). The eigenvectors of repeated eigenvalues are not unique: only functions that
  do not depend on the choice have gradients that mean anything (as ``eigh``'s).

They hold no rules: while a trace runs, SciPy's function with traced arguments runs the
version here (``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`), whose operations are
recorded by their own rules, at any order.

>>> import numpy as np
>>> cholesky_banded(np.array([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0]]))
array([[0.        , 0.5       , 0.51639778],
       [2.        , 1.93649167, 1.93218357]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["cholesky_banded", "cho_solve_banded", "eig_banded", "eigvals_banded",
           "eigh_tridiagonal", "eigvalsh_tridiagonal", "band_eigen_phases",
           "reference_eigenvectors"]


def _refuse_overwrite(name: str, **options: Any) -> None:
    for option, value in options.items():
        if value:
            raise ValueError(f"scipy.linalg.{name}(..., {option}=True) of traced values: the "
                             f"array cannot be overwritten; pass {option}=False.")


def _lower_entries(ab: Any, lower: bool, rows: np.ndarray, columns: np.ndarray) -> Any:
    """``a[rows, columns]`` of the Hermitian matrix stored in the band ``ab`` (upper or
    ``lower`` form), for ``rows >= columns``; 0 outside the band and the matrix, the diagonal's
    real part (what LAPACK reads)."""
    bands, n = np.shape(ab)[0] - 1, np.shape(ab)[1]
    distance = rows - columns
    inside = (distance >= 0) & (distance <= bands) & (rows < n) & (columns < n)
    if lower:
        band_row, band_column = distance, columns
    else:  # a[i, j] = conj(a[j, i]), stored at ab[u + j - i, i]
        band_row, band_column = bands - distance, rows
    band_row = np.where(inside, band_row, 0)
    band_column = np.where(inside, band_column, 0)
    values = ab[band_row, band_column]
    if np.iscomplexobj(ab):
        values = np.where(distance == 0, np.real(values) + 0j, values)
        if not lower:
            values = np.conj(values)
    return np.where(inside, values, 0)


def _dense(ab: Any, lower: bool) -> Any:
    """The Hermitian matrix stored in the band ``ab``."""
    n = np.shape(ab)[1]
    rows, columns = np.indices((n, n))
    lower_part = _lower_entries(ab, lower, np.maximum(rows, columns),
                                np.minimum(rows, columns))
    if np.iscomplexobj(ab):
        return np.where(rows >= columns, lower_part, np.conj(lower_part))
    return lower_part


# --- Cholesky -----------------------------------------------------------------------------------

def _block_size(bands: int, n: int) -> int:
    return min(n, max(bands, 32))


def cholesky_banded(ab: Any, overwrite_ab: bool = False, lower: bool = False,
                    check_finite: bool = True) -> Any:
    """``scipy.linalg.cholesky_banded``: the Cholesky factor in the same band storage, by
    blocks (see the module's docstring)."""
    _refuse_overwrite("cholesky_banded", overwrite_ab=overwrite_ab)
    ab = np.asarray(ab)
    bands, n = np.shape(ab)[0] - 1, np.shape(ab)[1]
    m = _block_size(bands, n)
    count = -(-n // m)
    block, p, q = np.indices((count, m, m))
    diagonal = _lower_entries(ab, lower, block * m + p, block * m + q)
    padding = (block * m + p >= n) & (p == q)
    diagonal = np.where(padding, 1, diagonal)
    diagonal = np.tril(diagonal) + np.conj(np.swapaxes(np.tril(diagonal, -1), -1, -2))
    below = _lower_entries(ab, lower, block * m + p, (block - 1) * m + q)  # A_k,k-1 (k >= 1)
    factors, couplings = [np.linalg.cholesky(diagonal[0])], [np.zeros_like(diagonal[0])]
    for k in range(1, count):
        # C_k = A_k,k-1 L_k-1^-H: solve L_k-1 C_k^H = A_k,k-1^H
        coupling = np.conj(sla.solve_triangular(factors[-1], np.conj(below[k]).T,
                                                lower=True)).T
        factors.append(np.linalg.cholesky(diagonal[k] - coupling @ np.conj(coupling).T))
        couplings.append(coupling)
    blocks = np.stack([np.stack(factors), np.stack(couplings)])  # (2, count, m, m)
    return _band_of_factor(ab, blocks, m, lower)


def _band_of_factor(ab: Any, blocks: Any, m: int, lower: bool) -> Any:
    """The band storage of the factor whose blocks (diagonal and below) are ``blocks``: ``L``
    in the lower form (``ab[d, j] = L[j + d, j]``), ``U = L^H`` in the upper one
    (``ab[u - d, j] = U[j - d, j] = conj(L[j, j - d])``); ``ab``'s own entries in the corner
    LAPACK does not read."""
    bands, n = np.shape(ab)[0] - 1, np.shape(ab)[1]
    d, j = np.indices((bands + 1, n))
    if lower:
        rows, columns = j + d, j
    else:
        rows, columns = j, j - (bands - d)
    inside = (rows < n) & (columns >= 0)
    rows, columns = np.where(inside, rows, 0), np.where(inside, columns, 0)
    values = blocks[rows // m - columns // m, rows // m, rows % m, columns % m]
    if not lower:
        values = np.conj(values)
    return np.where(inside, values, ab)


def cho_solve_banded(cb_and_lower: Any, b: Any, overwrite_b: bool = False,
                     check_finite: bool = True) -> Any:
    """``scipy.linalg.cho_solve_banded``: ``x`` with ``A x = b`` for ``A``'s factor from
    `cholesky_banded`: ``L y = b``, then ``L^H x = y``, each a ``solve_banded``."""
    _refuse_overwrite("cho_solve_banded", overwrite_b=overwrite_b)
    cb, lower = cb_and_lower
    cb = np.asarray(cb)
    bands, n = np.shape(cb)[0] - 1, np.shape(cb)[1]
    d, j = np.indices((bands + 1, n))
    if lower:  # L's diagonals below: cb[d, j] = L[j + d, j]; L^H's above: L^H[j - d, j]
        inside = j + d < n
        lower_band = np.where(inside, cb, 0)
        upper_band = np.where(j - (bands - d) >= 0, np.conj(
            cb[bands - d, np.maximum(j - (bands - d), 0)]), 0)
    else:  # U's diagonals above: cb[u - d, j] = U[j - d, j]; U^H's below: U^H[j + d, j]
        upper_band = np.where(j - (bands - d) >= 0, cb, 0)
        lower_band = np.where(j + d < n, np.conj(cb[bands - d, np.minimum(j + d, n - 1)]), 0)
    y = sla.solve_banded((bands, 0), lower_band, b)
    return sla.solve_banded((0, bands), upper_band, y)


# --- eigenproblems ------------------------------------------------------------------------------

def _tridiagonal(d: Any, e: Any) -> Any:
    d, e = np.asarray(d), np.asarray(e)
    return np.diag(d) + np.diag(e, 1) + np.diag(np.conj(e), -1)


def _selected(w: np.ndarray, select: str, select_range: Any) -> np.ndarray:
    """The indices of the eigenvalues ``w`` (ascending) that ``select`` keeps."""
    if select in ("a", "all", 0):
        return np.arange(len(w))
    if select in ("i", "index", 2):
        low, high = (int(bound) for bound in select_range)
        return np.arange(low, high + 1)
    if select in ("v", "value", 1):
        low, high = select_range
        return np.flatnonzero((w > low) & (w <= high))
    raise ValueError(f"invalid argument for select: {select!r}")


def band_eigen_phases(dense: Any, reference: Any, select: str, select_range: Any) -> tuple:
    """``(indices, phases)``: the eigenpairs of ``np.linalg.eigh(dense)`` that SciPy's
    ``select`` keeps, and the phases (signs, for real matrices) that turn their eigenvectors
    into SciPy's ``reference`` ones (None: eigenvalues only). Not differentiable: an engine
    computes it on plain values.

    >>> band_eigen_phases(np.array([[2.0, 1.0], [1.0, 2.0]]), None, "a", None)[0]
    array([0, 1])
    """
    w, v = np.linalg.eigh(dense)
    indices = _selected(w, select, select_range)
    if reference is None:
        return indices, None
    overlap = np.sum(np.conj(v[:, indices]) * reference, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        phases = np.where(overlap == 0, 1, overlap / np.abs(overlap))
    return indices, phases.astype(np.result_type(v.dtype, np.float64))


non_differentiable(recorded_whole(band_eigen_phases))


def _eigen(dense: Any, reference: Any, eigvals_only: bool, select: str,
           select_range: Any) -> Any:
    if eigvals_only:
        indices, _ = band_eigen_phases(dense, None, select, select_range)
        return np.linalg.eigvalsh(dense)[indices]
    indices, phases = band_eigen_phases(dense, reference, select, select_range)
    w, v = np.linalg.eigh(dense)
    return w[indices], v[:, indices] * phases


def reference_eigenvectors(f: Any, *args: Any, **kwargs: Any) -> Any:
    """SciPy's eigenvectors ``f(*args, **kwargs)[1]``, for their signs. Not differentiable:
    an engine computes it on plain values.

    >>> reference_eigenvectors(sla.eigh_tridiagonal, np.ones(2), np.zeros(1)).shape
    (2, 2)
    """
    return f(*args, **kwargs)[1]


non_differentiable(recorded_whole(reference_eigenvectors))


def eig_banded(a_band: Any, lower: bool = False, eigvals_only: bool = False,
               overwrite_a_band: bool = False, select: str = "a", select_range: Any = None,
               max_ev: int = 0, check_finite: bool = True) -> Any:
    """``scipy.linalg.eig_banded``: ``eigh`` of the dense Hermitian matrix."""
    _refuse_overwrite("eig_banded", overwrite_a_band=overwrite_a_band)
    dense = _dense(np.asarray(a_band), lower)
    reference = None if eigvals_only else reference_eigenvectors(
        sla.eig_banded, a_band, lower=lower, select=select, select_range=select_range,
        max_ev=max_ev)
    return _eigen(dense, reference, eigvals_only, select, select_range)


def eigvals_banded(a_band: Any, lower: bool = False, overwrite_a_band: bool = False,
                   select: str = "a", select_range: Any = None,
                   check_finite: bool = True) -> Any:
    """``scipy.linalg.eigvals_banded``: ``eigvalsh`` of the dense Hermitian matrix."""
    return eig_banded(a_band, lower=lower, eigvals_only=True,
                      overwrite_a_band=overwrite_a_band, select=select,
                      select_range=select_range)


def eigh_tridiagonal(d: Any, e: Any, eigvals_only: bool = False, select: str = "a",
                     select_range: Any = None, check_finite: bool = True, tol: float = 0.0,
                     lapack_driver: str = "auto") -> Any:
    """``scipy.linalg.eigh_tridiagonal``: ``eigh`` of the dense tridiagonal matrix."""
    dense = _tridiagonal(d, e)
    reference = None if eigvals_only else reference_eigenvectors(
        sla.eigh_tridiagonal, d, e, select=select, select_range=select_range, tol=tol,
        lapack_driver=lapack_driver)
    return _eigen(dense, reference, eigvals_only, select, select_range)


def eigvalsh_tridiagonal(d: Any, e: Any, select: str = "a", select_range: Any = None,
                         check_finite: bool = True, tol: float = 0.0,
                         lapack_driver: str = "auto") -> Any:
    """``scipy.linalg.eigvalsh_tridiagonal``: ``eigvalsh`` of the dense tridiagonal matrix."""
    return eigh_tridiagonal(d, e, eigvals_only=True, select=select, select_range=select_range,
                            tol=tol, lapack_driver=lapack_driver)
