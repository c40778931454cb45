"""NumPy's API routed to the tape: what a traced value does as an ndarray (`methods`), array
writes (`writes`), array creation (`creation`), masked arrays (`masked`), NumPy's scalar types
(`scalar_types`), lists of traced values as array-likes (`array_likes`), and the names replaced
while a trace runs (`routing`, the top of this layer, over the tables of `routes`).
"""
