"""Helpers shared by test modules: servers on loopback, fixture repositories, the app's
drivers, PostgreSQL, and `marks` (what a fixture needs). A fixture several modules use is
defined here and imported into tests/conftest.py; no test module imports from another."""
