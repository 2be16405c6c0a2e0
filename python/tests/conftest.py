"""Puts python/ on sys.path so the tests import probegate_guard as the engine runs it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
