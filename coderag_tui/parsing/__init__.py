"""Language detection, tree-sitter extraction (units, calls, imports) and cAST chunking."""
