"""Gradients over Dask arrays: equal to central differences of the same NumPy function, built
lazily (nothing computed during ``grad`` for Dask inputs, one ``dask.compute`` for NumPy
parameters), chunks kept, rules that cannot stay lazy refused by name, and the same gradients
on a dask.distributed LocalCluster of worker processes (docs/dask.md)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import chainrules as cr
from tests.ad.finite_differences import numerical_gradient

da = pytest.importorskip("dask.array", reason="the dask extra: pip install chainrules[dask]")
dask = pytest.importorskip("dask")
labtools = pytest.importorskip("labtools", reason="installed by `make test` (tests/site_package)")
from labtools import models  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.normal(size=(12, 4))
CHUNKS = (4, 2)

CASES = {
    "elementwise": lambda x: np.sum(np.exp(np.sin(x)) * x ** 2 / (1.0 + np.abs(x))),
    "tanh-log1p": lambda x: np.mean(np.log1p(np.tanh(x) ** 2)),
    "reductions over axes": lambda x: np.sum(np.max(x, axis=0) ** 2) + np.sum(
        np.mean(x, axis=1) ** 3),
    "keepdims": lambda x: np.sum((x - x.mean(axis=0, keepdims=True)) ** 2),
    "std and var": lambda x: np.sum(np.std(x, axis=0)) + np.var(x),
    "cumsum": lambda x: np.sum(np.cumsum(x, axis=0) ** 2),
    "matmul": lambda x: np.sum((x @ x.T) ** 2),
    "matrix-vector": lambda x: np.sum(np.tanh(x @ np.arange(1.0, 5.0))),
    "dot and einsum": lambda x: np.dot(x[:, 0], x[:, 1]) + np.einsum("ij,ij->", x, x),
    "slices and ints": lambda x: np.sum(x[3:10, 1:3] ** 2) + np.sum(x[5] * 2.0),
    "integer array": lambda x: np.sum(x[np.array([0, 5, 11])] ** 3),
    "repeated integer array": lambda x: np.sum(x[np.array([2, 7, 2, 2])] ** 3),
    "broadcasting": lambda x: np.sum((x[:, :, None] * x[:, None, :]) ** 2),
    "transpose and reshape": lambda x: np.sum(x.T.reshape(-1)[::3] ** 2),
    "where": lambda x: np.sum(np.where(x > 0, x, 0.1 * x) ** 2),
    "concatenate and stack": lambda x: np.sum(np.concatenate([x, 2 * x]) ** 2) + np.sum(
        np.stack([x, x ** 2]) ** 2),
    "log-sum-exp": lambda x: np.sum(np.log(np.sum(np.exp(x), axis=1))),
    "maximum and clip": lambda x: np.sum(np.maximum(x, 0.0)) + np.sum(np.clip(x, -0.5, 0.5) ** 2),
    "loop over blocks": lambda x: models.blockwise_sum_of_squares(x, 4),
}


class CountingScheduler:
    """Dask's threaded scheduler, counting the computations it is asked for."""

    def __init__(self):
        self.calls = 0

    def __call__(self, graph, keys, **kwargs):
        import dask.threaded

        self.calls += 1
        return dask.threaded.get(graph, keys, **kwargs)


@pytest.fixture
def counting():
    scheduler = CountingScheduler()
    with dask.config.set(scheduler=scheduler):
        yield scheduler


@pytest.mark.parametrize("name", list(CASES))
def test_gradient_over_a_dask_array_is_the_numpy_gradient(name, counting):
    f = CASES[name]
    gradient = cr.grad(f)(da.from_array(X, chunks=CHUNKS))
    assert counting.calls == 0  # built lazily: nothing computed during grad
    assert isinstance(gradient, da.Array) and gradient.chunks == da.from_array(
        X, chunks=CHUNKS).chunks and gradient.dtype == np.float64
    np.testing.assert_allclose(gradient.compute(), numerical_gradient(f, X), rtol=1e-6,
                               atol=1e-6)


def test_float32_data_keep_their_dtype_and_chunks():
    x = da.from_array(X.astype(np.float32), chunks=(3, 4))
    gradient = cr.grad(lambda x: np.sum(np.sin(x) * 2.0))(x)
    assert gradient.dtype == np.float32 and gradient.chunks == x.chunks
    np.testing.assert_allclose(gradient.compute(), 2 * np.cos(X.astype(np.float32)), rtol=1e-6)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_numpy_parameters_over_dask_data_are_computed_once(counting):
    y = (RNG.random(12) > 0.5).astype(float)
    w = np.array([0.3, -0.2, 0.5, 0.1])
    Xd, yd = da.from_array(X, chunks=(4, 4)), da.from_array(y, chunks=4)
    value, gradient = cr.value_and_grad(models.logistic_loss)(w, Xd, yd)
    assert counting.calls == 1  # value and gradient together, in one dask.compute
    assert type(gradient) is np.ndarray and np.ndim(value) == 0 and not isinstance(
        value, da.Array)
    z = X @ w
    np.testing.assert_allclose(gradient, X.T @ (_sigmoid(z) - y) / len(y), rtol=1e-12)
    np.testing.assert_allclose(value, np.mean(np.logaddexp(0.0, z) - y * z), rtol=1e-12)
    assert counting.calls == 1


def test_mean_square_with_parameters_in_a_dict_and_broadcasting(counting):
    y = RNG.normal(size=12)
    Xd, yd = da.from_array(X, chunks=(5, 4)), da.from_array(y, chunks=5)

    def loss(params):
        return np.mean((Xd @ params["w"] + params["b"] - yd) ** 2) + np.sum(
            (Xd + params["shift"]) ** 2)

    params = {"w": np.array([1.0, 0.5, -0.5, 2.0]), "b": 0.3, "shift": np.full(4, 0.2)}
    gradient = cr.grad(loss)(params)
    assert counting.calls == 1
    residual = X @ params["w"] + params["b"] - y
    np.testing.assert_allclose(gradient["w"], 2 * X.T @ residual / 12, rtol=1e-12)
    np.testing.assert_allclose(gradient["b"], 2 * np.mean(residual), rtol=1e-12)
    np.testing.assert_allclose(gradient["shift"], 2 * np.sum(X + 0.2, axis=0), rtol=1e-12)
    assert type(gradient["b"]) is float


def test_the_output_may_be_a_lazy_scalar_of_dask_parameters(counting):
    w = da.from_array(np.array([0.5, 1.0, -1.0, 0.2]), chunks=2)
    value, gradient = cr.value_and_grad(models.mean_square)(w, da.from_array(X, chunks=4),
                                                           np.zeros(12))
    assert counting.calls == 0 and isinstance(value, da.Array) and isinstance(gradient, da.Array)
    assert gradient.chunks == w.chunks
    computed_value, computed_gradient = dask.compute(value, gradient)
    np.testing.assert_allclose(computed_gradient, 2 * X.T @ (X @ w.compute()) / 12, rtol=1e-12)
    np.testing.assert_allclose(computed_value, np.mean((X @ w.compute()) ** 2), rtol=1e-12)


def test_the_programs_own_computes_run():
    Xd = da.from_array(X, chunks=4)

    def loss(w):
        scale = float(np.max(np.abs(Xd)))  # the program asks: it is computed
        return np.sum((Xd @ w) ** 2) / scale

    w = np.ones(4)
    np.testing.assert_allclose(cr.grad(loss)(w), 2 * X.T @ (X @ w) / np.max(np.abs(X)),
                               rtol=1e-12)


@pytest.mark.parametrize("function, named", [
    (lambda x: np.linalg.det(x[:4]), "numpy.linalg.det"),
    (lambda x: np.sum(np.sort(x, axis=0)[0]), "numpy.sort"),
    (lambda x: np.sum(np.kron(x, x)), "numpy.kron"),
])
def test_a_rule_dask_cannot_run_lazily_is_refused_by_name(function, named, counting):
    with pytest.raises(cr.TracingError, match=rf"{named} was called on a Dask array .*"
                                              r"\.compute\(\) on the input first"):
        cr.grad(function)(da.from_array(X, chunks=CHUNKS))
    assert counting.calls == 0  # refused before anything was computed


def test_traced_values_never_become_dask_chunks():
    with pytest.raises(cr.TracingError, match="a Dask array cannot hold one"):
        cr.grad(lambda w: np.sum(da.from_array(w, chunks=2) ** 2))(np.ones(4))
    with pytest.raises(cr.TracingError, match="a Dask array cannot hold one"):
        cr.grad(lambda w: np.sum(da.stack([w, w]) ** 2))(np.ones(4))


def test_a_lazy_mask_index_is_refused_with_the_remedy():
    with pytest.raises(TypeError, match=r"np.where\(mask, value, 0.0\)"):
        cr.grad(lambda x: np.sum(x[x > 0] ** 2))(da.from_array(X, chunks=CHUNKS))


def test_operations_reaching_dask_first_are_recorded():
    # Dask's operators and ufuncs meet the traced parameter first here (X on the left).
    Xd = da.from_array(X, chunks=4)

    def loss(w):
        return np.sum(np.multiply(Xd, w) ** 2) + np.sum((Xd - w) * 3.0) + np.sum(Xd @ w)

    w = np.array([0.1, 0.2, 0.3, 0.4])
    expected = np.sum(2 * X ** 2 * w, axis=0) - 3.0 * 12 + np.sum(X, axis=0)
    np.testing.assert_allclose(cr.grad(loss)(w), expected, rtol=1e-12)


def test_the_gradient_function_its_inputs_and_outputs_pickle():
    gradient = pickle.loads(pickle.dumps(cr.grad(models.mean_square)))
    y = RNG.normal(size=12)
    w = np.array([0.5, 1.0, -1.0, 0.2])
    Xd = pickle.loads(pickle.dumps(da.from_array(X, chunks=4)))
    result = pickle.loads(pickle.dumps(gradient(w, Xd, y)))
    np.testing.assert_allclose(result, 2 * X.T @ (X @ w - y) / 12, rtol=1e-12)
    lazy = pickle.loads(pickle.dumps(cr.grad(models.mean_square)(da.from_array(w, chunks=2),
                                                                   Xd, y)))
    np.testing.assert_allclose(lazy.compute(), result, rtol=1e-12)


def test_on_a_local_cluster_of_worker_processes():
    distributed = pytest.importorskip("distributed")
    y = RNG.normal(size=12)
    Xd, yd = da.from_array(X, chunks=4), da.from_array(y, chunks=4)
    ensemble = [RNG.normal(size=4) for _ in range(3)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0",
                                  silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        # One gradient over distributed data: the graph runs on the workers.
        w = ensemble[0]
        with distributed.get_task_stream(client) as stream:
            gradient = cr.grad(models.mean_square)(w, Xd, yd)
        np.testing.assert_allclose(gradient, 2 * X.T @ (X @ w - y) / 12, rtol=1e-12)
        assert len(stream.data) >= 3  # the chunks' tasks ran on the workers
        # Many gradients at once: one task per parameter set (ensembles, sweeps, bootstrap).
        futures = client.map(cr.grad(models.mean_square), ensemble, X=X, y=y)
        for w, result in zip(ensemble, client.gather(futures)):
            np.testing.assert_allclose(result, 2 * X.T @ (X @ w - y) / 12, rtol=1e-12)
        # A lazy gradient of Dask parameters, computed by the cluster.
        lazy = cr.grad(models.mean_square)(da.from_array(w, chunks=2), Xd, yd)
        np.testing.assert_allclose(client.compute(lazy).result(), 2 * X.T @ (X @ w - y) / 12,
                                   rtol=1e-12)
        workers = client.run(lambda: __import__("os").getpid())
        assert len(set(workers.values())) == 2  # two worker processes did the work


def test_forward_mode_and_hessian_vector_products_stay_lazy(counting):
    values = np.linspace(0.0, 1.0, 6)
    x = da.from_array(values, chunks=3)
    y, tangent = cr.jvp(lambda x: np.sin(x) ** 2, (x,), (da.ones(6, chunks=3),))
    product = cr.hvp(lambda x: np.sum(np.sin(x) ** 2), x, da.ones(6, chunks=3))
    assert counting.calls == 0 and isinstance(tangent, da.Array) and isinstance(product,
                                                                                 da.Array)
    np.testing.assert_allclose(tangent.compute(), np.sin(2 * values), rtol=1e-12)
    np.testing.assert_allclose(product.compute(), 2 * np.cos(2 * values), rtol=1e-12)


def test_projection_puts_cotangents_in_the_arrays_library_and_chunks():
    from chainrules.core.projection import ProjectionError, ProjectTo

    x = da.from_array(np.ones((4, 3), np.float32), chunks=(2, 3))
    projected = ProjectTo(x)(np.arange(12.0).reshape(4, 3) + 1j)
    assert isinstance(projected, da.Array) and projected.chunks == x.chunks
    assert projected.dtype == np.float32  # float32 stays float32, real stays real
    np.testing.assert_array_equal(projected.compute(), np.arange(12.0).reshape(4, 3))
    rechunked = ProjectTo(x)(da.ones((4, 3), chunks=(1, 3)))
    assert rechunked.chunks == x.chunks
    with pytest.raises(ProjectionError, match=r"shape \(4, 3\), got shape \(3,\)"):
        ProjectTo(x)(da.ones(3))


@pytest.mark.parametrize("kind", ["dense", "numpy", "sparse", "sparse repeated", "thunk"])
def test_accumulation_into_a_dask_array_is_the_eager_sum_and_mutates_nothing(kind):
    from chainrules.core.accumulate import accumulate
    from chainrules.core.sparse import SparseCotangent
    from chainrules.core.thunks import Thunk

    base = RNG.normal(size=(6, 2))
    acc = da.from_array(base, chunks=(3, 2))
    addend = RNG.normal(size=(6, 2))
    index = np.array([4, 1, 4]) if kind == "sparse repeated" else (slice(1, 3),)
    values = RNG.normal(size=(3, 2) if kind == "sparse repeated" else (2, 2))
    t = {"dense": lambda: da.from_array(addend, chunks=(2, 2)), "numpy": lambda: addend,
         "thunk": lambda: Thunk(lambda: da.from_array(addend, chunks=(3, 2))),
         "sparse": lambda: SparseCotangent(index, da.from_array(values), (6, 2), np.float64,
                                           like=acc),
         "sparse repeated": lambda: SparseCotangent(index, da.from_array(values), (6, 2),
                                                    np.float64, like=acc)}[kind]()
    expected = base.copy()
    if kind.startswith("sparse"):
        np.add.at(expected, index, values)
    else:
        expected += addend
    result = accumulate(acc, t, owned=True)
    result = result.unthunk() if hasattr(result, "unthunk") else result
    np.testing.assert_array_equal(np.asarray(result), expected)  # exactly, as eager
    np.testing.assert_array_equal(acc.compute(), base)  # the accumulator was not changed


def test_parameters_in_structures_and_a_refused_jacobian(counting):
    x = da.from_array(X, chunks=CHUNKS)
    gradient = cr.grad(lambda p: np.sum(p["x"] ** 2) * p["scale"])({"x": x, "scale": 2.0})
    # the Dask leaf's gradient stays lazy; the float's is a float, computed once
    assert isinstance(gradient["x"], da.Array) and gradient["x"].chunks == x.chunks
    assert type(gradient["scale"]) is float and counting.calls == 1
    np.testing.assert_allclose(gradient["scale"], np.sum(X ** 2), rtol=1e-12)
    np.testing.assert_allclose(gradient["x"].compute(), 4 * X, rtol=1e-12)
    counting.calls = 0
    with pytest.raises(TypeError, match="jacobian of .* a Dask array .* Use grad, vjp or jvp"):
        cr.jacobian(lambda x: x ** 2)(x)
    assert counting.calls == 0


def test_an_in_place_loop_into_a_dask_array_is_refused_by_name():
    def fill(x):
        out = np.zeros_like(x)
        for i in range(3):
            out[i] = x[i] ** 2  # a Dask array cannot hold a traced value
        return np.sum(out)

    with pytest.raises(cr.TracingError, match="a write into a Dask array"):
        cr.grad(fill)(da.from_array(X[:, 0], chunks=4))
