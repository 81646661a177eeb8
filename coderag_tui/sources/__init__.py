"""Getting a repository: local folders, remote git URLs, and the files worth indexing."""
