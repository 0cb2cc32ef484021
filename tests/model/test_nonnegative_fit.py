"""The time model's solver ends on the exact non-negative optimum (issue 57)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import lsq_linear

from experiments.estimate.nonnegative import nonnegative_least_squares


def _bound_active_problem() -> tuple[np.ndarray, np.ndarray]:
    # Five columns, the target made of the first alone minus a little of the others:
    # the unconstrained fit wants the other four negative, so at the optimum they sit
    # exactly on their bound, as flux-distribute's distribute parameters do.
    rng = np.random.default_rng(57)
    matrix = rng.uniform(0.5, 2.0, size=(40, 5))
    target = 3.0 * matrix[:, 0] - 0.05 * matrix[:, 1:].sum(axis=1)
    return matrix, target


def test_parameters_that_belong_at_zero_are_exactly_zero() -> None:
    matrix, target = _bound_active_problem()
    solution = nonnegative_least_squares(matrix, target)
    assert solution[0] > 0
    assert (solution[1:] == 0.0).all()


def test_the_optimum_is_at_least_as_good_as_the_iterative_solver() -> None:
    matrix, target = _bound_active_problem()
    exact = nonnegative_least_squares(matrix, target)
    iterative = lsq_linear(matrix, target, bounds=(0.0, np.inf)).x
    assert np.linalg.norm(matrix @ exact - target) <= np.linalg.norm(matrix @ iterative - target)


def test_an_unconstrained_optimum_is_the_ordinary_least_squares_one() -> None:
    rng = np.random.default_rng(58)
    matrix = rng.uniform(0.5, 2.0, size=(30, 3))
    target = matrix @ np.array([1.0, 2.0, 0.5]) + rng.normal(0, 0.01, 30)
    ordinary, *_ = np.linalg.lstsq(matrix, target, rcond=None)
    np.testing.assert_allclose(nonnegative_least_squares(matrix, target), ordinary, rtol=1e-9)
