"""chainrules.autograd: HIPS autograd's public API on chainrules.

Porting an autograd program is a change of import lines::

    import autograd.numpy as np                  ->  import numpy as np
                                                     (or: import chainrules.autograd.numpy as np)
    from autograd import grad, elementwise_grad  ->  from chainrules.autograd import grad, ...
    from autograd.extend import primitive, defvjp -> from chainrules.autograd.extend import ...
    from autograd.misc.optimizers import adam    ->  from chainrules.autograd.misc.optimizers ...

Names and signatures follow autograd's (``grad(fun, argnum=0)``, ``make_vjp`` returning
``(vjp, ans)``, ``check_grads(fun, modes, order)(*args)``...). ``chainrules.autograd.numpy``
and ``chainrules.autograd.scipy`` are NumPy and SciPy themselves: chainrules differentiates
plain NumPy code, so no wrapped copy is needed.

**Complex convention.** autograd's gradient of a real function of a complex ``z`` is the
*conjugate* of chainrules' (``dL/dRe(z) - i dL/dIm(z)`` where chainrules gives ``dL/dRe(z) + i
dL/dIm(z)``). Inside ``chainrules.autograd`` the operators follow autograd's convention
(they conjugate on the way out, and VJPs given to `extend.defvjp` are read in it):

>>> import numpy as np
>>> import chainrules
>>> abs2 = lambda z: np.abs(z) ** 2
>>> chainrules.grad(abs2)(3 + 4j), grad(abs2)(3 + 4j)
((6+8j), (6-8j))

What else differs from autograd: docs/migrating-from-autograd.md.
"""

from . import _aliases
from .differential_operators import (checkpoint, deriv, elementwise_grad, grad, grad_and_aux,
                                     grad_named, hessian, hessian_tensor_product,
                                     hessian_vector_product, holomorphic_grad, jacobian,
                                     make_ggnvp, make_hvp, make_jvp, make_vjp, multigrad_dict,
                                     tensor_jacobian_product, value_and_grad,
                                     vector_jacobian_product)
from .extend import primitive

_aliases.install()

__all__ = ["checkpoint", "deriv", "elementwise_grad", "grad", "grad_and_aux", "grad_named",
           "hessian", "hessian_tensor_product", "hessian_vector_product", "holomorphic_grad",
           "jacobian", "make_ggnvp", "make_hvp", "make_jvp", "make_vjp", "multigrad_dict",
           "primitive", "tensor_jacobian_product", "value_and_grad", "vector_jacobian_product"]
