"""RL's options model owns every default and bound: groups of 8, importance sampling at temperature 1 with
no KL penalty, PPO's clip 0.2, and every numeric field bounded; ppo's own options are refused with the
importance-sampling loss, where they would do nothing."""

from __future__ import annotations

import pytest

from machine import BadInputError
from machine.learn.rl import RLOptions


def test_the_defaults_a_practitioner_expects() -> None:
    o = RLOptions()
    assert (o.group, o.cases_per_step, o.rl_steps) == (8, 4, 20)
    assert (o.temperature, o.loss, o.clip, o.ppo_epochs) == (1.0, "importance_sampling", 0.2, 2)
    assert (o.max_tokens, o.scale_rewards) == (256, False)
    assert (o.samples, o.passes) == (20 * 4 * 8, 1)


def test_every_field_is_bounded_and_described() -> None:
    for name, info in RLOptions.model_fields.items():
        assert info.description, name
        if info.annotation in (int, float):
            assert RLOptions.bounds(name), name
    assert RLOptions.bounds("group") == {"ge": 2, "le": 64}
    assert RLOptions.bounds("temperature") == {"gt": 0, "le": 2}
    assert RLOptions.bounds("clip") == {"gt": 0, "lt": 1}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"group": 1}, "group must be a whole number from 2 to 64, got 1"),
        ({"group": 65}, "group must be a whole number from 2 to 64"),
        ({"cases_per_step": 0}, "cases_per_step must be a whole number from 1 to 256"),
        ({"rl_steps": 0}, "rl_steps must be a whole number from 1 to 10000"),
        ({"temperature": 0.0}, "temperature must be a number above 0 and at most 2"),
        ({"max_tokens": 8}, "max_tokens must be a whole number from 16 to 32768"),
        ({"loss": "ppo", "clip": 1.0}, "clip must be a number above 0 and below 1"),
        ({"loss": "ppo", "ppo_epochs": 0}, "ppo_epochs must be a whole number from 1 to 16"),
        ({"group": 2.5}, "group must be a whole number"),
        ({"loss": "grpo"}, "loss is not valid"),
        ({"beta": 0.1}, "rl training takes no option 'beta'"),
    ],
)
def test_a_value_out_of_bounds_is_refused_naming_the_option(fields: dict[str, object], said: str) -> None:
    with pytest.raises(BadInputError, match=said.replace("(", r"\(")):
        RLOptions.of(**fields)


def test_ppos_options_need_the_ppo_loss() -> None:
    with pytest.raises(BadInputError, match="clip shapes the ppo loss only"):
        RLOptions.of(clip=0.1)
    with pytest.raises(BadInputError, match="clip and ppo_epochs shape the ppo loss only"):
        RLOptions.of(clip=0.1, ppo_epochs=3)
    o = RLOptions.of(loss="ppo", clip=0.1, ppo_epochs=3)
    assert (o.clip, o.passes) == (0.1, 3)
    assert RLOptions.of(loss="ppo").passes == 2
