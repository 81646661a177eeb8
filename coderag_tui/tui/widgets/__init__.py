"""Widgets of the main screen: file tree, chat, code viewer, status bar."""
