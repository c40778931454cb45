"""Array attributes libraries read: ``.flags``, and dispatch through ``array_api_compat``."""

import numpy as np


def contiguous_norm(x):
    """A library that makes its input contiguous before using it."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    if not x.flags.writeable:
        x = x.copy()
    return np.sqrt(np.sum(x * x))


def array_api_softplus(x):
    """softplus, summed, in whatever array library ``x`` belongs to."""
    from array_api_compat import array_namespace

    xp = array_namespace(x)
    return xp.sum(xp.log(1.0 + xp.exp(x)))
