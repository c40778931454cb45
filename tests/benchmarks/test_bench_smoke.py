"""Smoke test of the benchmark harness: chainrules only, one tiny size of each workload.

Runs ``benchmarks/run.py --quick`` in a subprocess (as ``make bench`` does), then checks that
results.md, results.json and the plots are written and that chainrules' gradients, kept with
--keep-gradients, equal the closed forms.  No peer library is needed.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chainrules

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import run as bench_run  # noqa: E402
import workloads  # noqa: E402

needs_engine = pytest.mark.skipif(not hasattr(chainrules, "grad"),
                                  reason="chainrules.grad (the engine) does not exist yet")


def closed_form(workload: str, inputs):
    """The gradients, written out here independently of the harness (RNN: hand-written BPTT)."""
    if workload.startswith("scalar_loop") or workload == "vectorize":
        (x,) = inputs
        return (2 * x,)
    if workload in ("column_loop", "vectorized"):
        (X,) = inputs
        return (np.cos(X) * X + np.sin(X),)
    if workload == "rnn":
        return workloads.rnn_gradient(*inputs)
    if workload == "heat":
        return (_heat_adjoint(*inputs),)
    raise AssertionError(f"no closed form for {workload}")


def _heat_adjoint(u0, steps=workloads.HEAT_STEPS, r=workloads.HEAT_R):
    """The heat scheme vectorized, then its transpose applied to 2 u[-1], step by step."""
    u = u0.copy()
    for _ in range(steps):
        nxt = np.zeros_like(u)
        nxt[1:-1] = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = nxt
    g = 2.0 * u
    for _ in range(steps):
        back = np.zeros_like(g)
        back[1:-1] += (1.0 - 2.0 * r) * g[1:-1]
        back[2:] += r * g[1:-1]
        back[:-2] += r * g[1:-1]
        g = back
    return g


def _central_differences(function, x, step=1e-5):
    gradient = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = step
        gradient[i] = (function(x + e) - function(x - e)) / (2 * step)
    return gradient


@needs_engine
def test_quick_run_writes_report_and_gradients_match_closed_forms(tmp_path):
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--no-peers",
         "--sizes-per-workload", "1", "--keep-gradients", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr

    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["workloads"]) == set(workloads.WORKLOADS)
    markdown = (tmp_path / "results.md").read_text()
    assert "## Growth exponents" in markdown
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pass
    else:
        for name in workloads.WORKLOADS:
            png = tmp_path / f"{name}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png

    for name, workload in workloads.WORKLOADS.items():
        size = workload.quick_sizes[0]
        [cr] = [p for p in results["points"]
                if p["workload"] == name and p["library"] == "chainrules"]
        assert cr["size"] == size
        assert cr["status"] == "ok", cr
        assert cr["time"] > 0 and cr["rss_growth"] >= 0 and cr["tracemalloc_peak"] > 0
        inputs = workload.make_inputs(size)
        with np.load(tmp_path / "raw" / f"{name}-chainrules-{size}.npz") as archive:
            got = [archive[f"arr_{i}"] for i in range(len(archive.files))]
        if name == "pendulum":   # an ODE solved to 1e-10: central differences to about 1e-5
            options = workload.options(size)
            want = (_central_differences(lambda p: workloads.pendulum(p, **options), *inputs),)
        else:
            want = closed_form(name, inputs)
        assert len(got) == len(want)
        for g, w, x in zip(got, want, inputs):
            assert g.dtype == x.dtype, (name, g.dtype, x.dtype)   # float32 stays float32
            rtol = 1e-5 if x.dtype == np.float32 or name == "pendulum" else 1e-10
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max(),
                                       err_msg=name)
        [forward] = [p for p in results["points"]
                     if p["workload"] == name and p["library"] == "numpy"]
        assert forward["status"] == "ok" and forward["time"] > 0


def test_gradient_check_marks_a_wrong_gradient_as_failed(tmp_path, capsys):
    workload = workloads.WORKLOADS["scalar_loop_f64"]
    (x,) = workload.make_inputs(5)
    right, wrong = tmp_path / "right.npz", tmp_path / "wrong.npz"
    np.savez(right, 2 * x)
    np.savez(wrong, 2 * x + np.array([0, 0, 1e-3, 0, 0]))
    point = [{"library": "chainrules", "status": "ok", "gradients_file": str(right)},
             {"library": "torch", "status": "ok", "gradients_file": str(wrong)}]
    bench_run.check_gradients(workload, 5, point, keep_files=False)
    assert point[0]["status"] == "ok"
    assert point[1]["status"] == "mismatch"
    assert "closed form" in point[1]["error"] and "chainrules" in point[1]["error"]
    assert "GRADIENT MISMATCH: torch" in capsys.readouterr().err
    assert not right.exists() and not wrong.exists()


def test_a_float64_gradient_of_float32_input_fails_chainrules_only(tmp_path):
    workload = workloads.WORKLOADS["scalar_loop_f32"]
    (x,) = workload.make_inputs(4)
    for name in ("cr", "peer"):
        np.savez(tmp_path / f"{name}.npz", (2 * x).astype(np.float64))
    point = [{"library": "chainrules", "status": "ok", "gradients_file": str(tmp_path / "cr.npz")},
             {"library": "autograd", "status": "ok", "gradients_file": str(tmp_path / "peer.npz")}]
    bench_run.check_gradients(workload, 4, point, keep_files=False)
    assert point[0]["status"] == "mismatch" and "float64" in point[0]["error"]
    assert point[1]["status"] == "ok" and "float64" in point[1]["note"]


@needs_engine
def test_writes_benchmark_quick_run_agrees_with_its_no_mutation_baseline(tmp_path):
    out = tmp_path / "writes.md"
    completed = subprocess.run([sys.executable, str(BENCHMARKS / "writes.py"), "--quick",
                                "--out", str(out)], capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "MISMATCH" not in completed.stdout
    table = out.read_text()
    assert "| fill loop | 1000 |" in table and "| 2-D column fill | 1000 |" in table


def test_dask_memory_benchmark_checks_its_gradients_at_a_small_size():
    pytest.importorskip("dask.array", reason="the dask extra")
    import dask_memory

    for mode in ("numpy", "dask", "numpy-resident", "dask-resident"):
        result = dask_memory.measure(mode, 4e6)  # 4 MB: a few chunks of the benchmark's size
        assert result["gradient_ok"], mode  # against the closed form 2 X^T r / n
        assert result["gradient_type"] == "ndarray" and result["growth_mib"] >= 0


def test_vectorized_benchmark_checks_every_gradient_against_its_hand_written_one():
    pytest.importorskip("scipy")
    import vectorized

    for name in vectorized.WORKLOADS:
        result = vectorized.measure(name, quick=True, repeats=1)
        assert result["ok"], name  # chainrules' gradient equals the hand-written one
        assert result["time"]["hand"] == 1.0 and result["memory"]["chainrules"] > 0


def test_hand_written_vectorized_gradients_match_finite_differences():
    pytest.importorskip("scipy")
    import vectorized

    for name in ("glm", "gp", "chain"):
        loss, hand = vectorized.WORKLOADS[name]
        inputs = vectorized._inputs(name, quick=True)
        x = inputs[0]
        direction = np.random.default_rng(1).standard_normal(x.shape)
        step = 1e-6
        numeric = (loss(x + step * direction, *inputs[1:]) -
                   loss(x - step * direction, *inputs[1:])) / (2 * step)
        np.testing.assert_allclose(np.sum(hand(*inputs)[1] * direction), numeric, rtol=1e-5)


def test_linalg_pullback_table_runs_at_a_small_size():
    pytest.importorskip("scipy")
    import linalg_pullbacks

    rng = np.random.default_rng(0)
    for name, (function, args, kwargs) in linalg_pullbacks._cases(8, rng).items():
        assert linalg_pullbacks.measure(function, args, kwargs, 1, rng) > 0, name


def test_per_operation_benchmark_checks_its_gradients_at_small_sizes():
    pytest.importorskip("scipy")
    import per_operation

    for name in per_operation._inputs(quick=True):
        result = per_operation.measure(name, quick=True, repeats=1)
        assert result["ok"], name  # closed forms, or central differences
        assert result["ratio"] > 0


def test_installed_package_benchmark_checks_every_gradient_by_central_differences():
    pytest.importorskip("scipy")
    pytest.importorskip("labtools", reason="the test package make test installs")
    import installed_package

    results = installed_package.measure(1)
    assert len(results) == 21 and results["median"] > 0  # twenty functions and the median
    loss, x = installed_package.workloads()["running_sums"]
    # the check can fail: a gradient off by a factor is caught
    right = chainrules.grad(loss)(x)
    installed_package.check_gradient("running_sums", loss, x, right)
    with pytest.raises(AssertionError, match="central difference"):
        installed_package.check_gradient("running_sums", loss, x, 1.01 * right)
