"""Rules for ``scipy.signal``: `convolution` (``convolve``, ``correlate``, ``fftconvolve``,
``convolve2d``, ``correlate2d``, ``lfilter``); `savgol` (``savgol_filter`` in NumPy operations, which an
engine traces); `initial_state` (``lfilter`` and ``sosfilt`` with initial conditions, in
NumPy operations and the filter from rest).
"""
