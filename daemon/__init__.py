"""memnestd: the one process that owns every memory database and the embedding model."""
