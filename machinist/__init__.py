"""The machinist: the built-in machine that makes and improves machines."""

# Imported by its path (``import machinist`` from the repository root), this folder would load its modules
# a second time beside those of machine.machinist, with a second copy of each class.
if __name__ != "machine.machinist":
    raise ImportError(
        f"{__name__!r} is the folder of machine.machinist, imported by its path: import machine.machinist"
    )

from ._consent import consent_kept
from ._tools import machinist_tools

__all__ = ["consent_kept", "machinist_tools"]
