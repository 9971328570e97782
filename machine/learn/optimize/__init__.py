"""Optimize: a search over rewrites of a machine's own instructions by the optimizer machine, each
measured on the cases and the held-out cases; a rewrite is kept only when the gate's rule holds on both."""

from .._replies import Reply, read_reply
from ._options import OptimizeOptions
from ._overlap import Overlap, overlaps
from ._plan import plan_optimize
from ._render import format_optimization
from ._report import Calls, Copied, Cost, Measured, OptimizeReport, Proposal, ProposalOutcome, Round
from ._result import Optimization
from ._search import OPTIMIZER, optimize

__all__ = [
    "OPTIMIZER",
    "Calls",
    "Copied",
    "Cost",
    "Measured",
    "Optimization",
    "OptimizeOptions",
    "OptimizeReport",
    "Overlap",
    "Proposal",
    "ProposalOutcome",
    "Reply",
    "Round",
    "format_optimization",
    "optimize",
    "overlaps",
    "plan_optimize",
    "read_reply",
]
