"""labtools: a library-like package, written as third-party scientific packages are.

Its modules use the idioms that chainrules must follow in code it did not write: arrays
allocated then filled in loops, names bound from NumPy and ``math`` at import time, classes
that keep arrays and update them in place, array-API dispatch, and a value cache.
"""

__version__ = "0.1.0"
