"""Non-negative least squares, solved exactly: the time model's and the box fit's solver.

scipy's `nnls` is Lawson and Hanson's active-set method: a finite algorithm that
ends on the exact constrained optimum, with a parameter that belongs at zero
exactly zero.  `lsq_linear`'s default ('trf', an interior method) stops at its
tolerance instead: on flux-distribute's EKS history it left three distribute
parameters at 9.8e-5 under one OpenBLAS kernel and 3.9e-4 under another, a
figure's dollars a cent apart from one CPU to the next (issue 57).  The exact
optimum moves only by floating-point rounding between kernels.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls

__all__ = ["nonnegative_least_squares"]


def nonnegative_least_squares(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The x >= 0 that minimises |matrix @ x - target| (Lawson-Hanson, exact)."""
    solution, _residual = nnls(np.asarray(matrix, float), np.asarray(target, float))
    return np.asarray(solution)
