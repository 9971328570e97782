"""Whether the gate can pass at all on so few cases, said before anything is spent. The exact sign test
behind ``min_z`` needs ``evidence_floor(min_z)`` cases that change (6 at min_z 2), so on fewer cases no
candidate passes however well it does: an optimize, train or propose measured on them spends for a
refusal. Every plan says so up front, with the numbers, and what would make the gate passable."""

from __future__ import annotations

from machine.runs import counted

from ._gate import evidence_floor


def thin_gate(
    cases: int,
    min_z: float,
    *,
    where: str,
    kind: str = "held-out",
    what: str = "no candidate can pass the gate",
) -> str | None:
    """The warning that ``cases`` (of the ``kind`` in ``where``) are too few for the gate at ``min_z``
    to pass anything, naming how many it takes; None when they are enough (or there are none: then the
    operation says what is wrong itself)."""
    floor = evidence_floor(min_z)
    if cases <= 0 or cases >= floor:
        return None
    noun = f"{kind} case" if kind else "case"
    where = "the list given" if where == "(given)" else where  # how a report names cases given in code
    return (
        f"{what}: {where} holds only {counted(cases, noun)}, and at min_z {min_z:g} the gate's exact "
        f"sign test needs at least {floor} cases that change, all for the better, before it passes "
        f"anything; add at least {floor - cases} more {noun}s to {where} first"
    )
