"""The MCP server that exposes machines to agent hosts, and the per-run tool servers."""

# Imported by its path (``import server`` from the repository root), this folder would load its modules
# a second time beside those of machine.server, with a second copy of each class.
if __name__ != "machine.server":
    raise ImportError(
        f"{__name__!r} is the folder of machine.server, imported by its path: import machine.server"
    )
