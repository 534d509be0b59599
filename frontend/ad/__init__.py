"""Automatic differentiation: forward mode (jvp) and reverse mode (partial evaluation + transpose),
as IR-to-IR transformations. Rules are tables keyed by primitive."""
