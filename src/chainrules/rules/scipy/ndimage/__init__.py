"""``scipy.ndimage`` written in NumPy for traced values: `filters` (``correlate``,
``convolve``, their 1-D forms, ``gaussian_filter``) and `interpolation` (``map_coordinates`` of
order 0 and 1)."""
