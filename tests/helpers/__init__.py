"""What the tests share: workspaces to run on, the environment, local stand-ins, the import graph."""
