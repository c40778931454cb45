"""Rules for ``scipy.optimize``: `implicit` (solutions of ``root``, ``fsolve`` and
``minimize`` by the implicit function theorem).
"""
