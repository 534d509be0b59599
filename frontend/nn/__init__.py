"""kiln.nn implementation (filled in by the NumPy issue)."""
__all__: list[str] = []
