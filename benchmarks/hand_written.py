"""The workloads of higher_order.py differentiated by hand in NumPy: each gradient and each
Hessian-vector product written out, with no engine.

They measure the arithmetic a forward-over-reverse ``hvp`` cannot avoid: the output's
tangent beside each value, and each cotangent's tangent beside the cotangent. Their time
ratio is what hvp/grad tends to when an engine's own work per operation is negligible, and
``grad + (hand hvp - hand grad)`` bounds an engine's hvp from below: it must do its
gradient's work, plus that extra arithmetic.

    >>> import numpy as np
    >>> x, v = np.array([0.5, -0.2, 0.1]), np.array([1.0, 0.0, 2.0])
    >>> gradient, product = HAND_WRITTEN["rosenbrock"]
    >>> bool(np.allclose(product(x, v), (gradient(x + 1e-6 * v) - gradient(x - 1e-6 * v)) / 2e-6))
    True
"""

from __future__ import annotations

import numpy as np


def rosenbrock_grad(x):
    a = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[1:] += 200.0 * a
    g[:-1] += -400.0 * a * x[:-1] - 2.0 * (1.0 - x[:-1])
    return g


def rosenbrock_hvp(x, v):
    a = x[1:] - x[:-1] ** 2
    da = v[1:] - 2.0 * x[:-1] * v[:-1]
    h = np.zeros_like(x)
    h[1:] += 200.0 * da
    h[:-1] += -400.0 * (da * x[:-1] + a * v[:-1]) + 2.0 * v[:-1]
    return h


def mlp_grad(w, X, y):
    W1, w2 = w[:320].reshape(10, 32), w[320:]
    h = np.tanh(X @ W1)
    g_out = 2.0 * (h @ w2 - y) / y.shape[0]
    g_pre = np.outer(g_out, w2) * (1.0 - h * h)
    return np.concatenate([(X.T @ g_pre).ravel(), h.T @ g_out])


def mlp_hvp(w, v, X, y):
    W1, w2 = w[:320].reshape(10, 32), w[320:]
    dW1, dw2 = v[:320].reshape(10, 32), v[320:]
    h = np.tanh(X @ W1)
    slope = 1.0 - h * h
    dh = slope * (X @ dW1)
    g_out = 2.0 * (h @ w2 - y) / y.shape[0]
    dg_out = 2.0 * (dh @ w2 + h @ dw2) / y.shape[0]
    g_h = np.outer(g_out, w2)
    dg_h = np.outer(dg_out, w2) + np.outer(g_out, dw2)
    dg_pre = dg_h * slope - 2.0 * h * dh * g_h
    return np.concatenate([(X.T @ dg_pre).ravel(), dh.T @ g_out + h.T @ dg_out])


def rnn_grad(w, U):
    W = w.reshape(16, 16)
    states = [U[:, 0] * 0.0]
    for t in range(U.shape[1]):
        states.append(np.tanh(W @ states[-1] + U[:, t]))
    g, gW = np.ones(16), np.zeros((16, 16))
    for t in range(U.shape[1] - 1, -1, -1):
        h = states[t + 1]
        g_pre = g * (1.0 - h * h)
        gW += np.outer(g_pre, states[t])
        g = W.T @ g_pre
    return gW.ravel()


def rnn_hvp(w, v, U):
    W, dW = w.reshape(16, 16), v.reshape(16, 16)
    states, tangents = [U[:, 0] * 0.0], [np.zeros(16)]
    for t in range(U.shape[1]):
        h, dh = states[-1], tangents[-1]
        new = np.tanh(W @ h + U[:, t])
        states.append(new)
        tangents.append((1.0 - new * new) * (dW @ h + W @ dh))
    g, dg, dgW = np.ones(16), np.zeros(16), np.zeros((16, 16))
    for t in range(U.shape[1] - 1, -1, -1):
        h, dh = states[t + 1], tangents[t + 1]
        slope = 1.0 - h * h
        g_pre = g * slope
        dg_pre = dg * slope - 2.0 * h * dh * g
        dgW += np.outer(dg_pre, states[t])
        dgW += np.outer(g_pre, tangents[t])
        g, dg = W.T @ g_pre, dW.T @ g_pre + W.T @ dg_pre
    return dgW.ravel()


def scalar_loop_grad(x):
    return np.array([3.0 * x[i] ** 2 for i in range(x.shape[0])])


def scalar_loop_hvp(x, v):
    return np.array([6.0 * x[i] * v[i] for i in range(x.shape[0])])


# name -> (gradient(x, **constants), hvp(x, v, **constants))
HAND_WRITTEN = {
    "rosenbrock": (rosenbrock_grad, rosenbrock_hvp),
    "mlp": (mlp_grad, mlp_hvp),
    "rnn": (rnn_grad, rnn_hvp),
    "scalar_loop": (scalar_loop_grad, scalar_loop_hvp),
}
