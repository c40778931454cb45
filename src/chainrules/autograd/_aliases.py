"""``chainrules.autograd.numpy`` and ``chainrules.autograd.scipy``: NumPy and SciPy themselves.

chainrules differentiates plain NumPy and SciPy code, so autograd's wrapped ``autograd.numpy``
is not needed: ``import chainrules.autograd.numpy as np`` gives the ``numpy`` module itself,
``import chainrules.autograd.numpy.random as npr`` gives ``numpy.random``, and
``chainrules.autograd.scipy.stats`` is ``scipy.stats`` (SciPy is imported only when such a name
is). One import hook maps the names; no module is copied or wrapped. autograd's modules that
are objects in SciPy (``import chainrules.autograd.scipy.stats.multivariate_normal as mvn``,
``...stats.norm``) import as the object itself.

>>> import numpy
>>> import chainrules.autograd.numpy as anp
>>> anp is numpy
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

ALIASES = {"chainrules.autograd.numpy": "numpy", "chainrules.autograd.scipy": "scipy"}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)  # a placeholder: `exec_module` puts the real one

    def exec_module(self, module: types.ModuleType) -> None:
        # A module may replace itself in sys.modules while it executes: the import system
        # then hands out the replacement (here, the NumPy or SciPy module, whose own __spec__
        # and __name__ are left untouched).
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _ObjectModuleLoader(importlib.abc.Loader):
    """autograd's modules that are objects in SciPy (``autograd.scipy.stats.multivariate_normal``
    is a module; ``scipy.stats.multivariate_normal`` a distribution object): the import gives
    the object itself (``mvn.logpdf`` is ``scipy.stats.multivariate_normal.logpdf``), which is
    also what the import system then binds in the parent (SciPy's) module: nothing changes
    there."""

    def __init__(self, owner: str, attribute: str):
        self.owner, self.attribute = owner, attribute

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        sys.modules[module.__name__] = getattr(importlib.import_module(self.owner),
                                               self.attribute)


def _object_spec(fullname: str, name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of the alias ``fullname`` of ``name`` when ``name`` is an attribute of a module
    (not a module); None when it is neither."""
    owner, _, attribute = name.rpartition(".")
    try:
        module = importlib.import_module(owner) if owner else None
    except ImportError:
        return None
    if module is None or not hasattr(module, attribute) or \
            isinstance(getattr(module, attribute), types.ModuleType):
        return None
    return importlib.machinery.ModuleSpec(fullname, _ObjectModuleLoader(owner, attribute))


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        for alias, real in ALIASES.items():
            if fullname == alias or fullname.startswith(alias + "."):
                name = real + fullname[len(alias):]
                try:
                    found = importlib.util.find_spec(name)
                except (ImportError, ValueError):
                    found = None
                if found is None:
                    return _object_spec(fullname, name)
                return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name),
                                                      is_package=found.submodule_search_locations
                                                      is not None)
        return None


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once): before the path finder, which
    would otherwise load a second copy of a NumPy submodule under the alias name."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
