"""The rule registry: ``rrule`` and ``frule`` tables, keyed by function.

``rrule(f, *args, **kwargs)`` returns ``(y, pullback)``, where ``pullback(dy)`` returns one
cotangent for ``f`` itself and then one per positional argument; ``frule((df, *dargs), f,
*args)`` returns ``(y, dy)``. Both return ``None`` when ``f`` has no rule. Either may be given a
`RuleConfig` first (``rrule(config, f, *args)``); rules registered with ``config=True`` receive
it, the others don't see it. `RuleConfig` is defined here, with the tables it reaches back
into (``config.rrule_via_ad``).

Looking a rule up is one dict access (``rrule.lookup(f)``), for engines on the hot path.
"""

from __future__ import annotations

import inspect
import sys
import types
import warnings
from typing import Any, Callable

from .._compat import signature
from .naming import function_name
from .pushforward import pushforward_from_pullbacks
from .tangents import NoTangent, ZeroTangent

__all__ = ["RuleConfig", "DEFAULT_CONFIG", "RuleTable", "rrule", "frule", "non_differentiable", "NON_DIFFERENTIABLE",
           "PRIMITIVE_MARK", "UnusedRuleWarning", "recorded_whole", "writes_in_place",
           "WRITES_IN_PLACE", "add_lazy_loader", "load_lazy_rules", "DUAL_FORMS", "dual_form",
           "NUMBER_FORMS", "NumberForm", "INDEX_READ", "PRODUCT_FORMS", "ProductForm", "VIEW_FORMS", "ViewForm",
           "EXPANSIONS", "Expansion",
           "EVERY_COTANGENT_PULLBACKS",
           "register_alias", "stands_for", "register_method", "positional_call", "carries_derivative",
           "KeywordArgumentError"]

# The attribute by which an engine marks a Python function whose calls it records whole
# (chainrules' `primitive` decorator sets it), so that its rule is used.
PRIMITIVE_MARK = "__chainrules_primitive__"
# Libraries whose Python functions engines reach by their own dispatch or routing.
_DISPATCHED_LIBRARIES = frozenset({"numpy", "scipy"})



STANDS_FOR = "__chainrules_stands_for__"


def stands_for(f: Any) -> Any:
    """The function whose rules are ``f``'s: the one ``f`` stands in for, if an engine put
    ``f`` in its place while tracing (``f.__chainrules_stands_for__``), or the one ``f`` is an
    alias of (`register_alias`), else ``f``.

    >>> import numpy as np
    >>> stands_for(np.sum) is np.sum
    True
    """
    target = getattr(f, STANDS_FOR, None)
    if target is not None:
        return target
    try:
        return _ALIASES.get(f, f)
    except TypeError:  # unhashable callables are nobody's alias
        return f


# public function -> the function whose rules it has (`register_alias`)
_ALIASES: dict = {}


def register_alias(public: Any, target: Any) -> None:
    """Give calls of ``public`` the rules of ``target``, called with the same arguments:
    ``register_alias(operator.add, np.add)`` makes ``rrule(operator.add, x, y)`` (and the
    frule) those of ``np.add``, so that an engine that sees Python's operators finds their
    rules under the operators' own names.

    >>> import operator
    >>> import numpy as np
    >>> from chainrules.core.thunks import unthunk
    >>> unthunk(rrule(operator.mul, np.array([1.0, 2.0]), 3.0)[1](np.ones(2))[2])  # (lazy)
    3.0
    """
    _ALIASES[public] = target


_LAZY_LOADERS: list = []
_modules_seen = -1  # len(sys.modules) when the loaders last ran
_loading = False


def add_lazy_loader(loader: Callable[[], Any]) -> None:
    """Have ``loader()`` called before a lookup misses whenever modules were imported since
    the loaders last ran, and when engines start a trace (`load_lazy_rules`): it registers
    the rules of libraries that the program has imported since, so that a library's rules
    cost nothing until the program imports it. ``loader`` must be cheap when nothing new is
    there to register.

    >>> calls = []
    >>> add_lazy_loader(lambda: calls.append("loaded"))
    >>> rrule.lookup(object()) is None   # a miss: the new loader runs once
    True
    >>> rrule.lookup(object()) is None   # no module imported since: it does not run again
    True
    >>> calls
    ['loaded']
    >>> del _LAZY_LOADERS[-1]
    """
    global _modules_seen
    _LAZY_LOADERS.append(loader)
    _modules_seen = -1


def load_lazy_rules() -> bool:
    """Run the lazy loaders (`add_lazy_loader`) if modules were imported since they last ran;
    whether they ran. Cheap otherwise: one comparison of ``len(sys.modules)``.

    >>> isinstance(load_lazy_rules(), bool)
    True
    """
    global _modules_seen, _loading
    if len(sys.modules) == _modules_seen or _loading:  # not again from a loader's imports
        return False
    _loading = True
    try:
        for loader in list(_LAZY_LOADERS):  # each registers what its own imports bring
            loader()
    finally:
        _loading = False
        _modules_seen = len(sys.modules)
    return True


class UnusedRuleWarning(UserWarning):
    """A rule was registered for a function that engines never record as one operation."""

# Functions declared with `non_differentiable`: an engine may skip recording them.
NON_DIFFERENTIABLE: set = set()


class RuleTable:
    """A table of rules of one kind (reverse or forward), keyed by the function they are for."""

    def __init__(self, kind: str):
        self.kind = kind
        self._rules: dict[Any, tuple[Callable, bool]] = {}

    def register(self, f: Any, *, config: bool = False, replace: bool = False):
        """Decorator: register the decorated function as the rule for ``f``.

        With ``config=True`` the rule receives the `RuleConfig` as its first argument.

        >>> import numpy as np
        >>> @rrule.register(np.fabs, replace=True)
        ... def _fabs_rule(x):
        ...     return np.fabs(x), lambda dy: (NoTangent(), np.sign(x) * dy)
        >>> rrule(np.fabs, -2.0)[1](1.0)
        (NoTangent(), np.float64(-1.0))
        """
        f = stands_for(f)

        def decorator(rule: Callable) -> Callable:
            if f in self._rules and not replace:
                raise ValueError(
                    f"{self.kind} for {function_name(f)} is already registered; pass replace=True to "
                    f"override it.")
            _warn_if_unused(f, self.kind)
            self._rules[f] = (rule, config)
            if self.kind == "rrule":
                NON_DIFFERENTIABLE.discard(f)  # a reverse rule replaces the declaration
            return rule

        return decorator

    def lookup(self, f: Any) -> tuple[Callable, bool | None] | None:
        """``(rule, needs_config)`` for ``f``, or ``None``: one dict access. ``needs_config``
        is ``None`` (false, like ``False``) for functions declared `non_differentiable`, so
        that an engine can skip them in the same access."""
        try:
            entry = self._rules.get(f)
        except TypeError:  # unhashable callables have no rule
            return None
        if entry is None:
            target = stands_for(f)
            if target is not f:
                entry = self._rules.get(target)
            if entry is None and load_lazy_rules():
                return self.lookup(f)
        return entry

    def __contains__(self, f: Any) -> bool:
        return self.lookup(f) is not None

    def functions(self) -> list:
        """Every function that has a rule in this table (among the modules imported so far:
        rules registered lazily, `add_lazy_loader`, appear once their library is imported)."""
        load_lazy_rules()
        return list(self._rules)

    def __repr__(self) -> str:
        return f"<{self.kind} table: {len(self._rules)} rules>"


def recorded_whole(f: Callable) -> Callable:
    """Mark the Python function ``f`` as one that engines record as one operation (calls
    reach its rule); chainrules' ``primitive`` decorator and engine-internal functions use it.

    >>> def double(x):
    ...     return 2 * x
    >>> recorded_whole(double) is double
    True
    """
    setattr(f, PRIMITIVE_MARK, True)
    return f


def _warn_if_unused(f: Any, kind: str) -> None:
    """A plain Python function is traced through by an engine, operation by operation, so a
    rule registered for it is never called; say so, and how to fix it."""
    if not isinstance(f, types.FunctionType) or getattr(f, PRIMITIVE_MARK, False):
        return
    if (f.__module__ or "").partition(".")[0] in _DISPATCHED_LIBRARIES:
        return
    warnings.warn(
        f"{kind} registered for {function_name(f)}, a plain Python function: an engine traces "
        f"through it operation by operation and never calls this rule. Decorate the function "
        f"with @chainrules.primitive, and register the rule for the decorated function:\n"
        f"    @chainrules.primitive\n    def {f.__name__}(...): ...\n"
        f"    @chainrules.{kind}.register({f.__name__})\n    def _(...): ...",
        UnusedRuleWarning, stacklevel=3)


# (class, method name) -> redirect(instance, args, kwargs) (`register_method`)
_METHODS: dict = {}


def register_method(owner: type, name: str, redirect: Callable) -> None:
    """Give the bound methods ``instance.<name>`` of instances of ``owner`` (and its
    subclasses) the rules of a registered function, so that ``rrule(st.norm.logpdf, x, m, s)``
    finds one: the method is a new object at each access and cannot be a key itself.

    ``redirect(instance, args, kwargs)`` returns ``(function, arguments, keywords,
    sources)``: the function whose rules apply, its positional ``arguments`` (the call's own
    positional arguments first) and constant ``keywords``, and for each argument after those the place in ``instance`` it was read
    from, ``(attribute, key)`` (``("args", 0)``, ``("kwds", "loc")``), or ``None`` for a
    default or a keyword argument of the call (constants). The pullback gives the call's
    positional arguments their cotangents, and the method itself a `Tangent` of its instance
    with the cotangents of what was read from it.
    """
    _METHODS[owner, name] = redirect


def _redirect_method(f: Any, args: tuple, kwargs: dict) -> tuple | None:
    instance, name = getattr(f, "__self__", None), getattr(f, "__name__", None)
    if instance is None or name is None or not _METHODS:
        return None
    for owner in type(instance).__mro__:
        redirect = _METHODS.get((owner, name))
        if redirect is not None:
            return redirect(instance, args, kwargs)
    return None


def _instance_cotangent(instance: Any, sources: list, cotangents: tuple) -> Any:
    """The `Tangent` of ``instance`` whose fields hold ``cotangents`` at ``sources``."""
    from .tangents import AbstractZero, Tangent

    fields: dict = {}
    for source, cotangent in zip(sources, cotangents):
        if source is None or isinstance(cotangent, AbstractZero):
            continue
        attribute, key = source
        container = getattr(instance, attribute)
        if attribute not in fields:
            fields[attribute] = ({} if isinstance(container, dict)
                                 else [ZeroTangent()] * len(container))
        fields[attribute][key] = cotangent
    if not fields:
        return NoTangent()
    return Tangent(type(instance), **{attribute: value if isinstance(value, dict) else tuple(value)
                                      for attribute, value in fields.items()})


def _instance_tangents(tangent: Any, sources: list) -> list:
    """The tangents of the values read from an instance at ``sources``, from its tangent."""
    from .tangents import AbstractZero

    if isinstance(tangent, AbstractZero):
        return [ZeroTangent()] * len(sources)
    found = []
    for source in sources:
        value: Any = ZeroTangent()
        if source is not None:
            attribute, key = source
            container = getattr(tangent, attribute, ZeroTangent())
            if not isinstance(container, AbstractZero):
                try:
                    value = container[key]
                except (KeyError, IndexError):
                    value = ZeroTangent()
        found.append(value)
    return found


def _refuse_keywords(kind: str, f: Any, kwargs: dict) -> None:
    """A keyword argument that carries a derivative would get no cotangent (tangent): say so.
    ``out=`` is where a result goes, not an input: the rules that take it say what they do."""
    for key, value in kwargs.items():
        if key != "out" and carries_derivative(value):
            raise KeywordArgumentError(
                f"{kind}({function_name(f)}, ...): the keyword argument {key}= carries a "
                f"derivative, and rules give cotangents to positional arguments only, so it "
                f"would get none. Pass it by position (chainrules.positional_call(f, args, "
                f"kwargs) moves it there), or, for a constant your engine does not "
                f"differentiate, call {kind}.with_constants with the same arguments.")


class _RRuleTable(RuleTable):
    def __call__(self, *args: Any, **kwargs: Any):
        """``rrule([config,] f, *args, **kwargs) -> (y, pullback)`` or ``None``. A keyword
        argument that carries a derivative (a float or complex value) is refused
        (`KeywordArgumentError`); `with_constants` takes it as a constant."""
        f = args[1] if args and isinstance(args[0], RuleConfig) else args[0]
        if kwargs:
            _refuse_keywords("rrule", f, kwargs)
        return self.with_constants(*args, **kwargs)

    def with_constants(self, *args: Any, **kwargs: Any):
        """``rrule([config,] f, *args, **kwargs)`` with the keyword arguments held constant:
        what an engine calls once it has moved the ones it differentiates to their positions
        (`positional_call`).

        >>> import numpy as np
        >>> y, pullback = rrule.with_constants(np.clip, np.array([-1.0, 2.0]), a_min=0.0,
        ...                                    a_max=1.0)
        >>> y
        array([0., 1.])
        """
        config = DEFAULT_CONFIG
        if args and isinstance(args[0], RuleConfig):
            config, args = args[0], args[1:]
        f, *args = args
        entry = self.lookup(f)
        if entry is None:
            return self._call_method(config, f, tuple(args), kwargs)
        rule, needs_config = entry
        return rule(config, *args, **kwargs) if needs_config else rule(*args, **kwargs)

    def _call_method(self, config: Any, f: Any, args: tuple, kwargs: dict):
        """The rrule of a bound method registered with `register_method`, or ``None``."""
        redirected = _redirect_method(f, args, kwargs)
        if redirected is None:
            return None
        function, arguments, keywords, sources = redirected
        result = self.with_constants(config, function, *arguments, **keywords)
        if result is None:
            return None
        y, pullback = result
        count = len(args)
        instance = f.__self__

        def method_pullback(dy: Any) -> tuple:
            cotangents = tuple(pullback(dy))
            own = _instance_cotangent(instance, sources, cotangents[1 + count:])
            return (own, *cotangents[1:1 + count])

        return y, method_pullback


class _FRuleTable(RuleTable):
    def __call__(self, *args: Any, **kwargs: Any):
        """``frule([config,] (df, *dargs), f, *args, **kwargs) -> (y, dy)`` or ``None``. A
        keyword argument that carries a derivative is refused, as by `rrule`."""
        f = args[2] if args and isinstance(args[0], RuleConfig) else args[1]
        if kwargs:
            _refuse_keywords("frule", f, kwargs)
        return self.with_constants(*args, **kwargs)

    def with_constants(self, *args: Any, **kwargs: Any):
        """``frule([config,] (df, *dargs), f, *args, **kwargs)`` with the keyword arguments
        held constant (see `_RRuleTable.with_constants`)."""
        config = DEFAULT_CONFIG
        if args and isinstance(args[0], RuleConfig):
            config, args = args[0], args[1:]
        tangents, f, *args = args
        entry = self.lookup(f)
        if entry is None:
            redirected = _redirect_method(f, tuple(args), kwargs)
            if redirected is None:
                return None
            function, arguments, keywords, sources = redirected
            own = _instance_tangents(tangents[0], sources)
            return self.with_constants(config, (NoTangent(), *tangents[1:], *own), function,
                                       *arguments, **keywords)
        rule, needs_config = entry
        if needs_config:
            return rule(config, tangents, *args, **kwargs)
        return rule(tangents, *args, **kwargs)


rrule = _RRuleTable("rrule")
rrule.__doc__ = """The reverse-mode rule of ``f`` at ``args``: ``(y, pullback)``, or ``None``.

>>> import numpy as np, operator
>>> y, pullback = rrule(operator.getitem, np.array([1.0, 2.0, 3.0]), 0)
>>> y
np.float64(1.0)
>>> pullback(1.0 + 2.0j)[1].unthunk()   # projected onto the real primal
array([1., 0., 0.])
"""

frule = _FRuleTable("frule")
frule.__doc__ = """The forward-mode rule of ``f`` at ``args``: ``(y, dy)``, or ``None``.

>>> import numpy as np
>>> frule((NoTangent(), 1.0), np.sin, 0.0)
(np.float64(0.0), np.float64(1.0))
"""


def non_differentiable(*functions: Any) -> None:
    """Declare functions whose outputs do not depend differentiably on their inputs.

    Their rrule gives `NoTangent` for every argument and their frule gives a `ZeroTangent`
    output tangent, so an engine never raises "no rule" for them and never invents a gradient.
    An rrule registered for one of them later (``replace=True``) replaces the declaration.

    >>> import numpy as np
    >>> non_differentiable(np.argmax)
    >>> rrule(np.argmax, np.array([1.0, 3.0]))[1](1.0)
    (NoTangent(), NoTangent())
    """
    for f in functions:
        def reverse(*args, _f=f, **kwargs):
            count = len(args) + 1
            return _f(*args, **kwargs), lambda dy: (NoTangent(),) * count

        def forward(tangents, *args, _f=f, **kwargs):
            return _f(*args, **kwargs), ZeroTangent()

        NON_DIFFERENTIABLE.add(f)
        rrule._rules[f] = (reverse, None)
        frule._rules[f] = (forward, None)


FIRST_ORDER_ONLY: dict = {}  # function -> why its pullback is not differentiable (yet)


def first_order_only(f: Callable, reason: str) -> Callable:
    """Declare that ``f``'s rule works at order 1 only (its pullback, or its computation on
    traced values, cannot be differentiated yet), with the reason; the coverage report
    (``python -m chainrules.coverage``) prints it and the kit's ``test_rrule_order2`` refuses
    it by name, so no rule is first-order only silently.

    >>> def my_op(x): return x
    >>> first_order_only(my_op, "the pullback calls a C extension") is my_op
    True
    >>> del FIRST_ORDER_ONLY[my_op]
    """
    FIRST_ORDER_ONLY[f] = reason
    return f


class KeywordArgumentError(TypeError):
    """A keyword argument that carries a derivative cannot be given a position: rules
    differentiate positional arguments only (`positional_call`).

    >>> def scaled(x, *, scale):
    ...     return x * scale
    >>> try:
    ...     positional_call(scaled, (1.0,), {"scale": 2.0})
    ... except KeywordArgumentError as error:
    ...     print(str(error).split(": ", 1)[1][:53])
    the keyword argument scale= carries a derivative, and
    """


def carries_derivative(value: Any) -> bool:
    """Whether ``value`` can be perturbed: a float or complex number or array (of any array
    library), or a list or tuple holding one. Integers, booleans, strings and None cannot.

    >>> import numpy as np
    >>> carries_derivative(2.0), carries_derivative(np.ones(2)), carries_derivative(2)
    (True, True, False)
    """
    if issubclass(type(value), (float, complex)):
        return True
    if issubclass(type(value), (list, tuple)):
        return any(carries_derivative(item) for item in value)
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("f", "c")


def positional_call(f: Callable, args: tuple, kwargs: dict,
                    moves: Callable[[Any], bool] = carries_derivative) -> tuple:
    """``(function, args, kwargs)``: the call ``f(*args, **kwargs)`` with every keyword
    argument for which ``moves`` is true given by position, so that a rule gives it a
    cotangent (rules differentiate positional arguments only; keyword arguments are constants
    to them). Defaults before it are filled in; a keyword-only argument moves to ``f``'s
    declared positional form (`positional_form`). Raises `KeywordArgumentError`, naming
    ``f`` and the keyword, for one that cannot move. Engines call it with ``moves`` saying
    which values they trace; chainrules' engine does.

    >>> import numpy as np
    >>> f, args, kwargs = positional_call(np.average, (np.ones(2),), {"weights": np.ones(2)})
    >>> f is np.average, args[2] is not None, "weights" in kwargs
    (True, True, False)
    """
    def parameters(function: Callable) -> Any:
        try:
            return signature(function).parameters
        except (TypeError, ValueError):  # builtins without a signature
            return {}

    if not any(moves(value) for value in kwargs.values()):
        return f, args, kwargs
    positional = POSITIONAL_FORMS.get(f)
    if positional is not None and any(
            moves(value) and key in parameters(f) and
            parameters(f)[key].kind is inspect.Parameter.KEYWORD_ONLY
            for key, value in kwargs.items()):
        f = positional
    try:
        bound = signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError):
        bound = None
    if bound is not None:
        bound.apply_defaults()
        args, kwargs = bound.args, bound.kwargs
    for key, value in kwargs.items():
        if moves(value):
            raise KeywordArgumentError(
                f"{function_name(f)}: the keyword argument {key}= carries a derivative, and "
                f"it cannot be passed by position; rules differentiate positional arguments "
                f"only (keyword arguments are constants to them). Compute with it outside the "
                f"call, or register a rule that takes it positionally.")
    return f, args, kwargs


POSITIONAL_FORMS: dict = {}  # function -> the same function taking its keyword-only arguments


def positional_form(f: Callable, positional: Callable) -> Callable:
    """Declare ``positional``, which takes ``f``'s keyword-only arguments by position (same
    names, same meaning), as what an engine records when a keyword-only argument of ``f``
    holds a traced value: rules give cotangents to positional arguments, so ``positional``
    carries the rules (``scipy.integrate.simpson(y, *, x=None, ...)`` on SciPy 1.14).

    >>> def scaled(x, *, by=1.0): return x * by
    >>> def scaled_by_position(x, by=1.0): return scaled(x, by=by)
    >>> positional_form(scaled, scaled_by_position) is scaled_by_position
    True
    >>> del POSITIONAL_FORMS[scaled]
    """
    POSITIONAL_FORMS[f] = positional
    return recorded_whole(positional)  # engines record it as one operation, by its rules


WRITES_IN_PLACE: dict = {}  # function -> how to compute its result without writing in place


def writes_in_place(f: Callable, instead: str) -> Callable:
    """Declare that ``f`` writes into one of its arguments (``np.put_along_axis``): an engine
    refuses it on traced values with an error that says so and what to do ``instead``, rather
    than a "no rule" error or a gradient that misses the write.

    >>> def fill(out, value): out[...] = value
    >>> writes_in_place(fill, "use np.full_like(out, value)") is fill
    True
    >>> del WRITES_IN_PLACE[fill]
    """
    WRITES_IN_PLACE[f] = instead
    return f


DUAL_FORMS: dict = {}  # function -> (the rrule it belongs to, its dual form)


def dual_form(f: Callable, reverse: Callable, dual: Callable) -> None:
    """Declare ``dual``, the rrule ``reverse`` of ``f`` run on primal values and their
    tangents at once, for engines computing second derivatives by forward over reverse
    (``hvp``, ``jvp`` of ``grad``): one rule call per operation and per pullback, instead of
    tracing the rule's computations on values that carry tangents.

    ``dual(args, tangents, kwargs)`` takes plain arguments and one plain tangent per argument
    (``None`` for a constant) and returns ``None`` (not handled: the engine runs ``reverse`` on
    its traced values instead) or ``(y, dy, pullback, pullback_dual)``: the output, its
    tangent, the pullback ``reverse`` returns on the plain arguments, and the same pullback on
    a cotangent that carries a tangent: ``pullback_dual(dy, ddy, needed)`` (``ddy`` is the
    tangent of the cotangent ``dy``, or ``None`` for zero) returns, for each positional
    argument, ``None`` (not ``needed``, or not differentiable) or the pair ``(cotangent,
    tangent)``, projected, with ``None`` for a zero tangent. The tangent is the derivative of
    the cotangent along ``ddy`` and along the arguments' tangents. ``pullback_dual`` may be
    ``None`` for a function linear in its differentiable arguments whose pullback reads none
    of their values (``x[i]``): the engine then gives ``pullback`` the cotangent as it is.
    ``pullback`` may be ``None`` when ``pullback_dual`` is given (the engine answers a zero
    cotangent with zeros, and any other kind of cotangent by running ``reverse`` on its
    traced values).

    The form is used only while ``reverse`` is ``f``'s registered rrule: registering another
    rrule for ``f`` turns it off.

    >>> def twice(x): return 2 * x
    >>> def twice_rule(x): return 2 * x, lambda dy: (NoTangent(), 2 * dy)
    >>> dual_form(twice, twice_rule,
    ...           lambda args, tangents, kwargs: (2 * args[0], 2 * tangents[0],
    ...                                           twice_rule(args[0])[1], None))
    >>> DUAL_FORMS[twice][0] is twice_rule
    True
    >>> del DUAL_FORMS[twice]
    """
    DUAL_FORMS[f] = (reverse, dual)


NUMBER_FORMS: dict = {}  # function -> its NumberForm

# Types of pullbacks that take a second argument ``every``: with ``every=True`` they return
# every cotangent computed, none as a `Thunk` made so that a caller may skip some. An engine
# that will read them all (no constant argument) says so.
EVERY_COTANGENT_PULLBACKS: set = set()


# `NumberForm.partials` of an index read: ``x[i]`` of a float64 array and an integer; and of
# ``np.sum(x)``, a read of every element (index ``...``), whose cotangent is ``dy`` at each.
INDEX_READ = "index read"


class NumberForm:
    """How an engine may record ``f(a, b)`` on float64 numbers without calling ``f``'s rrule
    ``rule``: as a record of plain values, whose cotangents its backward pass computes inline.
    Scalar loops are made of such calls (``x[i] ** 2``, ``a * b + c``), and a pullback object
    made and called per operation would be most of their cost.

    - ``compute(a, b)`` is the output, where each argument is a float64 number or, for an
      argument not differentiated, a Python int or float;
    - ``partials`` holds, per argument, an integer constant, a function of ``(y, a, b)`` (the
      arguments as the ufunc saw them: a Python float, or int 0, as a float64), or ``None``
      for an argument without a derivative: the argument's cotangent is ``partial * dy``. ``partials`` is `INDEX_READ` for ``x[i]``
      (``a`` a float64 array, ``b`` an index selecting one element: an integer, or a tuple
      such as ``(k, i)``): ``a``'s cotangent is ``dy`` at position ``b``; and for a total sum
      ``compute(a)`` of a small float array (``np.sum``), recorded with the index ``...``;
    - ``keeps_output``: whether a partial reads ``y``;
    - ``pullback(payload)`` is the pullback ``rule`` returns for the same call, for any
      cotangent the engine does not handle inline. ``payload`` is what an engine records:
      ``(form, a, b, y)`` (``b`` is ``None`` for a function of one number, ``y`` is ``None``
      unless ``keeps_output``) or, for an index read, ``(form, b, shape of a, dtype of a)``;
    - ``payloads``: for a rule whose partials are constants (it reads no values), one payload
      per number type in ``shared_types`` that all calls share, with ones of that type
      standing in for the arguments; empty for other rules;
    - ``pullback_dual(args, y, tangents, derivatives, dy, ddy, needed)``, for forward over
      reverse (``hvp``): the rule's ``pullback_dual(dy, ddy, needed)`` (`dual_form`) for
      numbers ``args`` (as the partials read them), output ``y``, the arguments' tangents
      (``None`` for a constant) and the partials' values (``None`` for an argument not
      differentiated; or ``None``: computed then), the output's tangent being ``sum_i
      partial_i * tangent_i``; ``None`` (the default) for a rule without a dual form, for a rule whose
      partials are constants (its pullback takes a cotangent with a tangent as it is), and
      for an index read (linear too);
    - ``second_partials``: where ``pullback_dual`` is `scalar_rule`'s, its table ``H[i][j]``
      of second partial derivatives (entries ``None`` for zero, ints, or functions of
      ``(y, *args)``; ``()`` if every one is zero), from which an engine may compute the
      pairs of numbers inline (`chainrules.ad.transforms.reverse`); ``None`` otherwise.

    A form is used only while ``rule`` is ``f``'s registered rrule: registering another rrule
    for ``f`` turns it off. `scalar_rule` makes the forms of binary elementwise rules that have
    an ``on_scalars``.

    >>> import operator
    >>> def scaled(a, b): return 3.0 * a * b
    >>> def scaled_rule(a, b):
    ...     return scaled(a, b), lambda dy: (NoTangent(), 3.0 * b * dy, 3.0 * a * dy)
    >>> form = NumberForm(scaled_rule, scaled, (lambda y, a, b: 3.0 * b,
    ...                                         lambda y, a, b: 3.0 * a), False,
    ...                   lambda payload: scaled_rule(payload[1], payload[2])[1])
    >>> NUMBER_FORMS[scaled] = form
    >>> form.pullback((form, 2.0, 5.0, None))(1.0)
    (NoTangent(), 15.0, 6.0)
    >>> del NUMBER_FORMS[scaled]
    """

    __slots__ = ("rule", "compute", "partials", "keeps_output", "pullback", "payloads",
                 "pullback_dual", "second_partials")

    def __init__(self, rule: Callable, compute: Callable, partials: Any, keeps_output: bool,
                 pullback: Callable, shared_types: tuple = (),
                 pullback_dual: Callable | None = None):
        self.rule, self.compute, self.partials = rule, compute, partials
        self.keeps_output, self.pullback = keeps_output, pullback
        self.pullback_dual, self.second_partials = pullback_dual, None
        linear = partials is not INDEX_READ and all(type(partial) is int or partial is None
                                                    for partial in partials)
        self.payloads = {kind: (self, kind(1), kind(1) if len(partials) == 2 else None, None)
                         for kind in (shared_types if linear else ())}

    @staticmethod
    def argument(value: Any, kind: type) -> Any:
        """A constant argument as the partials read it next to numbers of type ``kind`` (as
        the ufunc saw it): a Python float, or int 0, as ``kind``; another int as it is
        (exact, and cheap: the 2 of ``x ** 2``); ``None`` for a value of another type.

        >>> import numpy as np
        >>> NumberForm.argument(0.5, np.float32), NumberForm.argument(2, np.float32)
        (np.float32(0.5), 2)
        """
        if type(value) is float or type(value) is int and not value:
            return kind(value)
        return value if type(value) is int else None


PRODUCT_FORMS: dict = {}  # function -> its ProductForm


class ProductForm:
    """How an engine may record a product ``f(a, b)`` of two real arrays (``W @ h`` in an
    RNN's step) without calling ``f``'s rrule ``rule``: as a record of the plain arguments,
    whose cotangents its backward pass computes by the formulas themselves, without a
    pullback object made and called per operation (the `NumberForm` of a product, whose
    cotangent is not a partial times ``dy``).

    - ``applies(a, b)``: whether the form covers these arguments (ndarrays both; the engine
      checks their types, the form the rest: dimensions, dtypes);
    - ``cotangents``: per argument, ``(a, b, dy) -> its cotangent`` for a ``dy`` of the
      output's shape and dtype, of the argument's shape and dtype, a new array (the engine
      adds later cotangents into it in place);
    - ``pullback(payload)``: the pullback ``rule`` returns for the same call, for any other
      cotangent (lazy, sparse, traced) and for the checking mode; ``payload`` is what an
      engine records, ``(form, a, b)``;
    - ``outer(a, b)`` (optional): which argument's cotangent is an outer product of two
      vectors, so that an engine may sum many of them by one matrix product instead of one
      buffer each: 1 for ``a``'s, ``np.multiply.outer(dy, b)`` (a matrix times a vector); 2
      for ``b``'s, ``np.multiply.outer(a, dy)`` (a vector times a matrix); 0 for neither.

    The product is bilinear, and each formula reads ``dy`` and the other argument only,
    linearly in each: so an engine running forward over reverse (``hvp``) may record it on
    values with tangents too, the output's tangent being ``f(da, b) + f(a, db)`` and each
    cotangent's the formula at ``ddy`` plus the formula at the other argument's tangent.

    A form is used only while ``rule`` is ``f``'s registered rrule: registering another rrule
    for ``f`` turns it off.

    >>> import numpy as np
    >>> def scaled_outer(a, b): return 2.0 * np.multiply.outer(a, b)
    >>> def scaled_outer_rule(a, b):
    ...     return scaled_outer(a, b), lambda dy: (NoTangent(), 2.0 * dy @ b, 2.0 * a @ dy)
    >>> form = ProductForm(scaled_outer_rule, lambda a, b: a.ndim == b.ndim == 1,
    ...                    (lambda a, b, dy: 2.0 * dy @ b, lambda a, b, dy: 2.0 * a @ dy),
    ...                    lambda payload: scaled_outer_rule(payload[1], payload[2])[1])
    >>> form.cotangents[1](np.ones(2), np.ones(3), np.ones((2, 3)))
    array([4., 4., 4.])
    """

    __slots__ = ("rule", "applies", "cotangents", "pullback", "outer")

    def __init__(self, rule: Callable, applies: Callable, cotangents: tuple,
                 pullback: Callable, outer: Callable | None = None):
        self.rule, self.applies, self.cotangents, self.pullback = \
            rule, applies, cotangents, pullback
        self.outer = outer


VIEW_FORMS: dict = {}  # function -> its ViewForm


class ViewForm:
    """How an engine may record a function that moves its argument's elements without
    changing them (``x.T``, ``x.reshape(4, 4)``, ``np.ravel(x)``) without calling its rrule
    ``rule``: as a record of the argument's shape, whose cotangent the backward pass computes
    as ``back(dy, shape)``, a view of ``dy`` (the rule's own formula: nothing computed,
    nothing projected).

    - ``applies(x, *options)``: whether the form covers the call (the engine checks that
      ``x`` is a real ndarray and that the options are constants);
    - ``back(dy, shape)``: the cotangent of an argument of ``shape`` for a ``dy`` of the
      output's shape and dtype;
    - ``pullback(payload)``: the pullback ``rule`` returns for the same call, for any other
      cotangent (lazy, sparse, traced) and for the checking mode; ``payload`` is what an
      engine records, ``(form, shape, dtype, options)``.

    A form is used only while ``rule`` is the function's registered rrule.

    >>> import numpy as np
    >>> def flipped(x): return x[::-1]
    >>> def flipped_rule(x): return flipped(x), lambda dy: (NoTangent(), dy[::-1])
    >>> form = ViewForm(flipped_rule, lambda x: x.ndim == 1, lambda dy, shape: dy[::-1],
    ...                 lambda payload: flipped_rule(np.zeros(payload[1], payload[2]))[1])
    >>> form.back(np.array([1.0, 2.0]), (2,))
    array([2., 1.])
    """

    __slots__ = ("rule", "applies", "back", "pullback")

    def __init__(self, rule: Callable, applies: Callable, back: Callable, pullback: Callable):
        self.rule, self.applies, self.back, self.pullback = rule, applies, back, pullback


EXPANSIONS: dict = {}  # function -> its Expansion


class Expansion:
    """How an engine may record a call of ``f`` without calling its rrule ``rule``: by
    calling ``expand`` on the traced arguments, NumPy calls that compute the same value bit
    for bit and that the engine records by their own forms (``np.mean(x)`` of a small float64
    array as ``np.sum(x) / x.size``: a total sum and a division of numbers, each recorded
    inline, where the rule's pullback is an object made and called per call; ``np.max(x)``
    with one maximum as ``x[i]``, an index read).

    - ``applies(*values)``: whether the expansion covers the call, for the arguments' plain
      values (the engine passes no keywords; it checks nothing else);
    - ``expand(values, *args)``: the value, computed from the traced arguments ``args``
      (constants as they are) by functions the engine records; ``values`` are their plain
      values, for what is read but not differentiated (``np.max(x)`` as ``x[i]``, ``i``
      its position);
    - ``first_order``: whether to expand calls on values of the engine's first level too;
      ``False`` where the rule records the call more cheaply and the expansion pays only
      under second derivatives, whose forms take its calls where the rule's pullback would
      be traced (``np.clip``).

    An expansion is used only while ``rule`` is ``f``'s registered rrule: registering another
    rrule for ``f`` turns it off.

    >>> import numpy as np
    >>> def mean_rule(x):
    ...     return np.mean(x), lambda dy: (NoTangent(), np.full(x.shape, dy / x.size))
    >>> expansion = Expansion(mean_rule, lambda x: x.dtype == np.float64,
    ...                       lambda values, x: np.sum(x) / x.size)
    >>> x = np.array([1.0, 2.0, 4.0])
    >>> expansion.expand((x,), x) == np.mean(x)
    np.True_
    """

    __slots__ = ("rule", "applies", "expand", "first_order")

    def __init__(self, rule: Callable, applies: Callable, expand: Callable,
                 first_order: bool = True):
        self.rule, self.applies, self.expand = rule, applies, expand
        self.first_order = first_order


class RuleConfig:
    """The capabilities of an AD system, passed to rules that ask for it.

    The base config has no AD of its own: ``rrule_via_ad`` uses a registered rule or fails
    with an error saying so. Engines subclass it and set ``has_reverse_mode`` /
    ``has_forward_mode``.

    >>> import numpy as np
    >>> y, pullback = RuleConfig().rrule_via_ad(np.sin, np.float64(0.0))
    >>> y, pullback(1.0)[1]
    (np.float64(0.0), np.float64(1.0))
    """

    has_reverse_mode: bool = False
    has_forward_mode: bool = False

    def rrule_via_ad(self, f: Callable, *args: Any, **kwargs: Any):
        """``(y, pullback)`` for ``f(*args, **kwargs)``, by a rule or by this config's AD."""
        result = rrule.with_constants(self, f, *args, **kwargs)
        if result is None:
            raise NotImplementedError(
                f"rrule_via_ad: no rule for {function_name(f)} and {type(self).__name__} has no "
                f"reverse-mode AD. Run this under chainrules.grad/vjp (whose config "
                f"differentiates any Python function), or register a rule for {function_name(f)}.")
        return result

    def frule_via_ad(self, tangents: tuple, f: Callable, *args: Any, **kwargs: Any):
        """``(y, dy)`` for ``f(*args, **kwargs)`` with input tangents ``tangents``.

        Uses ``f``'s frule; without one, derives ``dy`` from reverse mode (``rrule_via_ad``),
        one pullback per real output component: fine for the small outputs of the functions
        that higher-order rules call per element, row or piece.
        """
        result = frule.with_constants(self, tangents, f, *args, **kwargs)
        if result is not None:
            return result
        try:
            y, pullback = self.rrule_via_ad(f, *args, **kwargs)
        except NotImplementedError:
            raise NotImplementedError(
                f"frule_via_ad: no forward rule for {function_name(f)}, and no reverse rule to derive "
                f"one from. Register an frule for {function_name(f)}.") from None
        return y, pushforward_from_pullbacks(y, pullback, tangents)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


DEFAULT_CONFIG = RuleConfig()
