"""Rules for ``scipy.integrate``: `quadrature` (``quad``, ``quad_vec``, ``trapezoid``,
``cumulative_trapezoid``, ``simpson``) and `ode` (``odeint``, ``solve_ivp``).
"""
