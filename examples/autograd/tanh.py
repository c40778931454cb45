"""Derivatives of tanh, one on top of the other (autograd's first example).

The autograd form of this program differs only in its import lines
(`import autograd.numpy as np`, `from autograd import elementwise_grad as egrad`).
"""
import chainrules.autograd.numpy as np
from chainrules.autograd import elementwise_grad as egrad


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


x = np.linspace(-7, 7, 50)
derivatives = [tanh]
for order in range(4):                  # first to fourth derivative
    derivatives.append(egrad(derivatives[-1]))
curves = [d(x) for d in derivatives]

if __name__ == "__main__":
    for order, curve in enumerate(curves):
        print(f"order {order}: max |d^{order} tanh| on [-7, 7] = {np.max(np.abs(curve)):.4f}")
