"""tests/ad: makes the ``check_grads`` helper importable from the test modules here."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
