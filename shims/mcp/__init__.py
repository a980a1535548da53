"""memnest-mcp: the stdio MCP server of an editor window, a pipe to the daemon's session."""
