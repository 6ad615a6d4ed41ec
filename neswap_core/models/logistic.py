"""The multinomial logistic regression every attacker and defender fits (SPEC §8): one place
for how it is solved (issue 21).

The objective is scikit-learn's (mean log-loss + ‖w‖² / (2 C n)) and the stopping rule is the
same for both of its smooth solvers (largest gradient element ≤ ``tol`` = 1e-4); only the path
to the optimum differs. ``lbfgs`` hands every iteration to SciPy's L-BFGS-B, whose subspace
step costs about memory² × coefficients: on a line-up of 40 companies × 21,000 terms (852,000
coefficients) it took 39 ms a call, two calls an iteration, 4.0 of a 6.3-second fit, the loss
and gradient the rest. ``newton-cg`` (truncated Newton: conjugate gradients on Hessian-vector
products, two sparse products a step) reaches the same stopping rule in 7–10 Newton steps
instead of 46–74 L-BFGS iterations, with a lower objective every time
(``benchmarks/logistic_solvers.py``): 4.9× faster on that line-up, 2.8× on the dev reading's
word model, 1.3× on its character model (4.2 million non-zeros: the products dominate either
way), the same on dense sentence vectors. Both solutions are within the tolerance of the exact
optimum, neither nearer it than the other by more than that (both ~0.02 in the largest
coefficient on the line-up above): the attacker is the same model, fitted faster.

The solve runs on single-precision features (``single_precision_fit.py``): newton-cg's time is the
sparse products X·V and Xᵀ·G of its conjugate gradients, which read X and V from memory, and
float32 halves what they read. On 9,628 synthetic passages of 40 companies (one BLAS thread)
a word 1–2-gram fit took 2.95 → 1.31 s and a char_wb 2–5-gram fit 9.29 → 4.68 s in the same
Newton steps, the coefficients within 4e-4 of the float64 solve's (the two solvers above differ
by 0.02): well inside the stopping rule, so the same model again. The fitted coefficients are
float64 (every score is computed as before, from float64 features).
"""

from __future__ import annotations

#: scikit-learn's solver for every multinomial logistic regression of the library.
SOLVER = "newton-cg"


def logistic_regression(*, C: float, max_iter: int, random_state: int | None = 0):
    """An unfitted multinomial logistic regression with the library's solver, solved in single
    precision (``single_precision_fit.SinglePrecisionFit``, a scikit-learn
    ``LogisticRegression``; ``C`` > 0: inverse regularisation strength; ``max_iter``: Newton
    steps at most)."""
    from .single_precision_fit import SinglePrecisionFit  # scikit-learn loads when a model is made

    return SinglePrecisionFit(C=C, max_iter=max_iter, random_state=random_state, solver=SOLVER)
