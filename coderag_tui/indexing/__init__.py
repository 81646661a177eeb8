"""Keeping the index current: the structural indexer, graph resolution, embedding, watching."""
