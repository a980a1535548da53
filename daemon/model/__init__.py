"""The embedding model, loaded once per daemon."""
