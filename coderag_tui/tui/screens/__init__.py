"""Screens: the main screen, help, the symbol palette and a list picker."""
