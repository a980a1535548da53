"""memory_query's engine side: the guard that classifies a query, and the worker
process that runs it under a memory limit."""
