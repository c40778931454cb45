"""The bottom of the engine: the traced value and the tape.

`traced` (the value: its primal, its level, its node), `values` (what the tape records of a
value), `tape` (the levels of tracing, and recording an operation through its rule), `errors`
and `pairs` (cotangents of forward over reverse, summed as pairs of buffers). Nothing here
imports the dispatch layer or the transforms above it.
"""
