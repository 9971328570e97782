"""The base of each learning operation's options (``machine.measure.Options``, which measuring's options
share), and the bound every learner puts on its trials."""

from __future__ import annotations

from machine.measure import Options as Options

MAX_TRIALS = 20
"""Runs per case one learning call may ask for, each side (a model calling a tool included)."""
