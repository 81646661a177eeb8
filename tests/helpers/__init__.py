"""Helpers shared by several test modules (fixtures that use them live in tests/conftest.py)."""
