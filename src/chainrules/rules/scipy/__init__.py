"""Rules for SciPy, one folder per SciPy module (`special`, `stats`, `linalg`, `integrate`,
`optimize`, `signal`). Nothing here imports SciPy: each rule module is imported, and so
registered, when the program has imported the SciPy module it is for
(`chainrules.rules.load_scipy_rules`, which `SCIPY_RULES` drives). `arguments` holds what
the rules share about reading SciPy's calls.
"""
