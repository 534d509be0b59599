import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launcher.py, the helper beside the tests
