"""Reading the optimizer's reply: the proposal between the tags, the rest its explanation."""

from __future__ import annotations

from machine.learn import Reply, read_reply


def test_the_block_is_the_proposal_and_the_rest_the_explanation() -> None:
    reply = read_reply("I made it louder.\n<instructions>\n  Shout.\n</instructions>\nThat is all.")
    assert reply == Reply(instructions="Shout.", explanation="I made it louder.\n \nThat is all.", blocks=1)


def test_the_last_non_empty_block_wins() -> None:
    text = "Draft: <instructions>Whisper.</instructions> Settled: <instructions>Shout.</instructions> done"
    reply = read_reply(text)
    assert (reply.instructions, reply.blocks) == ("Shout.", 2)
    assert reply.explanation == "Draft:   Settled:   done"


def test_empty_blocks_are_passed_over() -> None:
    reply = read_reply("<instructions>Shout.</instructions> then <instructions>\n \n</instructions>")
    assert (reply.instructions, reply.blocks) == ("Shout.", 2)
    assert read_reply("<instructions> </instructions>") == Reply(None, "", 1)


def test_tags_are_read_in_any_case_and_across_lines() -> None:
    reply = read_reply("<INSTRUCTIONS>\nLine one.\n\nLine two.\n</Instructions>")
    assert reply.instructions == "Line one.\n\nLine two."


def test_no_block_or_an_unclosed_one_proposes_nothing() -> None:
    assert read_reply("Just say it louder.") == Reply(None, "Just say it louder.", 0)
    unclosed = read_reply("Here: <instructions>Shout, and never stop")
    assert (unclosed.instructions, unclosed.blocks) == (None, 0)
    assert unclosed.explanation == "Here: <instructions>Shout, and never stop"
    assert read_reply("") == Reply(None, "", 0)
