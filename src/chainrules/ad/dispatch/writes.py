"""Arrays written in place while differentiating: ``out[i] = t``, ``y[1:] *= 2``,
``np.add.at(out, idx, v)``, ``np.sin(buf, out=buf)``.

Design (docs/mutation.md says it for users):

- A traced value is the array: ``out[i] = t`` changes the `Traced` object itself, so every name
  bound to it sees the write, as with NumPy. The write is recorded functionally, as a new node
  ``setitem(old, index, value)`` of the tape, and the object now stands for that node.
- Its storage is written in place when nothing else holds it (counted by reference count: no
  rule, view or value took it since): a fill loop of n writes costs O(n). When something does
  hold it (a rule that keeps its input for the backward pass, a view), the storage is copied
  first (copy on write), so no recorded pullback ever sees a value change under it.
- Arrays that the function creates with ``np.zeros``, ``np.ones``, ``np.empty``, ``np.full``,
  their ``_like`` forms, ``np.eye``, ``np.identity``, ``np.array``, ``np.copy``,
  ``np.linspace`` and ``np.arange`` (float or complex results) are traced constants while a trace
  is active, at every active level, so that they can take traced values. A constant has no
  record (node -1; a zero tangent in forward mode): operations on constants alone are plain
  NumPy, so an array that never takes a traced value behaves as before.
- A slice read from a written array is a read-only snapshot (`read_view`), so that rules
  keeping it do not hold the array's storage.
- Views of a traced array (slices, ``.T``, ``reshape``...) are followed (`track_view`): each
  write to the array computes its live views again, so they see it as NumPy's views do.
- The backward pass of a write reads the cotangent at the written positions (the value's
  cotangent) and zeroes it there (the overwritten values get none). The engine hands the
  pullback a cotangent buffer it owns (`OWNING_PULLBACKS`), so this happens in place: O(size
  of the written part) per write. A traced number written at one element (``u[k, i] = t``,
  `WritePullback.reads_number`) is done by the backward pass itself, without the call, and
  recorded by `write` without its general cases when the array's storage is its own.
- Writes into the function's own input array happen in the caller's array, as NumPy does, when
  no operation recorded so far keeps that array; otherwise they raise (the gradient would need
  the old values). Writes through a view (``v = out[2:]; v[0] = t``, ``x.T[0] = t``) raise: the
  engine would not see the base array change.
"""

from __future__ import annotations

import dis
import sys
import threading
import weakref
from typing import Any, Sequence

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.naming import function_name
from ...core.projection import ProjectTo
from ...core.registry import INDEX_READ
from ...core.sparse import flat_positions, has_integer_array
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk
from ...rules.numpy.indexing import GetitemPullback, normalize_index
from ..trace.errors import TracingError
from ..trace.tape import OWNING_PULLBACKS
from ..trace.traced import WRITABLE_KINDS, Traced, constant, is_constant, primal_value
from ..trace.values import SCALAR_META, dtype_of, record_meta, shape_of

__all__ = ["from_program", "called_from_program", "library_namespace", "LIBRARIES",
           "PLAIN_ARRAY_CAUSES", "write", "augmented", "augmented_plain", "ufunc_out",
           "ufunc_at", "created", "is_constant", "read_view", "track_view", "lend_input",
           "setitem", "WritePullback", "enter_level", "exit_level"]

_NO_TANGENT = NoTangent()
_ZERO = ZeroTangent()


def setitem(array: Any, index: Any, value: Any) -> Any:
    """A copy of ``array`` with ``array[index] = value``: what a recorded write stands for.

    >>> setitem(np.zeros(3), 1, 2.0)
    array([0., 2., 0.])
    """
    out = np.array(array, copy=True)
    out[index] = value
    return out


setitem.__qualname__ = setitem.__name__ = "setitem (an array write, a[index] = value)"


# --- the active levels, innermost last (a thread's own stack) -----------------------------

class _ThreadState(threading.local):
    """This thread's own: its active levels, the views it follows (`_views`), and whether
    views are being computed again (``refreshing``). Every attribute exists from the first
    access (a missing one would make each read raise and catch an AttributeError, 0.35 us:
    once per slice read)."""

    refreshing = False

    def __init__(self) -> None:
        self.levels: list = []
        self.views: dict = {}


_local = _ThreadState()
# np.copy as NumPy defines it (a trace replaces the name in NumPy's namespace)
_NUMPY_COPY = np.copy


def _levels() -> list:
    return _local.levels


class _LevelState:
    """What a level knows of its written arrays: the caller's arrays written in place, with
    their reference counts."""

    __slots__ = ("inputs",)

    def __init__(self):
        self.inputs: dict = {}


_states: dict = {}


def _state(level: Any) -> _LevelState:
    state = _states.get(id(level))
    if state is None:
        state = _states[id(level)] = _LevelState()
    return state


def enter_level(level: Any) -> None:
    """A level of tracing starts (called by `chainrules.ad.dispatch.routing.enter`)."""
    _levels().append(level)


def exit_level(level: Any) -> None:
    """A level of tracing ends: forget what it knew."""
    levels = _levels()
    for position in range(len(levels) - 1, -1, -1):
        if levels[position] is level:
            del levels[position]
            break
    _states.pop(id(level), None)
    if not levels:
        _views().clear()


# --- reference counts: is a storage held by anything but its traced value? ---------------

def _primal_refs(target: Any) -> int:
    storage = target.primal
    return sys.getrefcount(storage)


def _tangent_refs(target: Any) -> int:
    storage = target.node
    return sys.getrefcount(storage)


_MINIMUM: list = []


def _minimum() -> tuple[int, int]:
    """The reference counts of a storage held by its traced value alone, as measured above."""
    if not _MINIMUM:
        # Measured as the writers measure: with one local name holding the storage.
        probe = Traced(np.zeros(1), None, np.zeros(1))
        held_primal, held_tangent = probe.primal, probe.node  # noqa: F841
        _MINIMUM.extend((_primal_refs(probe), _tangent_refs(probe)))
    return _MINIMUM[0], _MINIMUM[1]


# --- array creation: traced constants -----------------------------------------------------

# Packages whose own arrays stay plain: NumPy's, SciPy's and chainrules' internals, which
# differentiate through rules, not through their code; array libraries and compiled packages
# that hand their arrays to C (a traced value has no buffer); test tools.
LIBRARIES = frozenset({
    "numpy", "scipy", "chainrules", "_pytest", "pytest", "hypothesis", "pluggy",
    "dask", "distributed", "pandas", "xarray", "matplotlib", "sklearn", "numba", "torch",
    "jax", "jaxlib", "cupy", "array_api_compat", "numexpr", "zarr", "h5py", "PIL",
    "pyarrow", "tables", "statsmodels", "skimage", "cv2"})


# Modules of those packages written in Python, and functions of others, that fill arrays of
# their own with the values they compute from their inputs (SciPy's short-time Fourier
# transform, which welch and periodogram use; cumulative_simpson's sum; the log-densities of
# scipy.stats' matrix distributions, wishart's; the cubic and Krogh interpolants; the binned
# statistics; the array-API backends of scipy.spatial.transform's rotations, which
# `rotations` runs on traced values): the arrays they create are traced, as a program's.
FOLLOWED = frozenset({"scipy.signal._short_time_fft", "scipy.spatial.transform._rotation_xp",
                      "scipy.spatial.transform._rigid_transform_xp"})
FOLLOWED_FUNCTIONS = frozenset({
    ("scipy.integrate._quadrature", "_cumulatively_sum_simpson_integrals"),
    ("scipy.stats._multivariate", "_logpdf"),
    ("scipy.interpolate._cubic", "__init__"),  # Akima's, SciPy 1.11's CubicHermiteSpline's
    ("scipy.interpolate._polyint", "__init__"),  # KroghInterpolator's divided differences
    ("scipy.interpolate._polyint", "_evaluate"),
    ("scipy.interpolate._polyint", "_evaluate_derivatives"),
    ("scipy.stats._binned_statistic", "binned_statistic_dd"),  # its result array
    ("chainrules.rules.scipy.array_api", "at_update")})  # array_api_extra's at(x)[i].set(y)


def library_namespace(namespace: dict) -> bool:
    """Whether ``namespace`` is the globals of a module of one of the `LIBRARIES` (not a copy
    of them, as a doctest's, nor a namespace that only takes its name), other than the
    `FOLLOWED` modules."""
    name = namespace.get("__name__") or ""
    if name.partition(".")[0] not in LIBRARIES or name in FOLLOWED:
        return False
    return getattr(sys.modules.get(name), "__dict__", None) is namespace


def from_program(depth: int) -> bool:
    """Whether the function ``depth`` frames up is the program's code (the user's, or a
    package it calls, installed or not), not one of the `LIBRARIES`: only arrays the program
    creates are traced. The array-API layers' creation functions (``xp.empty``) are looked
    through: their caller decides."""
    frame = sys._getframe(depth + 1)
    while (frame.f_globals.get("__name__") or "").startswith(_ARRAY_API_LAYERS) and \
            frame.f_back is not None:
        frame = frame.f_back
    return not library_namespace(frame.f_globals) or (
        frame.f_globals.get("__name__"), frame.f_code.co_name) in FOLLOWED_FUNCTIONS


_ARRAY_API_LAYERS = ("scipy._lib.array_api_compat.", "array_api_compat.")


def called_from_program() -> bool:
    """Whether the code that called into NumPy or chainrules is the program's (the user's, or
    a package it calls), not one of the `LIBRARIES` (SciPy's internals): the first frame out
    of both decides."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if name.partition(".")[0] not in ("chainrules", "numpy"):
            return not library_namespace(frame.f_globals)
        frame = frame.f_back
    return False


def created(result: Any, depth: int = 1) -> Any:
    """``result`` of a creation function, made a traced constant at every active level when it
    is a numeric array created by the program; anything else unchanged."""
    if type(result) is not np.ndarray or result.dtype.kind not in WRITABLE_KINDS:
        return result
    levels = _levels()
    if not levels or not from_program(depth + 1):
        return result
    value = result
    for level in levels:
        if not level.finished:
            value = constant(level, value)
    return value



def read_view(source: Any, view: Any, redo: Any) -> Any:
    """``view = source[index]`` (``redo(source)`` computes it again): `track_view`, and when
    ``source`` has been written, the view becomes a read-only snapshot of its values. A rule
    that keeps the view then does not hold the array's storage, which would make every later
    write copy it (a row recurrence ``out[i] = out[i - 1] @ A`` stays linear); and a write
    into the snapshot raises, as a write through a view does."""
    view = track_view(source, view, redo)
    if type(view) is not Traced:
        return view
    tape = source.tape
    if tape.forward or not tape.active or type(source.node) is not int or source.node < 0 \
            or tape.records[source.node][1] is not setitem:
        return view
    levels = _levels()
    if not levels or tape is not levels[-1]:
        # a value of an outer level, read by an inner level's rule: the inner level's view
        # is the program's, followed and made a snapshot there (a snapshot here would hide
        # from it that the value is a view)
        return view
    primal = view.primal
    if type(primal) is np.ndarray:
        snapshot = primal.copy()
    elif type(primal) is Traced and type(primal_value(primal)) is np.ndarray:
        snapshot = _NUMPY_COPY(primal)  # recorded by the outer levels
    else:
        return view
    primal_value(snapshot).flags.writeable = False
    view.primal = snapshot
    return view


# --- views: what NumPy shows through a view after its base is written ----------------------
#
# A view of a traced array (``v = out[2:]``, ``out.T``, ``np.reshape(out, ...)``) is followed:
# when ``out`` is written, every view of it that is still alive is computed again from the
# written array (and the same object takes the new value and node), so that reading ``v``
# after ``out[2] = t`` sees ``t``, and its gradient reaches ``t``, as NumPy's view would.

def _views() -> dict:
    """id(base) -> (weak reference to base, [its views' `_ViewReference`]), for this
    thread."""
    return _local.views


class _ViewReference(weakref.ref):
    """A weak reference to a followed view, with how to compute it again: ``redo(root)``
    from ``root``, a weak reference to the array it is followed from. A view of a view is
    followed from the first array (found through this reference, `weakref.getweakrefs`), so
    that it sees writes even when the view between them is gone (``out.reshape(2, 3)[0]``:
    the reshape is a temporary)."""

    __slots__ = ("redo", "root")


def _composed(first: Any, then: Any) -> Any:
    return lambda base: then(first(base))


def track_view(source: Any, result: Any, redo: Any) -> Any:
    """``result`` of an operation on the traced array ``source`` that ``redo(source)``
    computes again (without holding ``source``: the registry keeps it weakly); if it is a
    NumPy view of ``source``'s storage, it is followed (a plain view of a constant becomes a
    constant of ``source``'s levels) and returned.

    Only views of the innermost level's values are followed: those are the program's. Values
    of outer levels met there are rules' own (a pullback's inputs at order 2), which must
    never change under them."""
    plain = result
    while type(plain) is Traced:  # primal_value, inline: this runs for every slice read
        plain = plain.primal
    if type(plain) is not np.ndarray:
        return result
    base = plain.base  # a view's base is the array owning the memory: found without a call
    if base is None or type(source) is not Traced:  # (not Traced: `_numpy_makes_a_view`
        return result                               # replaying a view on plain values)
    state = _local
    levels = state.levels
    if not levels or source.tape is not levels[-1] or state.refreshing:
        return result
    storage = source.primal
    while type(storage) is Traced:
        storage = storage.primal
    if type(storage) is not np.ndarray:
        return result
    if not ((base is storage or base is storage.base) and plain.size) and \
            not np.may_share_memory(plain, storage):
        return result
    if type(result) is not Traced:
        result = _constant_as(source, result)
    views = state.views
    entry = views.get(id(source))
    if entry is None or entry[0]() is not source:  # weak: the registry keeps no array alive
        for known in weakref.getweakrefs(source):  # a followed view: its views follow its root
            if type(known) is _ViewReference:
                root = known.root()
                if root is not None:
                    composed = _composed(known.redo, redo)
                    if not _numpy_makes_a_view(composed, root):
                        return result  # a copy in NumPy (the ravel of a reversed view)
                    source, redo = root, composed
                break
        entry = views.get(id(source))
        if entry is None or entry[0]() is not source:
            entry = views[id(source)] = (weakref.ref(source), [])
    reference = _ViewReference(result)
    reference.redo, reference.root = redo, entry[0]
    entry[1].append(reference)
    return result


def _numpy_makes_a_view(redo: Any, root: Any) -> bool:
    """Whether ``redo(root)`` is a NumPy view of ``root``. A followed view's value may be a
    copy standing for the view (reads of a written array are copies, computed again after
    each write), and an operation on it can then give a view of that copy where NumPy,
    given the view itself, copies (``ravel`` or ``reshape`` of a reversed or transposed
    view): the chain is replayed on ``root``'s plain storage to ask NumPy."""
    storage = primal_value(root)
    probe = redo(storage)
    return type(probe) is np.ndarray and np.may_share_memory(probe, storage)


def _constant_as(source: Any, value: Any) -> Any:
    """``value``, a plain result of an operation on the constant ``source``, as a constant of
    each level of ``source`` (outermost innermost, as `created` makes them)."""
    levels = []
    while type(source) is Traced:
        levels.append(source.tape)
        source = source.primal
    for level in reversed(levels):
        if not level.finished:
            value = constant(level, value)
    return value


def _release_views(target: Any) -> list:
    """Before a write into ``target``: its live views let go of its storage (they are computed
    again after the write), so that holding a view does not make each write copy the array.
    Returns them with their values, to restore if the write fails."""
    entry = _views().get(id(target))
    if entry is None or entry[0]() is not target:
        return []
    released = []
    for ref in entry[1]:
        view = ref()
        if view is not None and type(view.primal) is np.ndarray and view.primal.base is not None:
            released.append((view, view.primal))
            view.primal = None
    return released


def _refresh_views(target: Any, released: Sequence = ()) -> None:
    """``target`` was written: compute its live views again (and theirs, in turn)."""
    for view, primal in released:
        view.primal = primal  # back as they were, should computing them again fail
    views = _views()
    if not views:
        return
    pending = [target]
    _local.refreshing = True
    try:
        while pending:
            base = pending.pop()
            entry = views.get(id(base))
            if entry is None or entry[0]() is not base:
                continue
            alive = [ref for ref in entry[1] if ref() is not None]
            entry[1][:] = alive
            for ref in alive:
                view = ref()
                if view is None:
                    continue
                fresh = ref.redo(base)
                if type(fresh) is not Traced:
                    fresh = _constant_as(base, fresh)
                view.primal, view.tape, view.node = fresh.primal, fresh.tape, fresh.node
                pending.append(view)
    finally:
        _local.refreshing = False


# --- writes ---------------------------------------------------------------------------------

def write(target: Any, index: Any, value: Any) -> None:
    """``target[index] = value`` for a traced ``target``: recorded, the storage written in
    place (copied first when something else holds it)."""
    if type(value) is Traced and value.tape is target.tape:
        if type(value.primal) in SCALAR_META:
            if _write_number(target, index, value):
                return
        elif type(value.primal) is Traced and _write_number_of_pair(target, index, value):
            return
    if type(index) is list or (type(index) is tuple and list in map(type, index)):

        index = normalize_index(index)
    if type(index) is Traced:
        index = index.primal
    level = target.tape
    if level.finished or (not level.forward and not level.active):
        raise TracingError(_writer_location() +
                           "a traced array was written after its grad/vjp/jvp call returned; "
                           "traced values must not escape the differentiated function.")
    if type(value) is not Traced and isinstance(value, (list, tuple)):
        value = np.array(value)  # as NumPy reads it; the engine's np.array records traced parts
    value_primal, value_node = _value_at(level, value)
    if type(target.primal) is not np.ndarray and \
            not issubclass(type(primal_value(target.primal)), np.ndarray):
        raise TypeError(f"'{type(primal_value(target.primal)).__name__}' object does not "
                        f"support item assignment (a traced number, not an array)")
    views = _views()
    released = _release_views(target) if views else ()
    try:
        if level.forward:
            _write_forward(level, target, index, value_primal, value_node)
        else:
            _write_reverse(level, target, index, value, value_primal, value_node)
    finally:
        if views:  # no view of any traced array is alive: nothing to compute again
            _refresh_views(target, released)


def _write_number(target: Any, index: Any, value: Any) -> bool:
    """``u[i, j] = t`` for a traced number ``t`` of ``u``'s reverse trace, when ``u``'s storage
    is its own and no view of any traced array is alive: the common write of a loop, done
    and recorded as `write` would, without its general cases. False when it does not apply."""
    tape, storage = target.tape, target.primal
    if type(storage) is not np.ndarray or tape.forward or not tape.active or tape.finished or \
            _local.views or not _is_element(index, storage.ndim) or \
            storage.base is not None or not storage.flags.writeable or \
            _primal_refs(target) > (_MINIMUM or _minimum())[0]:
        return False
    storage[index] = value.primal
    _record_write(tape, target, index, value.primal, value.node, None, False, True)
    return True


def _write_number_of_pair(target: Any, index: Any, value: Any) -> bool:
    """`_write_number` under ``hvp``: ``u``'s storage a value of the forward trace just outside
    (an array and its tangent) and ``t`` a number of it with its number tangent; both written
    in place when each is its own (the reference counts `_write_number` and forward mode's
    writes read), as `write` would through both traces. False when it does not apply."""
    tape, pair, number = target.tape, target.primal, value.primal
    if type(pair) is not Traced or number.tape is not pair.tape or tape.forward or \
            not tape.active or tape.finished or _local.views:
        return False
    trace, storage, tangent = pair.tape, pair.primal, pair.node
    if not trace.one_direction or trace.finished or type(storage) is not np.ndarray or \
            type(tangent) is not np.ndarray or type(number.primal) not in SCALAR_META or \
            type(number.node) not in SCALAR_META or not _is_element(index, storage.ndim) or \
            storage.base is not None or tangent.base is not None or \
            not storage.flags.writeable or not tangent.flags.writeable:
        return False
    minimum = _MINIMUM or _minimum()
    if _primal_refs(target) > minimum[0] or _primal_refs(pair) > minimum[0] or \
            _tangent_refs(pair) > minimum[1]:
        return False
    storage[index] = number.primal
    tangent[index] = number.node
    _record_write(tape, target, index, number, value.node, None, False, True)
    return True


def _value_at(level: Any, value: Any) -> tuple[Any, Any]:
    """``value``'s primal and node (tangent, for a forward level) at ``level``; a value of an
    outer level (or plain) is a constant here: node -1 (tangent zero)."""
    if type(value) is Traced:
        if value.tape is level:
            return value.primal, value.node
        if value.tape.level > level.level and not value.tape.finished:
            raise TracingError(
                "a value of an inner grad/jvp was written into an array created outside it; "
                "create the array inside the function that is differentiated.")
    return value, (_ZERO if level.forward else -1)


def _write_reverse(tape: Any, target: Any, index: Any, value: Any, value_primal: Any,
                   value_node: int) -> None:
    storage = _own_primal(tape, target)
    target.primal = _store(storage, index, value_primal)
    keep = None
    if type(index) is not int and has_integer_array(index):
        keep = _last_writes(np.shape(primal_value(storage)), index, value_primal)
    _record_write(tape, target, index, value_primal, value_node, keep, False)


def _record_write(tape: Any, target: Any, index: Any, value_primal: Any, value_node: int,
                  keep: Any, add: bool, element: bool = False) -> None:
    """Record ``target[index] = value`` (``add``: ``np.add.at``) on the reverse ``tape``: the
    target now stands for the new node. A constant written into a constant stays one.
    ``element``: the index is known to select one element (`_is_element`)."""
    if value_node < 0 and target.node < 0:
        return
    project = ProjectTo(value_primal) if value_node >= 0 else None
    shape = () if type(value_primal) in SCALAR_META else tuple(np.shape(value_primal))
    meta = tape.records[target.node][2] if target.node >= 0 else _meta_of(tape, target)
    reads_number = project is not None and keep is None and not add and shape == () and (
        element or _is_element(index, len(meta[0])))
    pullback = WritePullback(index, shape, project, keep, add, reads_number)
    records = tape.records
    records.append((pullback, setitem, meta, target.node, -1, value_node))
    target.node = len(records) - 1


def _meta_of(tape: Any, target: Any) -> tuple:
    """The record metadata (shape, dtype) of the written array: that of its node, or of its
    value for a constant."""
    if target.node >= 0:
        return tape.records[target.node][2]

    primal = target.primal
    return record_meta(shape_of(primal), dtype_of(primal), type(primal))


def _write_forward(trace: Any, target: Any, index: Any, value_primal: Any,
                   value_tangent: Any) -> None:
    storage = _own_primal(trace, target)
    target.primal = _store(storage, index, value_primal)
    value_tangent = unthunk(value_tangent)
    if isinstance(target.node, AbstractZero) and isinstance(value_tangent, AbstractZero):
        return  # zero written into zero
    value_tangent = 0 if isinstance(value_tangent, AbstractZero) else value_tangent
    size = getattr(trace, "size", None)  # a batched forward trace (chainrules.ad.transforms.batching)
    tangent = _own_tangent(target, size)
    if size is None:
        target.node = _store(tangent, index, value_tangent)
        return
    for direction in range(size):  # each direction's tangent takes the write as NumPy would
        part = value_tangent if np.ndim(value_tangent) == 0 else value_tangent[direction]
        tangent = _store_direction(tangent, direction, index, part)
    target.node = tangent


def _store_direction(tangent: Any, direction: int, index: Any, value: Any) -> Any:
    """``tangent[direction][index] = value`` for a batched tangent, in place."""
    if type(value) is Traced and type(tangent) is not Traced:
        tangent = constant(value.tape, tangent)
    tangent[(direction,) + (index if type(index) is tuple else (index,))] = value
    return tangent


def _own_tangent(target: Any, size: int | None = None) -> Any:
    """A forward value's tangent, ready to be written in place: zeros for a zero tangent (with
    a leading axis of ``size`` directions for a batched trace), a copy when something else
    holds it."""
    tangent = target.node
    if isinstance(tangent, AbstractZero):
        plain = primal_value(target.primal)
        return np.zeros(plain.shape if size is None else (size,) + plain.shape, plain.dtype)
    if _tangent_refs(target) > _minimum()[1] or (type(tangent) is np.ndarray and
                                                 tangent.base is not None):
        return _copy(tangent)  # shared with another value: copy on write
    return tangent


def _store(storage: Any, index: Any, value: Any) -> Any:
    """``storage[index] = value`` in place; a plain storage meeting a value of an outer level
    becomes a constant of that level first. Returns the storage."""
    if type(value) is Traced and type(storage) is not Traced:
        storage = constant(value.tape, storage)
    storage[index] = value
    return storage


def _own_primal(level: Any, target: Any) -> Any:
    """``target``'s storage, ready to be written in place: itself when nothing else holds it,
    the caller's array for a written input (when no recorded operation keeps it), else a
    copy. Raises for views."""
    storage = target.primal
    plain = type(storage) is np.ndarray
    if _primal_refs(target) <= _minimum()[0] and (not plain or (
            storage.base is None and storage.flags.writeable)):
        return storage
    state = _state(level)
    known = state.inputs.get(id(storage))
    if known is not None and _primal_refs(target) <= known[1]:
        return storage
    if not level.forward and target.node >= 0:
        if known is not None or level.records[target.node][0] is None:
            _check_input_unused(level, target.node, known is not None)
            entry = [storage, 0]
            state.inputs[id(storage)] = entry
            entry[1] = _primal_refs(target)
            return storage
    if plain and ((storage.base is not None and not _is_private_view(storage) and
                   _base_visible(storage)) or not storage.flags.writeable):
        raise TracingError(
            _writer_location() +
            "writing into a view of another array (made by slicing, .T, reshape, ravel, ...) "
            "would change that array too, which the engine does not follow. Write into the "
            "array itself with the combined index (`out[2 + i] = t` for `v = out[2:]; v[i] = "
            "t`, `out[i, j] = t` for `out[i][j] = t`), or write into a copy (`v = v.copy()`).")
    copy = _copy(storage)
    target.primal = copy
    return copy


def _writer_location() -> str:
    """Where the write was written: the innermost caller outside chainrules, as
    ```line` (file, line N): ``."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__") or "").startswith(
            _PACKAGE):
        frame = frame.f_back
    if frame is None:
        return ""
    import linecache  # (only when an error is raised)
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip() or "a write"
    return f"`{line}` ({frame.f_code.co_filename}, line {frame.f_lineno}): "


_PACKAGE = __name__.partition(".")[0] + "."


def _copy(storage: Any) -> Any:
    """A copy of a storage that something else holds (copy on write): O(its size)."""
    return storage.copy() if type(storage) is np.ndarray else np.copy(storage)


def _base_visible(storage: np.ndarray) -> bool:
    """Whether the array that the view ``storage`` looks into is the value of a traced array
    the program still holds (whose views the engine follows). When it is not (``v =
    np.reshape(x * 2.0, (2, 2)); v -= 1.0``: the temporary is gone), nothing the program can
    read sees a write through the view, and writing into a copy of it is what NumPy does.
    NumPy gives a view of a view the array that owns the memory as its base, so another
    traced array that is itself a view of that owner (``m = temporary.reshape(3, 4)`` for
    ``m[1]``) is found by its own base."""
    base = storage.base
    for entry in _views().values():
        source = entry[0]()
        if source is not None:
            primal = primal_value(source)
            if primal is base or (primal is not storage and type(primal) is np.ndarray and
                                  primal.base is base):
                return True
    return False


def _is_private_view(storage: np.ndarray) -> bool:
    """A view whose base array nothing else holds (a temporary of a rule): writing into it
    changes nothing anyone can see."""
    base = storage.base
    return type(base) is np.ndarray and base.base is None and sys.getrefcount(base) <= 3


def lend_input(level: Any, value: Any) -> None:
    """``value``, an input of a forward ``level`` that evaluates the function once (``jvp``),
    holds the caller's array: writes into it happen there, as NumPy's do, while nothing else
    takes the array (forward mode keeps no values for a backward pass)."""
    storage = value.primal  # held as `_own_primal` holds it, so the counts compare
    if type(storage) is np.ndarray and storage.base is None and storage.flags.writeable:
        entry = [storage, 0]
        _state(level).inputs[id(storage)] = entry
        entry[1] = _primal_refs(value)


def _check_input_unused(tape: Any, node: int, again: bool) -> None:
    """The caller's array is written in place only while no recorded operation keeps it (or a
    view of it): those would see the new values in the backward pass."""

    user = None
    if again:
        user = "an operation recorded since the last write"
    else:
        for record in tape.records[node + 1:]:
            if record is None or node not in record[3:]:
                continue
            pullback = record[0]
            if type(pullback) is GetitemPullback and pullback.y_shape == () and \
                    not _has_ellipsis(pullback.index) or \
                    type(pullback) is tuple and record[2][2] is not None and \
                    getattr(pullback[0], "partials", None) is INDEX_READ:
                continue  # x[i] reads a number (np.sum(x) adds them): nothing keeps x
            if record[1] is _NUMPY_COPY:
                continue  # a copy keeps nothing of x
            user = function_name(record[1])
            break
    if user is not None:
        raise TracingError(
            _writer_location() +
            f"the differentiated function writes into its own input array after {user} used "
            f"it; writing into the caller's array (as NumPy does) would change the values "
            f"that the gradient needs. Copy it first (`x = x.copy()` at the top of the "
            f"function), or do the writes before using the array.")


def _has_ellipsis(index: Any) -> bool:
    return index is Ellipsis or (type(index) is tuple and any(p is Ellipsis for p in index))


def _last_writes(shape: tuple, index: Any, value: Any) -> Any:
    """For an integer-array index with repeated positions, a mask of the written elements that
    NumPy keeps (the last write to each position); None when no position repeats."""
    positions = flat_positions(shape, index)
    flat = positions.ravel()
    if np.unique(flat).size == flat.size:
        return None
    reverse = flat[::-1]
    _, first_from_end = np.unique(reverse, return_index=True)
    keep = np.zeros(flat.size, bool)
    keep[flat.size - 1 - first_from_end] = True
    return keep.reshape(positions.shape)


class WritePullback:
    """The pullback of ``a[index] = value`` (``add``: of ``np.add.at(a, index, value)``).

    The engine hands it a cotangent ``dy`` that it owns: the value's cotangent is read at
    ``index``, and ``dy`` is zeroed there in place (not for ``add``) and passed on to ``a``.
    ``reads_number``: a traced number is written at one element (``u[i, j] = t``), so its
    cotangent is the number ``dy[index]`` as it is; the backward pass does that one without
    calling the pullback.

    >>> pullback = WritePullback(1, (), lambda part: part, None, False, True)
    >>> pullback(np.array([1.0, 2.0, 3.0]))[1:]
    (array([1., 0., 3.]), NoTangent(), np.float64(2.0))
    """

    # ``mode``: 0 a write, 1 an add (np.add.at), 2 a write of a number (`reads_number`); one
    # slot for both flags, so that a record costs no more memory than a write's did before
    __slots__ = ("index", "value_shape", "project", "keep", "mode")

    def __init__(self, index: Any, value_shape: tuple, project: Any, keep: Any, add: bool,
                 reads_number: bool = False):
        self.index, self.value_shape, self.project = index, value_shape, project
        self.keep, self.mode = keep, 1 if add else 2 if reads_number else 0

    @property
    def add(self) -> bool:
        return self.mode == 1

    @property
    def reads_number(self) -> bool:
        return self.mode == 2

    def __call__(self, dy: Any) -> tuple:
        if type(dy) is not np.ndarray:
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return _NO_TANGENT, dy, _NO_TANGENT, _ZERO
        index = self.index
        d_value = _ZERO
        if self.project is not None:
            part = dy[index]
            if type(part) is Traced and not (type(part.primal) in SCALAR_META and
                                             type(part.node) in SCALAR_META) or \
                    (type(part) is np.ndarray and part.base is not None):
                # dy is written in place later (zeroed here, upstream): a view of it is
                # copied (a number with its number tangent is not a view)
                part = np.copy(part)
            if self.keep is not None:
                part = part * self.keep
            if type(part) in SCALAR_META and self.value_shape == ():
                pass  # a number read at a number's place (the loop u[i] = t): nothing to sum
            elif np.shape(part) != self.value_shape:
                part = unbroadcast(part, self.value_shape)
            d_value = self.project(part)
        if self.mode != 1:
            dy[index] = 0
        return _NO_TANGENT, dy, _NO_TANGENT, d_value


def _is_element(index: Any, ndim: int | None) -> bool:
    """Whether ``index`` selects one element of an array of ``ndim`` dimensions: an integer
    for each."""
    if type(index) is not tuple:
        return ndim == 1 and (type(index) is int or issubclass(type(index), np.integer))
    if len(index) != ndim:
        return False
    for part in index:
        if type(part) is not int and not issubclass(type(part), np.integer):
            return False
    return True


# --- augmented assignment, ufunc out= and ufunc.at ------------------------------------------

_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
_PASSING = {dis.opmap[name] for name in ("SWAP", "ROT_THREE", "ROT_TWO", "CACHE",
                                          "EXTENDED_ARG", "NOP") if name in dis.opmap}


_STORE_FAST = dis.opmap["STORE_FAST"]
_STORE_NAMED = {dis.opmap[name] for name in ("STORE_NAME", "STORE_GLOBAL", "STORE_DEREF",
                                              "STORE_ATTR")}


def _store_after(frame: Any) -> int | None:
    """The instruction with which Python stores the result of the augmented operation running
    in ``frame`` (``a[index] op= t``: STORE_SUBSCR; ``a op= t``: a store to the name or
    attribute), or None when something else follows."""
    code, offset = frame.f_code.co_code, frame.f_lasti + 2
    while offset < len(code):
        instruction = code[offset]
        if instruction not in _PASSING:
            return instruction
        offset += 2
    return None


def _stores_into_subscript(frame: Any) -> bool:
    """Whether the augmented operation running in ``frame`` is ``a[index] op= t`` (Python then
    stores the result with ``a[index] = result``), judged from the instructions after it."""
    return _store_after(frame) == _STORE_SUBSCR


def _out_references(kwargs: dict) -> int:
    """The reference count of the ``out=`` array of a ufunc call that reached
    ``__array_ufunc__`` (measured here, for the real call and the probe alike)."""
    return sys.getrefcount(kwargs["out"][0])


class _Probe:
    """A stand-in for a traced operand: how many references NumPy's ``a op= t`` holds to a
    plain ``a`` that one name (a local variable, or an attribute) holds alone."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _PLAIN_MINIMUM.append(_out_references(kwargs))
        return kwargs["out"][0]


class _Holder:
    __slots__ = ("array",)


_PLAIN_MINIMUM: list = []


def _plain_minimum(local: bool) -> int:
    """The reference count of `_out_references` for an ``a op= t`` whose ``a`` nothing but its
    name holds: ``local``, a local variable; else an attribute (module and closure names load
    as attributes do)."""
    if not _PLAIN_MINIMUM:
        array = np.zeros(1)
        array += _Probe()
        holder = _Holder()
        holder.array = np.zeros(1)
        holder.array += _Probe()
    return _PLAIN_MINIMUM[0 if local else 1]


def augmented_plain(ufunc: Any, method: str, inputs: tuple, kwargs: dict, frame: Any) -> Any:
    """``a op= t`` (NumPy's ``ufunc(a, t, out=(a,))``) in ``frame`` where ``a`` is a plain float
    or complex array that nothing but the name being assigned holds (``self.x += dt * v``,
    with ``self.x = np.arange(n) * 1.0``): the array becomes a constant and takes the write,
    and Python binds the name to the traced result. None when ``a`` is held elsewhere too
    (NumPy would change it there, where the engine cannot follow) or this is not ``a op= t``."""
    if method != "__call__" or len(kwargs) != 1 or len(kwargs["out"]) != 1 or \
            len(inputs) != 2 or inputs[0] is not kwargs["out"][0]:
        return None
    references = _out_references(kwargs)
    store = _store_after(frame)
    if store != _STORE_FAST and store not in _STORE_NAMED:
        return None
    plain = inputs[0]
    if type(plain) is not np.ndarray or plain.base is not None or \
            not plain.flags.writeable or plain.dtype.kind not in WRITABLE_KINDS or \
            references > _plain_minimum(store == _STORE_FAST):
        return None
    value = plain
    for level in _levels():
        if not level.finished:
            value = constant(level, value)
    return _augment(value, ufunc, inputs[1])


def augmented_subscript(ufunc: Any, method: str, inputs: tuple, kwargs: dict,
                        frame: Any) -> bool:
    """Whether NumPy's ``ufunc(a, t, out=(a,))`` on a plain ``a`` is ``a[i] op= t`` in the
    user's code (``frame``), whose result Python stores into the subscript."""
    return (method == "__call__" and len(kwargs) == 1 and len(kwargs["out"]) == 1
            and len(inputs) == 2 and inputs[0] is kwargs["out"][0]
            and _stores_into_subscript(frame))


def _is_array(value: Any) -> bool:
    return issubclass(type(value), np.ndarray) and value.ndim > 0


def augmented(target: Any, ufunc: Any, other: Any) -> Any:
    """``target op= other`` (``+=``, ``*=``, ...): written into ``target`` in place as NumPy
    does; a number or the element of ``a[i] op= t`` gets a new value (Python stores it)."""
    if not _is_array(primal_value(target.primal)):  # (no name may hold the storage here)
        return NotImplemented  # numbers are immutable: Python falls back to `t = t op other`
    if _stores_into_subscript(sys._getframe(2)):
        # `a[i] op= t`: Python writes the result into a[i] next. A view of `a` is copied
        # first, so that the operation's rule keeps no view of the array being written.
        if type(target.primal) is not np.ndarray or target.primal.base is not None:
            target = target.copy()
        return ufunc(target, other)
    return _augment(target, ufunc, other)


def _augment(target: Any, ufunc: Any, other: Any) -> Any:
    """``target op= other`` for a traced array ``target``, in place."""
    # The operation runs on a copy (O(size), as the operation itself), so that its rule keeps
    # the copy, not the storage about to be written (which would copy it, or refuse a write
    # into an input array).
    operand = target.copy()
    result = ufunc(operand, operand if other is target else other)
    if not np.can_cast(result.dtype, target.dtype, "same_kind"):
        raise TypeError(
            f"Cannot cast ufunc '{ufunc.__name__}' output from {result.dtype} to "
            f"{target.dtype} with casting rule 'same_kind' (as NumPy: `a op= t` keeps a's "
            f"dtype). Write `a = a op t` for a new array of the wider dtype.")
    write(target, Ellipsis, result)
    return target


def ufunc_out(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc(*inputs, out=...)`` where an output is traced: the result is computed as a new
    value and written into the output array."""
    out = kwargs.pop("out")
    out = out if isinstance(out, tuple) else (out,)
    if method != "__call__" or len(out) != 1 or kwargs.get("where", True) is not True:
        raise TracingError(
            f"np.{ufunc.__name__}(..., out=...) into a traced array is supported for plain "
            f"calls with one output and no where=; use the returned value instead.")
    target = out[0]
    if type(target) is not Traced:
        raise TracingError(_plain_out_message(ufunc, inputs, target))
    result = ufunc(*inputs, **kwargs)
    write(target, Ellipsis, result)
    return target


# Where the plain arrays that cannot take traced values come from, and what to write instead:
# said by every error about a write into one (here and in ad/dispatch/methods.py).
PLAIN_ARRAY_CAUSES = (
    "The engine follows the float and complex arrays the program makes while it is "
    "differentiated (np.zeros, np.empty, np.array, np.asarray of a list, copies, arithmetic "
    "on them, in your code or in a package's); this array was made otherwise: before the "
    "differentiated function was called (a buffer kept between calls: make it inside the "
    "function), from an integer array (`np.arange(n) * 1.0`: write np.arange(n, "
    "dtype=float)), or by one of the libraries whose arrays stay plain (NumPy's and SciPy's "
    "internals, pandas, ...: copy it with np.array(a) inside the function). Or build the "
    "values in a list and np.stack(values) them.")


def _plain_out_message(ufunc: Any, inputs: tuple, out: Any) -> str:
    return (f"np.{ufunc.__name__}(..., out=a) writes a traced value into the plain NumPy array "
            f"`a`, which the engine cannot follow: use the returned value, or write into an "
            f"array the engine follows. " + PLAIN_ARRAY_CAUSES)


def ufunc_at(ufunc: Any, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.at(a, index, b)`` into a traced ``a``: ``np.add.at``/``np.subtract.at`` at any
    index (repeats add up, in one write); other ufuncs in one write where no position
    repeats, else one position at a time, in order, as NumPy applies them."""
    if kwargs or len(inputs) not in (2, 3):
        raise TracingError(f"np.{ufunc.__name__}.at: unexpected arguments.")
    target, index = inputs[0], inputs[1]
    if type(target) is not Traced:
        raise TracingError(_plain_out_message(ufunc, inputs, target).replace(
            "(..., out=a)", ".at(a, ...)"))
    if type(index) is list or (type(index) is tuple and list in map(type, index)):

        index = normalize_index(index)
    if ufunc in (np.add, np.subtract) and len(inputs) == 3:
        value = inputs[2] if ufunc is np.add else -inputs[2]
        _add_at(target, index, value)
        return None
    shape = np.shape(primal_value(target.primal))
    if has_integer_array(index):
        positions = flat_positions(shape, index)
        if np.unique(positions).size != positions.size:
            _ufunc_at_in_turn(ufunc, target, shape, positions, inputs[2:])
            return None
    current = target[index]
    write(target, index, ufunc(current, *inputs[2:]))
    return None


def _ufunc_at_in_turn(ufunc: Any, target: Any, shape: tuple, positions: np.ndarray,
                      operands: tuple) -> None:
    """``ufunc.at`` at repeated positions, as NumPy applies it: one element at a time, in
    order (one recorded write per position: O(number of positions))."""
    if operands:
        operand = operands[0]
        if np.shape(primal_value(operand)) != positions.shape:
            operand = np.broadcast_to(operand, positions.shape)
        operand = np.reshape(operand, -1)
    for k, position in enumerate(positions.ravel().tolist()):
        element = np.unravel_index(position, shape)
        arguments = (operand[k],) if operands else ()
        write(target, element, ufunc(target[element], *arguments))


def _add_at(target: Any, index: Any, value: Any) -> None:
    level = target.tape
    if type(value) is not Traced and isinstance(value, (list, tuple)):
        value = np.array(value)
    value_primal, value_node = _value_at(level, value)
    storage = _lifted(_own_primal(level, target), value_primal)
    np.add.at(storage, index, value_primal)
    target.primal = storage
    if level.forward:
        value_tangent = unthunk(value_node)
        if not isinstance(value_tangent, AbstractZero):
            size = getattr(level, "size", None)  # a batched forward trace
            tangent = _lifted(_own_tangent(target, size), value_tangent)
            if size is None:
                np.add.at(tangent, index, value_tangent)
            elif type(tangent) is np.ndarray:
                for direction in range(size):  # each direction's tangent, a view, in place
                    np.add.at(tangent[direction], index, value_tangent[direction])
            else:
                raise TracingError("np.add.at into an array inside a batched jacfwd/hessian "
                                   "of a higher derivative is not supported; write "
                                   "out[i] = out[i] + v instead.")
            target.node = tangent
        _refresh_views(target)
        return
    _record_write(level, target, index, value_primal, value_node, None, True)
    _refresh_views(target)


def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    """``np.fill_diagonal(a, val)`` into a traced ``a`` (2-D, as NumPy's common case)."""
    if type(a) is not Traced or a.ndim != 2 or wrap:
        raise TracingError("np.fill_diagonal into a traced array is supported for 2-D arrays "
                           "without wrap=; write `a[i, i] = v` for other cases.")
    positions = np.arange(min(a.shape))
    value = val if np.ndim(primal_value(val)) == 0 else val[:positions.size]
    write(a, (positions, positions), value)


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """``np.copyto(dst, src)`` into a traced ``dst``: ``dst[...] = src`` (``where=``: only
    there), NumPy's casting rule checked on the values' dtypes."""
    if type(dst) is not Traced:
        raise TracingError(_plain_out_message(np.copyto, (), dst).replace(
            "np.copyto(..., out=a)", "np.copyto(a, ...)"))
    source_dtype = getattr(src, "dtype", None) or np.result_type(primal_value(src))
    if not np.can_cast(source_dtype, dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {source_dtype} to {dst.dtype} according "
                        f"to the rule {casting!r}")
    if where is True:
        write(dst, Ellipsis, src)
    else:
        mask = np.broadcast_to(primal_value(where), dst.shape)
        write(dst, mask, np.broadcast_to(src, dst.shape)[mask] if np.ndim(
            primal_value(src)) else src)


def _place(arr: Any, mask: Any, vals: Any) -> None:
    """``np.place(arr, mask, vals)`` into a traced ``arr``: ``arr[mask] = vals`` with ``vals``
    repeated cyclically to the number of True entries, as NumPy does (NumPy's own checks run
    first, on the values)."""
    if type(arr) is not Traced:
        raise TracingError(_plain_out_message(np.place, (), arr).replace(
            "np.place(..., out=a)", "np.place(a, ...)"))
    plain_mask = np.asarray(primal_value(mask), dtype=bool)
    _NUMPY_PLACE(np.array(primal_value(arr)), plain_mask, primal_value(vals))
    mask = np.reshape(plain_mask, arr.shape)
    count = int(np.count_nonzero(mask))
    if count == 0:
        return
    flat = np.ravel(vals)
    write(arr, mask, flat[np.arange(count) % flat.shape[0]])


def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """``np.put(a, ind, v)`` into a traced ``a``: ``a.flat[ind] = v``, ``v`` repeated cyclically
    to the number of indices and the indices wrapped or clipped by ``mode``, as NumPy does
    (NumPy's own checks run first, on the values). Of an index given twice the last write
    stays, as in NumPy, and only its value gets the position's cotangent."""
    if type(a) is not Traced:
        raise TracingError(_plain_out_message(np.put, (), a).replace(
            "np.put(..., out=a)", "np.put(a, ...)"))
    positions = np.ravel(np.asarray(primal_value(ind))).astype(np.intp)
    _NUMPY_PUT(np.array(primal_value(a)), positions, primal_value(v), mode)
    if positions.size == 0:
        return
    size = a.size
    positions = positions % size if mode == "wrap" else np.clip(positions, 0, size - 1) \
        if mode == "clip" else np.where(positions < 0, positions + size, positions)
    flat = np.ravel(v)
    _write_last(a, positions, flat[np.arange(positions.size) % flat.shape[0]])


def _write_last(a: Any, positions: np.ndarray, values: Any) -> None:
    """``a.flat[positions] = values`` where a position given twice keeps its last value (as
    NumPy's writes do), and only that value gets the position's cotangent."""
    reversed_first = np.unique(positions[::-1], return_index=True)[1]
    last = np.sort(positions.size - 1 - reversed_first)
    write(a, np.unravel_index(positions[last], a.shape), values[last])


def _putmask(a: Any, mask: Any, values: Any) -> None:
    """``np.putmask(a, mask, values)`` into a traced ``a``: where ``mask`` is true at flat
    position ``i``, ``a.flat[i] = values.flat[i % values.size]``, as NumPy does."""
    if type(a) is not Traced:
        raise TracingError(_plain_out_message(np.putmask, (), a).replace(
            "np.putmask(..., out=a)", "np.putmask(a, ...)"))
    plain_mask = np.asarray(primal_value(mask), dtype=bool)
    _NUMPY_PUTMASK(np.array(primal_value(a)), plain_mask, primal_value(values))
    positions = np.flatnonzero(np.broadcast_to(plain_mask, a.shape))
    if positions.size:
        flat = np.ravel(values)
        write(a, np.unravel_index(positions, a.shape), flat[positions % flat.shape[0]])


def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """``np.put_along_axis(arr, indices, values, axis)`` into a traced ``arr``: the positions
    that ``np.take_along_axis`` would read, written with ``values`` broadcast to ``indices``'
    shape (of a position given twice, the last write stays)."""
    if type(arr) is not Traced:
        raise TracingError(_plain_out_message(np.put_along_axis, (), arr).replace(
            "np.put_along_axis(..., out=a)", "np.put_along_axis(a, ...)"))
    plain = np.asarray(primal_value(indices))
    _NUMPY_PUT_ALONG_AXIS(np.array(primal_value(arr)), plain, primal_value(values), axis)
    if axis is None:
        flat_positions = np.ravel(plain) % arr.size
    else:
        axis = axis + arr.ndim if axis < 0 else axis
        grid = list(np.indices(plain.shape, sparse=True))
        grid[axis] = plain % arr.shape[axis]
        flat_positions = np.ravel_multi_index(np.broadcast_arrays(*grid), arr.shape).ravel()
    _write_last(arr, flat_positions, np.ravel(np.broadcast_to(values, plain.shape)))


_NUMPY_PLACE = np.place
_NUMPY_PUT = np.put
_NUMPY_PUTMASK = np.putmask
_NUMPY_PUT_ALONG_AXIS = np.put_along_axis
IN_PLACE = {np.fill_diagonal: _fill_diagonal, np.copyto: _copyto, np.place: _place,
            np.put: _put, np.putmask: _putmask, np.put_along_axis: _put_along_axis}


def full(original: Any, args: tuple, kwargs: dict) -> Any:
    """``np.full``/``np.full_like`` with a traced fill value: an array of zeros (of NumPy's
    dtype for that fill value), then the value written into it."""
    position = 1
    name = "fill_value"
    fill = args[position] if len(args) > position else kwargs.get(name)
    if type(fill) is not Traced:
        return None
    if args and type(args[0]) is Traced:  # full_like(a, ...): only a's shape and dtype
        args = (primal_value(args[0]),) + args[1:]
    if len(args) > position:
        args = args[:position] + (np.zeros((), fill.dtype),) + args[position + 1:]
    else:
        kwargs = {**kwargs, name: np.zeros((), fill.dtype)}
    out = created(original(*args, **kwargs), depth=2)
    if type(out) is not Traced:
        out = constant(fill.tape, out)
    out[...] = fill
    return out


def _lifted(storage: Any, value: Any) -> Any:
    """``storage``, as a constant of ``value``'s level when ``value`` is traced and the storage
    is plain (see `_store`)."""
    if type(value) is Traced and type(storage) is not Traced:
        return constant(value.tape, storage)
    return storage



OWNING_PULLBACKS.add(WritePullback)
