"""Random tangents and hypothesis strategies for primals and tangents of every kind.

`rand_tangent` (plain NumPy randomness, no dependencies) makes a tangent for any primal: in
the primal's own space by default, or in another dtype (``dtype=np.complex128`` for a real
primal, ``np.float64`` for a float32 one): the seeds that rules must also accept.

The hypothesis strategies (`primals`, `tangents`, `accumulators`, `indices`) need the
``hypothesis`` package (a test extra); it is imported when a strategy is built, so this module
and `chainrules.testing` import without it.

>>> import numpy as np
>>> rand_tangent(np.zeros(2, np.float32)).dtype
dtype('float32')
>>> rand_tangent(np.zeros(2), dtype=np.complex128).dtype
dtype('complex128')
>>> rand_tangent({"w": 1.5, "n": 3})
Tangent[dict](w=...)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.projection import ProjectTo, _ProjectToNumeric
from ..core.sparse import SparseCotangent
from ..core.structure import fields, is_structure
from ..core.tangents import NoTangent, Tangent, ZeroTangent
from ..core.thunks import InplaceableThunk, Thunk
from .finite_differences import perturbable_leaves

__all__ = [
    "rand_tangent", "rand_primal", "make_tangent", "inplaceable", "primals", "tangents",
    "accumulators", "indices", "arrays", "float_dtypes",
]

DtypeSpec = Any  # None (the primal's own), a dtype, or a function of the primal's dtype


def _target_dtype(own: np.dtype, dtype: DtypeSpec) -> np.dtype:
    if dtype is None:
        return own
    if callable(dtype) and not isinstance(dtype, type):
        return np.dtype(dtype(own))
    return np.dtype(dtype)


def _values(rng: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Nonzero values of magnitude 1/4 to 4, random in every bit of ``dtype``'s precision
    (so a float64 value is not representable in float32, and rounding shows)."""
    def part():
        magnitude = rng.uniform(0.25, 4.0, size=shape)
        return np.where(rng.random(size=shape) < 0.5, -magnitude, magnitude)

    value = part()
    if dtype.kind == "c":
        value = value + 1j * part()
    return value.astype(dtype)


def rand_tangent(x: Any, rng: np.random.Generator | int | None = None, *,
                 dtype: DtypeSpec = None, _active: frozenset = frozenset()) -> Any:
    """A random tangent for the primal ``x``.

    Numbers and arrays get values of the same shape and of the primal's tangent dtype (or
    ``dtype``: a dtype, or a function from the primal's dtype to the one wanted); integers,
    bools, strings and functions that capture nothing get `NoTangent`; containers, objects,
    dataclasses and closures a `Tangent` of their fields (`NoTangent` when none can be
    perturbed). Values are nonzero, 1/4 to 4 in magnitude, and use every bit of their dtype
    (cast to a lower precision, they change: rounding shows).

    >>> import numpy as np
    >>> rand_tangent(3), rand_tangent("name")
    (NoTangent(), NoTangent())
    >>> t = rand_tangent(np.float32(1.0), dtype=np.float64)
    >>> type(t).__name__
    'float64'
    """
    if not issubclass(type(rng), np.random.Generator):
        rng = np.random.default_rng(rng)
    projector = ProjectTo(x)
    if isinstance(projector, _ProjectToNumeric):
        target = _target_dtype(projector.dtype, dtype)
        value = _values(rng, projector.shape, target)
        if issubclass(type(x), np.ndarray):
            return value
        value = value[()]
        if not issubclass(type(x), np.generic) and target in (np.float64, np.complex128):
            return complex(value) if target.kind == "c" else float(value)  # Python numbers
        return value
    children = fields(x) if is_structure(x, object_arrays=True) and id(x) not in _active \
        else None  # a structure that holds itself (a closure calling itself) is walked once
    if not children:
        return NoTangent()
    _active = _active | {id(x)}
    if issubclass(type(x), np.ndarray):  # object array
        out = np.empty(x.shape, dtype=object)
        for position, element in np.ndenumerate(x):
            out[position] = rand_tangent(element, rng, dtype=dtype, _active=_active)
        return out
    backing = {}
    for key, value in children.items():
        t = rand_tangent(value, rng, dtype=dtype, _active=_active)
        if not isinstance(t, NoTangent):
            backing[key] = t
    return Tangent(type(x), backing) if backing else NoTangent()


def inplaceable(value: Any) -> InplaceableThunk:
    """``value`` as an `InplaceableThunk` whose ``add`` and value agree exactly.

    >>> import numpy as np
    >>> t = inplaceable(np.array([1.0, 2.0]))
    >>> t.add(np.ones(2))
    array([2., 3.])
    """
    value = np.asarray(value)
    frozen = value.copy()

    def add(buffer):
        np.add(buffer, frozen, out=buffer)
        return buffer

    return InplaceableThunk(add, Thunk(lambda: frozen.copy()), shape=frozen.shape,
                            dtype=frozen.dtype)


def rand_primal(kind: str = "array", rng: np.random.Generator | int | None = None,
                dtype: Any = np.float64, shape: tuple = (3,)) -> Any:
    """A random primal of a kind: ``"array"``, ``"scalar"``, ``"tuple"``, ``"dict"``.

    >>> rand_primal("scalar", 0, np.float32).dtype
    dtype('float32')
    """
    if not issubclass(type(rng), np.random.Generator):
        rng = np.random.default_rng(rng)
    dtype = np.dtype(dtype)
    array = rng.standard_normal(shape)
    if dtype.kind == "c":
        array = array + 1j * rng.standard_normal(shape)
    array = array.astype(dtype)
    if kind == "array":
        return array
    if kind == "scalar":
        return array.reshape(-1)[0] if array.size else dtype.type(0)
    if kind == "tuple":
        return (array, 2, array.reshape(-1)[0])
    if kind == "dict":
        return {"w": array, "n": 3, "b": [array.reshape(-1)[0]]}
    raise ValueError(f"rand_primal: unknown kind {kind!r}; use array, scalar, tuple or dict")


# --------------------------------------------------------------------------------------------
# hypothesis strategies
# --------------------------------------------------------------------------------------------

def _hypothesis():
    try:
        import hypothesis.extra.numpy as hnp
        import hypothesis.strategies as st
    except ImportError:  # pragma: no cover - hypothesis is a test extra
        raise ImportError("chainrules.testing strategies need the hypothesis package: "
                          "pip install 'chainrules[test]' (or pip install hypothesis)") from None
    return st, hnp


FLOAT_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def float_dtypes(complex_: bool = True):
    """Strategy: float32, float64 (and complex64, complex128)."""
    st, _ = _hypothesis()
    return st.sampled_from(FLOAT_DTYPES if complex_ else FLOAT_DTYPES[:2])


def _elements(dtype: np.dtype, bound: float):
    st, _ = _hypothesis()
    width = 32 if dtype in (np.float32, np.complex64) else 64
    real = st.floats(-bound, bound, width=width, allow_nan=False, allow_infinity=False)
    if dtype.kind == "c":
        return st.builds(complex, real, real)
    return real


def arrays(dtype: Any = None, shape: Any = None, *, bound: float = 10.0, max_side: int = 4):
    """Strategy: finite arrays of a float/complex dtype (drawn when not given)."""
    st, hnp = _hypothesis()
    dtypes = float_dtypes() if dtype is None else st.just(np.dtype(dtype))
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, max_side=max_side) if shape is None \
        else st.just(tuple(shape))
    return st.tuples(dtypes, shapes).flatmap(
        lambda ds: hnp.arrays(ds[0], ds[1], elements=_elements(np.dtype(ds[0]), bound)))


def primals(*, max_depth: int = 2, bound: float = 10.0):
    """Strategy: primals of every kind: Python and NumPy scalars, arrays (float32/64, complex),
    ints and bools (not perturbable), and lists, tuples and dicts of them."""
    st, _ = _hypothesis()
    scalars = st.one_of(
        _elements(np.dtype(np.float64), bound),
        _elements(np.dtype(np.complex128), bound),
        st.tuples(float_dtypes(), _elements(np.dtype(np.float32), bound)).map(
            lambda d: np.dtype(d[0]).type(d[1])),
    )
    leaves = st.one_of(scalars, arrays(bound=bound), st.integers(-5, 5), st.booleans())
    if max_depth <= 0:
        return leaves
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3),
            st.lists(children, min_size=1, max_size=3).map(tuple),
            st.dictionaries(st.sampled_from("abc"), children, min_size=1, max_size=3)),
        max_leaves=4 * max_depth)


def tangents(x: Any, *, kinds: tuple | None = None):
    """Strategy: tangents of ``x`` of every kind.

    Kinds: ``"natural"`` (x's own dtype), ``"float32"``, ``"float64"``, ``"complex"`` (other
    dtypes), ``"zero"``, ``"thunk"``, ``"inplaceable"`` and ``"sparse"`` (arrays), and for
    structures ``"partial"`` (a `Tangent` with some fields missing, which are zero).
    """
    st, _ = _hypothesis()
    kinds = kinds or _tangent_kinds(x)

    @st.composite
    def draw(data):
        kind = data(st.sampled_from(kinds))
        seed = data(st.integers(0, 2 ** 32 - 1))
        return make_tangent(x, kind, seed)

    return draw()


def accumulators(x: Any):
    """Strategy: accumulators for cotangents of ``x``: tangents of every kind, plus the
    structural tangents of containers in their natural form (a list for a list)."""
    return tangents(x, kinds=_tangent_kinds(x) + (("container",) if isinstance(
        x, (list, tuple, dict)) else ()))


def _tangent_kinds(x: Any) -> tuple:
    kinds = ("natural", "float32", "float64", "complex", "zero", "thunk")
    if issubclass(type(x), np.ndarray) and x.ndim and x.dtype.kind in "fc":
        kinds += ("inplaceable", "sparse")
    if is_structure(x, object_arrays=True) and fields(x):
        kinds += ("partial",)
    return kinds


def make_tangent(x: Any, kind: str, rng: np.random.Generator | int | None = None) -> Any:
    """One tangent of ``x`` of the named kind (see `tangents`).

    >>> import numpy as np
    >>> make_tangent(np.zeros(3), "sparse", 0).dense().shape
    (3,)
    """
    if not issubclass(type(rng), np.random.Generator):
        rng = np.random.default_rng(rng)
    if not perturbable_leaves(x):
        return NoTangent()  # whatever the kind: nothing to perturb
    dtypes: dict[str, DtypeSpec] = {
        "natural": None, "float32": np.float32, "float64": np.float64,
        "complex": np.complex128}
    if kind in dtypes:
        return rand_tangent(x, rng, dtype=dtypes[kind])
    if kind == "zero":
        return ZeroTangent()
    if kind == "thunk":
        value = rand_tangent(x, rng)
        return Thunk(lambda: value)
    if kind == "inplaceable":
        return inplaceable(rand_tangent(x, rng))
    if kind == "sparse":
        value = rand_tangent(x, rng)
        position = tuple(int(rng.integers(0, n)) for n in x.shape[:1])
        return SparseCotangent(position, value[position], x.shape, value.dtype)
    if kind == "partial":
        t = rand_tangent(x, rng)
        if isinstance(t, Tangent) and len(t.backing) > 1:
            first = next(iter(t.keys()))
            return Tangent(t.primal_type, {first: t[first]})
        return t
    if kind == "container":
        t = rand_tangent(x, rng)
        if not isinstance(t, Tangent):
            return t
        if isinstance(x, dict):
            return dict(t.backing)
        items = [t[i] for i in range(len(x))]
        return items if isinstance(x, list) else tuple(items)
    raise ValueError(f"make_tangent: unknown kind {kind!r}")


def indices(shape: tuple):
    """Strategy: indices of every kind into an array of ``shape``: ints (negative too),
    slices, Ellipsis, None, integer arrays (with repeats), boolean masks, and tuples mixing
    them (at most one array part, so the result's shape is unambiguous)."""
    st, hnp = _hypothesis()
    shape = tuple(shape)

    def axis_index(n: int):
        return st.one_of(
            st.integers(-n, n - 1),
            st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                      st.none() | st.sampled_from([1, 2, -1])),
        )

    def array_part(n: int):
        return st.one_of(
            hnp.arrays(np.intp, st.integers(1, 4), elements=st.integers(-n, n - 1)),
            hnp.arrays(np.bool_, n))

    basic = st.tuples(*[axis_index(n) for n in shape]) if shape else st.just(())

    @st.composite
    def draw(data):
        parts = list(data(basic))
        if shape and data(st.booleans()):
            axis = data(st.integers(0, len(shape) - 1))
            parts[axis] = data(array_part(shape[axis]))
        if parts and data(st.booleans()):
            keep = data(st.integers(1, len(parts)))
            parts = parts[:keep] + [Ellipsis]
        if data(st.booleans()):
            parts.insert(data(st.integers(0, len(parts))), None)
        if len(parts) == 1 and data(st.booleans()):
            return parts[0]
        return tuple(parts)

    return draw()

