"""Rules for ``scipy.signal``: `convolution` (``convolve``, ``correlate``, ``fftconvolve``,
``convolve2d``, ``correlate2d``, ``lfilter``); `savgol` (``savgol_filter`` and ``sosfilt``
in NumPy operations and ``lfilter`` calls, which an engine traces).
"""
