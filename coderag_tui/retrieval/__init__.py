"""Retrieval: route a query, search (BM25 + vectors + symbols, fused with RRF), expand the hits
through the graph, pack context into a token budget, and draw a repo map.

router -> lexical / vector / symbols / structural -> fusion -> search
search -> expansion -> packing -> compose;  repo_map for the overview.
"""
