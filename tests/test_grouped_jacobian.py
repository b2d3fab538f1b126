"""The fast refit's Jacobian, one evaluation per kind of platform factor: the same numbers as scipy's 2-point."""

from __future__ import annotations

import numpy as np
from scipy.optimize._numdiff import approx_derivative

from models.correction import _grouped_jacobian


def test_grouped_jacobian_equals_scipys_two_point_and_takes_one_evaluation_per_kind():
    platforms, keys = ["a", "b", "c"], ("link", "cpu")
    slots = [(p, k) for p in platforms for k in keys]
    rows = np.array(["a", "a", "b", "c", "c", "c"] + [p for p, _ in slots])  # samples, then each factor's prior
    rng = np.random.default_rng(0)
    weight = rng.uniform(0.5, 2.0, size=(6, 2))
    calls = [0]

    def fun(x: np.ndarray) -> np.ndarray:
        calls[0] += 1
        by = {p: x[2 * i: 2 * i + 2] for i, p in enumerate(platforms)}
        samples = [np.sin(weight[r] @ by[p]) + (weight[r, 0] * by[p][1]) ** 2 for r, p in enumerate(rows[:6])]
        return np.concatenate([samples, 0.3 * x])

    x = rng.normal(size=len(slots))
    x[2] = 0.0  # a factor at 1 (log 0): scipy's own small step
    expected = approx_derivative(fun, x, method="2-point", rel_step=1e-3)
    calls[0] = 0
    got = _grouped_jacobian(fun, slots, rows, keys, diff_step=1e-3)(x)
    assert np.allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert calls[0] == 1 + len(keys)  # f(x) and one per kind, not one per factor
