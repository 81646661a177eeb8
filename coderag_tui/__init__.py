"""coderag: ask any code repository a question, in your terminal, offline."""

__version__ = "0.1.0"
