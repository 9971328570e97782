"""Learning from runs: ``optimize`` rewrites a machine's instructions with the built-in optimizer machine
and keeps a rewrite only when it is measured better on the cases and no worse on held-out ones."""

from ._blocks import Reply, read_reply
from ._optimize import OPTIMIZER, optimize
from ._overlap import Overlap, overlaps
from ._render import format_optimization
from ._report import Calls, Copied, Cost, Measured, OptimizeReport, Proposal, ProposalOutcome, Round
from ._result import Optimization

__all__ = [
    "OPTIMIZER",
    "Calls",
    "Copied",
    "Cost",
    "Measured",
    "Optimization",
    "OptimizeReport",
    "Overlap",
    "Proposal",
    "ProposalOutcome",
    "Reply",
    "Round",
    "format_optimization",
    "optimize",
    "overlaps",
    "read_reply",
]
