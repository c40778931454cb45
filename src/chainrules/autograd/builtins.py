"""autograd's ``builtins``: ``tuple``, ``list``, ``dict``, ``isinstance`` and ``type``.

autograd boxes containers, so it ships container types and type checks that see through its
boxes. chainrules differentiates Python's own containers (a tuple of traced values is a tuple,
and its gradient a tuple), and a traced value answers ``isinstance`` as the value it holds, so
these are Python's own.

>>> import numpy as np, chainrules.autograd as ag
>>> from chainrules.autograd.builtins import tuple as ag_tuple
>>> ag.grad(lambda x: ag_tuple((x, 2.0 * x))[1])(1.0)
2.0
"""

from __future__ import annotations

import builtins

__all__ = ["tuple", "list", "dict", "isinstance", "type", "SequenceBox", "DictBox"]

tuple = builtins.tuple
list = builtins.list
dict = builtins.dict
isinstance = builtins.isinstance
type = builtins.type
# autograd's box types of containers: a traced container is the container itself here
SequenceBox = builtins.tuple
DictBox = builtins.dict
