"""Agent hosts that run a machine's loop in their own program, with the run's tools served to them from
this process behind a per-run token: ``opencode`` and ``pi``. Each harness is made by name through
``machine.clients``' registry."""

from __future__ import annotations
