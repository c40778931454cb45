"""Rules for ``scipy.signal``: `convolution` (``convolve``, ``correlate``, ``fftconvolve``,
``convolve2d``, ``correlate2d``, ``lfilter``).
"""
