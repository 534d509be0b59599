"""tests/optim: makes the ``_steps`` helpers (an optimizer run over gradients, NumPy equations replayed over the
same gradients) importable here."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
