"""memnest-mcp: the stdio MCP server that forwards tool calls to the daemon."""
