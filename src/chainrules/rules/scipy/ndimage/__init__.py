"""``scipy.ndimage`` written in NumPy for traced values: `filters` (``correlate``,
``convolve``, their 1-D forms, ``gaussian_filter``, ``uniform_filter``, ``sobel``,
``prewitt``, ``laplace``, ``gaussian_laplace``, ``gaussian_gradient_magnitude``) and `interpolation` (``map_coordinates``, ``shift`` and ``zoom`` of
order 0 and 1)."""
