"""Rules for ``scipy.spatial``: `distance` (``cdist``, ``pdist``, ``squareform``)."""
