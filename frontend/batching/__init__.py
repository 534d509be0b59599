"""Batching (kiln.vmap) as an IR transformation: a rule per primitive."""
