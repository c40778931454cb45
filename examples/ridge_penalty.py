"""Tuning ridge penalties on validation loss, through scipy.optimize.minimize.

The inner problem fits ridge regression weights for one penalty per feature, ``exp(s)``; the
outer loss is the validation error of those weights. chainrules differentiates the outer
loss through the inner ``minimize`` by the implicit function theorem (docs/implicit.md), and
gradient descent on ``s`` tunes the penalties. The gradient, and the Hessian of the outer loss
(second order through the solver), are checked against the closed-form ridge solution.

Run it with ``PYTHONPATH=src python examples/ridge_penalty.py``.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

import chainrules as cr

rng = np.random.default_rng(0)
FEATURES = 6
w_true = rng.normal(size=FEATURES) * np.array([3.0, 2.0, 1.0, 0.1, 0.0, 0.0])
X_train, X_val = rng.normal(size=(25, FEATURES)), rng.normal(size=(200, FEATURES))
y_train = X_train @ w_true + rng.normal(size=25)
y_val = X_val @ w_true + rng.normal(size=200)


def training_loss(w: np.ndarray, s: np.ndarray) -> float:
    return np.sum((X_train @ w - y_train) ** 2) + np.sum(np.exp(s) * w ** 2)


def training_gradient(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """For the solver only (a tight solve); chainrules differentiates training_loss itself."""
    return 2 * X_train.T @ (X_train @ w - y_train) + 2 * np.exp(s) * w


def validation_loss(s: np.ndarray) -> float:
    w = scipy.optimize.minimize(training_loss, np.zeros(FEATURES), args=(s,),
                                jac=training_gradient, method="BFGS",
                                options={"gtol": 1e-7}).x
    return np.mean((X_val @ w - y_val) ** 2)


def closed_form(s: np.ndarray) -> float:
    w = np.linalg.solve(X_train.T @ X_train + np.diag(np.exp(s)), X_train.T @ y_train)
    return np.mean((X_val @ w - y_val) ** 2)


def finite_differences(f, s: np.ndarray, step: float = 1e-6) -> np.ndarray:
    return np.array([(f(s + e) - f(s - e)) / (2 * step) for e in np.eye(len(s)) * step])


def main() -> None:
    s = np.zeros(FEATURES)
    print(f"validation loss at s = 0: {validation_loss(s):.6f}")
    gradient = cr.grad(validation_loss)(s)
    error = np.max(np.abs(gradient - finite_differences(closed_form, s)))
    print(f"gradient through minimize vs closed form: max abs difference {error:.2e}")
    hessian = cr.hessian(validation_loss)(s)
    expected = np.stack([finite_differences(closed_form, s + e, 1e-5) -
                         finite_differences(closed_form, s - e, 1e-5)
                         for e in np.eye(FEATURES) * 1e-3]) / 2e-3
    print(f"Hessian (second order through minimize) vs closed form: max abs difference "
          f"{np.max(np.abs(hessian - expected)):.2e}")
    rate = 1.0
    for step in range(15):  # gradient descent with backtracking on the log-penalties
        loss, gradient = validation_loss(s), cr.grad(validation_loss)(s)
        while validation_loss(s - rate * gradient) > loss - 0.5 * rate * gradient @ gradient:
            rate /= 2
        s = s - rate * gradient
        rate *= 2
        if step % 3 == 2:
            print(f"step {step + 1}: validation loss {validation_loss(s):.6f}, "
                  f"penalties {np.array2string(np.exp(s), precision=3)}")


if __name__ == "__main__":
    main()
