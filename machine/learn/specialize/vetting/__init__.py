"""Vetting what a model wrote without trusting it: a child machine's or a rubric draft's code is loaded and
its checks tried on sample runs in a process of its own inside a sandbox; written cases are checked for
their shape and, for project cases, run for real; an untrusted machine is described and graded from what
a process inside the sandbox reports (a stand-in), never imported here."""

from ._cases import CaseVerdict, CaseVetting, vet_cases
from ._child import vet_child, vet_rubric
from ._draft import DRAFT_FILE
from ._main import hidden_tests_grader
from ._result import CheckResult, SampleScore, Vetting
from ._sandboxed import Limits, Process, Reported, run_sandboxed
from ._stand_in import SandboxChecks, SandboxedCheck, StandIn, describe_untrusted

__all__ = [
    "DRAFT_FILE",
    "CaseVerdict",
    "CaseVetting",
    "CheckResult",
    "Limits",
    "Process",
    "Reported",
    "SampleScore",
    "SandboxChecks",
    "SandboxedCheck",
    "StandIn",
    "Vetting",
    "describe_untrusted",
    "hidden_tests_grader",
    "run_sandboxed",
    "vet_cases",
    "vet_child",
    "vet_rubric",
]
