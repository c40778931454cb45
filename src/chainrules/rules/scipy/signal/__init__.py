"""Rules for ``scipy.signal``: `convolution` (``convolve``, ``correlate``, ``fftconvolve``,
``convolve2d``, ``correlate2d``, ``lfilter``); `savgol` (``savgol_filter`` in NumPy
operations, which an engine traces).
"""
