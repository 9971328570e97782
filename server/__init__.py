"""The MCP server that exposes machines to agent hosts, and the per-run tool servers."""
