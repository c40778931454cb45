"""A small neural network fitted with adam (after autograd's neural_net example).

Parameters are a list of (weights, biases) tuples; the optimizer takes them as they are.
The autograd form differs only in its import lines.
"""
import chainrules.autograd.numpy as np
import chainrules.autograd.numpy.random as npr
from chainrules.autograd import grad
from chainrules.autograd.misc.optimizers import adam


def init_params(scale, sizes, rs=npr.RandomState(0)):
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


def objective(params, step):
    residuals = predict(params, inputs) - targets
    return np.mean(residuals ** 2) + 1e-4 * sum(np.sum(W ** 2) for W, _ in params)


inputs = np.linspace(-2, 2, 40).reshape(-1, 1)
targets = np.sin(2 * inputs)

losses = []


def record(params, step, gradient):
    losses.append(objective(params, step))


params = adam(grad(objective), init_params(0.5, [1, 16, 1]), callback=record,
              step_size=0.02, num_iters=300)
final_loss = objective(params, 0)

if __name__ == "__main__":
    print(f"loss: {losses[0]:.4f} -> {final_loss:.4f}")
