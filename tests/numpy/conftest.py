"""tests/numpy: makes the ``_fd`` helpers (finite-difference gradients, vmap against a loop) importable here."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
