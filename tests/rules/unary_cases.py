"""Kit cases for elementwise functions of one argument, shared by the rule test modules."""

from __future__ import annotations

import numpy as np

from chainrules.testing import case


def unary_cases(table: dict) -> list:
    """For each ``f: (real, complex)`` of ``table`` (lists of at least three values; complex
    None where ``f`` takes no complex input): float64 and float32 arrays, a Python float, a
    NumPy float32, a broadcast 2-d array, and complex128, complex64 and a Python complex."""
    cases = []
    for f, (real, complex_) in table.items():
        cases += [
            case(f, np.array(real)),
            case(f, np.array(real, np.float32)),
            case(f, float(real[0])),
            case(f, np.float32(real[1])),
            case(f, np.array(real[:3]).reshape(3, 1) * np.ones((1, 2))),
        ]
        if complex_ is not None:
            cases += [case(f, np.array(complex_)), case(f, np.array(complex_, np.complex64)),
                      case(f, complex(complex_[0]))]
    return cases
