"""Logistic regression by plain gradient descent (autograd's tutorial program, in our words).

The autograd form differs only in its import lines (`import autograd.numpy as np`,
`from autograd import grad`).
"""
import chainrules.autograd.numpy as np
from chainrules.autograd import grad


def probability_of_true(weights, features):
    return 1.0 / (1.0 + np.exp(-np.dot(features, weights)))


def negative_log_likelihood(weights):
    p = probability_of_true(weights, features)
    return -np.sum(np.log(np.where(labels, p, 1 - p)))


features = np.array([[0.52, 1.12, 0.77],
                     [0.88, -1.08, 0.15],
                     [0.52, 0.06, -1.30],
                     [0.74, -2.49, 1.39],
                     [-0.31, 0.42, 0.60]])
labels = np.array([True, True, False, True, False])

gradient = grad(negative_log_likelihood)
weights = np.zeros(3)
initial_loss = negative_log_likelihood(weights)
for step in range(100):
    weights -= 0.05 * gradient(weights)
final_loss = negative_log_likelihood(weights)

if __name__ == "__main__":
    print("loss before:", initial_loss, "after:", final_loss)
