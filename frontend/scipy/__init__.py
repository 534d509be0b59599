"""kiln.scipy implementation."""
