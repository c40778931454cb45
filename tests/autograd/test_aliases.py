"""chainrules.autograd.numpy and .scipy are NumPy and SciPy themselves, in every import style,
without a second copy of any module."""

import subprocess
import sys

import numpy

import chainrules.autograd  # noqa: F401


def test_numpy_alias_in_every_import_style():
    import chainrules.autograd.numpy as anp
    import chainrules.autograd.numpy.random as npr
    import chainrules.autograd.numpy.linalg
    from chainrules.autograd.numpy import random
    assert anp is numpy and npr is numpy.random and random is numpy.random
    assert chainrules.autograd.numpy.linalg is numpy.linalg
    assert numpy.__spec__.name == "numpy" and numpy.random.__name__ == "numpy.random"


def test_scipy_alias_is_lazy_and_the_real_module():
    code = ("import sys, chainrules.autograd; assert 'chainrules.autograd.scipy' not in "
            "sys.modules; import chainrules.autograd.scipy.special as s, scipy.special; "
            "assert s is scipy.special; from chainrules.autograd.scipy.stats import norm; "
            "import scipy.stats; assert norm is scipy.stats.norm")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gradient_through_the_aliases():
    import chainrules.autograd.numpy as np
    import chainrules.autograd.scipy.special as special
    from chainrules.autograd import grad
    x = np.array([0.5, 1.5])
    g = grad(lambda x: np.sum(special.expit(x)))(x)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(g, s * (1 - s), rtol=1e-12)


def test_from_package_import_alias():
    from chainrules.autograd import numpy as anp, scipy as asp
    import scipy
    assert anp is numpy and asp is scipy
