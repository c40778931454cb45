"""``scipy.fft`` for engines to trace: `transforms` (the discrete Fourier transforms through
NumPy's, the cosine and sine transforms as products with their matrices)."""
