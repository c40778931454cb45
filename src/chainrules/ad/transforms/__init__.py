"""The transforms, on top of the engine: the backward pass (`reverse`), forward mode (`forward`,
and `batching` for many directions at once), the public API (`api`: ``grad``, ``vjp``,
``jvp``, ``hessian``, ...) and `gradient_control` (``checkpoint``, ``stop_gradient``).
"""
