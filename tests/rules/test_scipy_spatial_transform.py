"""``scipy.spatial.transform``'s ``Rotation``, ``Slerp`` and ``RigidTransform`` on traced
values (src/chainrules/ad/dispatch/rotations.py, array_api_updates.py): SciPy 1.16 and later
compute them in compiled code or in array-API operations; a traced argument runs the latter.
Values against SciPy's, gradients against central differences, a closed form, a Hessian-vector
product and forward mode. Before, each raised from the compiled backend ("a traced value was
converted to a plain NumPy array"). Older SciPy compiles ``Rotation`` as one class: skipped
there (a traced value raises, naming the line)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

transform = pytest.importorskip("scipy.spatial.transform")

import chainrules as cr  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# a mark, not a module-level skip: tests/rules/all_cases.py imports every module here
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scipy.spatial.transform._rotation_xp") is None,
    reason="SciPy before 1.16 compiles Rotation as one class")

Rotation, Slerp = transform.Rotation, transform.Slerp
CASES: list = []   # no rules: SciPy's array-API backend is traced

VECTORS = np.random.default_rng(0).normal(size=(5, 3))
ANGLES = np.array([0.3, -0.5, 1.1])
QUATERNION = np.array([0.1, 0.2, 0.3, 0.9])

PROGRAMS = {
    "from_euler, apply": (lambda x: np.sum(Rotation.from_euler("xyz", x).apply(VECTORS)
                                           * VECTORS[::-1]), ANGLES),
    "from_euler degrees, intrinsic": (lambda x: np.sum(Rotation.from_euler(
        "ZYX", x, degrees=True).as_matrix() ** 3), 40 * ANGLES),
    "from_rotvec, as_matrix": (lambda x: np.sum(Rotation.from_rotvec(x).as_matrix() ** 3),
                               ANGLES),
    "from_quat, as_euler": (lambda x: np.sum(Rotation.from_quat(x).as_euler("zyx")),
                            QUATERNION),
    "from_matrix, as_quat": (lambda x: np.sum(Rotation.from_matrix(
        Rotation.from_rotvec(x).as_matrix()).as_quat()), ANGLES),
    "from_mrp, as_rotvec": (lambda x: np.sum(Rotation.from_mrp(x / 4).as_rotvec() ** 2),
                            ANGLES),
    "compose, inverse": (lambda x: np.sum((Rotation.from_rotvec(x) * Rotation.from_rotvec(
        x[::-1]).inv()).as_rotvec()), ANGLES),
    "magnitude": (lambda x: Rotation.from_rotvec(x).magnitude(), ANGLES),
    "apply a fixed rotation to traced vectors": (lambda v: np.sum(Rotation.from_euler(
        "xyz", ANGLES).apply(v.reshape(5, 3)) ** 3), VECTORS.ravel()),
    "align_vectors": (lambda x: np.sum(Rotation.align_vectors(
        VECTORS[:4] + x, VECTORS[1:5])[0].as_quat()), 0.1 * ANGLES),
    "slerp": (lambda x: np.sum(Slerp([0.0, 1.0], Rotation.from_rotvec(np.stack(
        [x, x[::-1]])))([0.3, 0.6]).as_quat()), ANGLES),
    "mean": (lambda x: np.sum(Rotation.from_rotvec(np.stack([x, 0.5 * x])).mean().as_quat()),
             ANGLES),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_rotations_in_their_parameters(name):
    program, x = PROGRAMS[name]
    value, gradient = cr.value_and_grad(program)(x)
    assert value == pytest.approx(program(x), rel=1e-12, abs=1e-13)   # SciPy's value
    np.testing.assert_allclose(gradient, numerical_gradient(program, x), rtol=1e-6,
                               atol=1e-9)


def test_rotation_about_an_axis_closed_form():
    # rotating e_x by t about e_z: (cos t, sin t, 0); d/dt = (-sin t, cos t, 0)
    t = 0.7
    jacobian = cr.jacobian(lambda s: Rotation.from_rotvec(
        np.array([0.0, 0.0, 1.0]) * s).apply(np.array([1.0, 0.0, 0.0])))(t)
    np.testing.assert_allclose(jacobian, [-np.sin(t), np.cos(t), 0.0], rtol=1e-14, atol=1e-15)


def test_second_order_and_forward_mode():
    program, x = PROGRAMS["from_euler, apply"]
    v = np.array([0.2, -0.4, 0.7])
    gradient = cr.grad(program)
    expected = (gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(program, x, v), expected, rtol=1e-6, atol=1e-9)
    assert cr.jvp(program, (x,), (v,))[1] == pytest.approx(gradient(x) @ v, rel=1e-12)


def test_rigid_transform():
    RigidTransform = getattr(transform, "RigidTransform", None)
    if RigidTransform is None:
        pytest.skip("no RigidTransform in this SciPy")

    def program(x):
        moved = RigidTransform.from_components(x[3:], Rotation.from_rotvec(x[:3]))
        return np.sum(moved.apply(VECTORS) ** 2 * VECTORS)

    x = np.concatenate([ANGLES, [1.0, -2.0, 0.5]])
    value, gradient = cr.value_and_grad(program)(x)
    assert value == pytest.approx(program(x), rel=1e-12)
    np.testing.assert_allclose(gradient, numerical_gradient(program, x), rtol=1e-6, atol=1e-9)


def test_geometric_slerp_and_scipys_vector_norm():
    # before: "a traced value was converted" (scipy.linalg.norm's BLAS nrm2, which
    # geometric_slerp calls)
    from scipy.linalg import norm
    from scipy.spatial import geometric_slerp

    def program(x):
        start, end = x[:3] / norm(x[:3]), x[3:] / norm(x[3:])
        path = geometric_slerp(start, end, np.linspace(0.0, 1.0, 4))
        return np.sum(path * np.arange(12.0).reshape(4, 3))

    x = np.array([1.0, 0.2, -0.3, 0.1, 1.0, 0.4])
    value, gradient = cr.value_and_grad(program)(x)
    assert value == pytest.approx(program(x), rel=1e-12)
    np.testing.assert_allclose(gradient, numerical_gradient(program, x), rtol=1e-6, atol=1e-9)
