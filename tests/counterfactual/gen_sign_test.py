#!/usr/bin/env python3
"""Writes sign-test.json: exact two-sided sign-test p-values, computed independently of the
Rust code with Python's math.comb and fractions.Fraction (standard library only).

p = min(1, 2 * sum(C(n, i) for i in 0..=min(pos, neg)) / 2**n),  n = pos + neg (ties dropped).

Run: python3 tests/counterfactual/gen_sign_test.py > tests/counterfactual/sign-test.json
"""
import json
import sys
from fractions import Fraction
from math import comb

# (n, negatives) pairs; positives = n - negatives. Includes the textbook n = 20, k = 5
# (p = 0.0414) and the extremes of the supported range (n = 126).
CASES = [(0, 0), (1, 0), (1, 1), (2, 0), (5, 0), (5, 1), (6, 1), (6, 2), (8, 1), (10, 2),
         (10, 5), (12, 2), (15, 3), (19, 0), (20, 0), (20, 5), (20, 6), (25, 7), (30, 9),
         (40, 10), (50, 25), (60, 20), (100, 30), (126, 0), (126, 40), (126, 63), (7, 6)]


def p_value(pos, neg):
    n = pos + neg
    tail = sum(comb(n, i) for i in range(min(pos, neg) + 1))
    return Fraction(min(2 * tail, 2 ** n), 2 ** n)


def main():
    lines = []
    for n, neg in CASES:
        pos = n - neg
        p = p_value(pos, neg)
        lines.append(json.dumps({"positive": pos, "negative": neg, "num": str(p.numerator),
                                 "den": str(p.denominator), "approx": float(p)}))
    sys.stdout.write('{"@generated": "python3 tests/counterfactual/gen_sign_test.py (Python %d.%d)",\n'
                     ' "cases": [\n  ' % sys.version_info[:2] + ",\n  ".join(lines) + "\n ]}\n")


main()
