#!/usr/bin/python3
"""Fits the rational erf of compiler/graph/ops.cc (erf_approx) and checks it in float32.

    scripts/fit-erf.py [P_DEGREE Q_DEGREE]        (default 6 4)

erf(x) ~ x * P(x^2) / Q(x^2) on 0 <= x <= 3.925 (past it erf rounds to 1 in float32),
Q(0) = 1, minimizing the largest relative error: the differential-correction method,
a linear program per step (scipy's HiGHS) over a grid dense near 0 and across the range.
Prints the coefficients (highest degree first, as ops.cc lists them, rounded to float32)
and the largest error of the float32 evaluation with FMA over a sample of floats, in ulp
and relative to erf. Needs Debian's python3-numpy and python3-scipy.
"""
import math
import sys

import numpy as np
from scipy.optimize import linprog

CLAMP = 3.925


def fit(n, m, steps=12):
    x = np.sort(np.concatenate([np.linspace(1e-4, CLAMP, 3000), np.geomspace(1e-6, 0.5, 300)]))
    f = np.array([math.erf(v) for v in x])
    s = x * x
    q_prev = np.ones_like(x)
    for _ in range(steps):
        # Unknowns p0..pn, q1..qm and the bound t: |x P(s) - f Q(s)| <= t f Q_prev(s).
        rows = np.hstack([np.stack([x * s**k for k in range(n + 1)], 1), np.stack([-f * s**k for k in range(1, m + 1)], 1)])
        w = (f * q_prev)[:, None]
        a_ub = np.vstack([np.hstack([rows, -w]), np.hstack([-rows, -w])])
        b_ub = np.concatenate([f, -f])
        cost = np.zeros(n + m + 2)
        cost[-1] = 1
        r = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * (n + m + 1) + [(0, None)], method="highs")
        if not r.success:
            sys.exit(f"fit-erf: the linear program failed: {r.message}")
        p, q = r.x[: n + 1], np.concatenate([[1.0], r.x[n + 1 : n + m + 1]])
        q_prev = np.polyval(q[::-1], s)
    return p.astype(np.float32), q.astype(np.float32)


def evaluate(p, q, xs):
    def fma(a, b, c):  # one rounding, as the FMA the CPU backend contracts to
        return (a.astype(np.float64) * b + c).astype(np.float32)

    a = np.minimum(np.abs(xs), np.float32(CLAMP)).astype(np.float32)
    s = (a * a).astype(np.float32)
    num, den = np.full_like(s, p[-1]), np.full_like(s, q[-1])
    for c in p[-2::-1]:
        num = fma(num, s, c)
    for c in q[-2::-1]:
        den = fma(den, s, c)
    return np.copysign(((a * num).astype(np.float32) / den).astype(np.float32), xs)


def main():
    n, m = (int(v) for v in sys.argv[1:3]) if len(sys.argv) >= 3 else (6, 4)
    p, q = fit(n, m)
    xs = np.concatenate([np.random.RandomState(1).uniform(-4.5, 4.5, 400000), np.geomspace(1e-30, 1, 2000)]).astype(np.float32)
    got = evaluate(p, q, xs).astype(np.float64)
    want = np.array([math.erf(float(v)) for v in xs])
    ulp = np.abs(got - want) / np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
    print("P:", ", ".join(f"{v:.9e}" for v in p[::-1]))
    print("Q:", ", ".join(f"{v:.9e}" for v in q[::-1]))
    print(f"float32 with FMA: largest error {ulp.max():.1f} ulp, {np.max(np.abs(got - want) / np.abs(want)):.2e} relative")


if __name__ == "__main__":
    main()
