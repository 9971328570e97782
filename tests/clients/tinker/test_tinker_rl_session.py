"""RL on Tinker through ``train`` (issue 53), against the stand-in service: each step samples the latest
weights through the session's harness (Inkling's renderer, one continuation a turn, seeded), the runs are
graded by the machine's own check, and one update sends the cookbook's datums (shifted by one, nothing at
the positions the model did not write); the budget is charged for sampling and training, and the sampler
checkpoint faces the held-out gate. A tool call's result is context, never trained; a KL penalty moves the
advantages as the cookbook's ``incorporate_kl_penalty`` does; PPO takes its passes with its clip; a
sequence is cut to ``max_length`` with its datum; a failure of the service stops the training at the step
it hit; a stopped training resumes from its saved state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tinker_cookbook")

from helpers.renderers import INKLING, inkling
from helpers.tinker_standin import SAMPLED_VOCAB, StandInService, base_logprob, status_error

from machine import open_workspace
from machine.budget import Budget, price_of
from machine.clients._rl_turns import TurnRecord
from machine.clients.tinker import TinkerTrainer
from machine.clients.tinker._rl import rl_datum
from machine.errors import TrainingError
from machine.learn import TrainingRecord, train
from machine.learn.rl import RLOptions
from machine.runs import HarnessRequest, HarnessResult, Message, Turn, Usage, run_loop
from machine.training import RLSession, RLSettings, StepMetrics, TrainSettings
from machine.workspace import Workspace

PRICE = 11.22 / 1e6
"""Inkling's training price per token."""
RL = RLOptions(group=4, cases_per_step=2, rl_steps=3, max_tokens=16)
STOP = 200006
"""Inkling's stop token (``tml_v0``'s end of sampling)."""

TALK_PY = f"""\
from machine import check, define_evaluator, define_machine, define_rubric

rubric = define_rubric({{"long": "The reply is long enough."}})

machine = define_machine(
    name="talk",
    intent="Say something.",
    instructions="Answer at length.",
    model="{INKLING}",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"long": check("long", lambda run: min(len(run.output) / 48, 1.0))}}),
    max_steps=1,
)
"""

WEATHER_PY = f"""\
from machine import check, define_evaluator, define_machine, define_rubric, tool

rubric = define_rubric({{"correct": "Gives the weather the tool reported."}})


@tool
def get_weather(city: str) -> str:
    \"\"\"Get the weather in a city.\"\"\"
    return "18 C"


machine = define_machine(
    name="weather",
    intent="Tell the weather.",
    instructions="Use the weather tool.",
    model="{INKLING}",
    rubric=rubric,
    evaluator=define_evaluator(rubric, {{"correct": check("correct", lambda run: "18" in run.output)}}),
    tools=[get_weather],
)
"""


class Answering:
    """The workspace's harness, for the gate's held-out runs: a fixed reply, priced by ``USAGE``."""

    name = "answering"

    async def run(self, request: HarnessRequest) -> HarnessResult:
        async def reply(messages: list[Message], step: int) -> Turn:
            return Turn(
                Message(role="assistant", content="It is 18 C, a fine answer."),
                Usage(input_tokens=100, output_tokens=10),
            )

        return await run_loop(request, reply)


@pytest.fixture
def service() -> Any:
    made = StandInService()
    yield made
    made.release.set()


def trainer(service: StandInService) -> TinkerTrainer:
    return TinkerTrainer(service=service, rendering=inkling(), backoff_s=0.01, timeout_s=5.0)


def workspace(root: Path, name: str, machine_py: str, inputs: list[str], held: list[str]) -> Workspace:
    folder = root / "machines" / name
    folder.mkdir(parents=True)
    (folder / "machine.py").write_text(machine_py, encoding="utf-8")
    cases = [{"id": f"c{i}", "input": text} for i, text in enumerate(inputs)]
    holdout = [{"id": f"h{i}", "input": text} for i, text in enumerate(held)]
    (folder / "cases.json").write_text(json.dumps([*cases, *holdout]), encoding="utf-8")
    (folder / "holdout.json").write_text(json.dumps(holdout), encoding="utf-8")
    return open_workspace(root, harness=Answering(), budget=5.0)


def values(datum: Any, name: str) -> list[Any]:
    return list(datum.loss_fn_inputs[name].data)


def reply_tokens(conversation: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
    """The tokens Inkling writes for the conversation's last (assistant) message, as a sampler returns
    them: its header, its body and the stop token."""
    from tinker_cookbook.renderers import TrainOnWhat

    from machine.clients.tinker._render import to_cookbook

    rendering = inkling()
    conv, _ = to_cookbook(conversation, tools or [], rendering.renderer)
    ids, weights = rendering.renderer.build_supervised_example(
        conv, train_on_what=TrainOnWhat.LAST_ASSISTANT_MESSAGE, **rendering.options()
    )
    return [t for t, w in zip(ids.to_ints(), weights.tolist(), strict=True) if w > 0]


async def test_rl_on_tinker_samples_grades_and_trains_end_to_end(
    service: StandInService, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, "talk", TALK_PY, ["tell", "say", "speak", "sing"], ["hold", "keep"])
    steps: list[StepMetrics] = []
    candidate = await train(
        ws, "talk", method="rl", rl=RL, trials=1, trainer=trainer(service), on_step=steps.append
    )
    assert [m.step for m in steps] == [1, 2, 3]
    for metrics in steps:
        assert metrics.rl is not None and metrics.rl.rollouts == 8 and metrics.rl.failed == 0
        assert metrics.rl.reward is not None and metrics.rl.trained > 0 and metrics.loss is not None
        assert metrics.rl.ratio is not None and metrics.rl.entropy is not None and metrics.rl.kl is None
        assert metrics.tokens > 0 and metrics.cost_usd > 0
    [folder] = (ws.data_dir / "training").iterdir()
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert record.status == "trained" and record.trainer == "tinker" and record.sampled == 24
    samples = [r for r in ws.store.iter_runs("talk") if r.sampled_for is not None]
    assert len(samples) == 24 and {r.harness for r in samples} == {"tinker"}
    assert {r.sampled_for for r in samples} == {f"{record.id} step {n}" for n in (1, 2, 3)}
    assert all(r.scorecard is not None and r.case_id not in ("h0", "h1") for r in samples)
    methods = service.methods()
    assert methods[:2] == ["ServiceClient", "create_lora_training_client"]
    assert methods.count("save_weights_and_get_sampling_client") == 3  # one sampler a step
    assert (
        methods.count("sample") == 24
        and methods.count("forward_backward") == methods.count("optim_step") == 3
    )
    assert methods[-2:] == ["save_state", "save_weights_for_sampler"]
    assert all(
        c.args["num_samples"] == 1 and c.args["max_tokens"] == 16
        for c in service.calls
        if c.method == "sample"
    )
    for datum in [d for sent in service.sent for d in sent]:
        size = datum.model_input.length
        targets, logq, advantages = (values(datum, k) for k in ("target_tokens", "logprobs", "advantages"))
        assert len(targets) == len(logq) == len(advantages) == size
        assert {k: t.dtype for k, t in datum.loss_fn_inputs.items()} == {
            "target_tokens": "int64",
            "logprobs": "float32",
            "advantages": "float32",
        }
        assert (
            datum.model_input.to_ints()[1:] == targets[:-1]
        )  # the ids less the last; targets less the first
        trained = [i for i, a in enumerate(advantages) if a]
        assert trained == list(range(trained[0], size))  # the reply, after its prompt
        assert len({advantages[i] for i in trained}) == 1  # one advantage a run, no KL
        assert all(logq[i] == 0.0 for i, a in enumerate(advantages) if not a)  # the prompt: nothing
        assert all(targets[i] in SAMPLED_VOCAB or targets[i] == STOP for i in trained)
    for datum in service.sent[0]:  # the first step samples the base: log q is the base's
        trained = [i for i, a in enumerate(values(datum, "advantages")) if a]
        got = [values(datum, "logprobs")[i] for i in trained]
        assert got == pytest.approx([base_logprob(values(datum, "target_tokens")[i]) for i in trained])
    assert candidate.version.model.startswith("tinker://run-1/sampler_weights/")
    assert candidate.report.after.runs > 0  # the sampler checkpoint faced the held-out gate
    price = price_of(INKLING)
    assert price is not None
    for run in samples:  # each sample charged at the base's sampling price as it was made
        expected = (run.usage.input_tokens * price.input + run.usage.output_tokens * price.output) / 1e6
        assert run.cost_usd == pytest.approx(expected) and run.cost_usd > 0
    sent_tokens = sum(d.model_input.length for sent in service.sent for d in sent)
    assert ws.budget.spent_by_kind["training"] == pytest.approx(sent_tokens * PRICE)


def weather_tokens() -> tuple[list[int], list[int], list[int]]:
    """What Inkling writes for a call of the tool, the answer after its result, and a reply that does not
    call it."""
    system = {"role": "system", "content": "Use the weather tool."}
    user = {"role": "user", "content": "Weather in Paris?"}
    arguments = json.dumps({"city": "Paris"})
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        ],
    }
    result = {"role": "tool", "tool_call_id": "c1", "content": "18 C"}
    answer = {"role": "assistant", "content": "It is 18 C in Paris."}
    guess = {"role": "assistant", "content": "No idea."}
    return (
        reply_tokens([system, user, call]),
        reply_tokens([system, user, call, result, answer]),
        reply_tokens([system, user, guess]),
    )


async def test_a_tool_using_rollout_trains_the_models_tokens_only(
    service: StandInService, tmp_path: Path
) -> None:
    ws = workspace(
        tmp_path, "weather", WEATHER_PY, ["Weather in Paris?"], ["Weather in Oslo?", "Weather in Lima?"]
    )
    call, answer, guess = weather_tokens()
    service.replies = [call, answer, guess]  # the first run calls the tool, then answers; the second guesses
    one_step = RLOptions(group=2, cases_per_step=1, rl_steps=1, max_tokens=64)
    await train(ws, "weather", method="rl", rl=one_step, trials=1, concurrency=1, trainer=trainer(service))
    samples = sorted((r for r in ws.store.iter_runs("weather") if r.sampled_for), key=lambda r: r.trial or 0)
    called, guessed = samples
    assert [m.role for m in called.trajectory] == ["user", "assistant", "tool", "assistant"]
    assert called.trajectory[1].tool_calls[0].name == "get_weather"
    assert called.trajectory[1].tool_calls[0].arguments == {"city": "Paris"}
    assert called.trajectory[2].content == "18 C" and called.output == "It is 18 C in Paris."
    assert guessed.output == "No idea." and called.usage.output_tokens == len(call) + len(answer)
    (sent,) = service.sent
    (ours,) = [d for d in sent if 0.5 in values(d, "advantages")]  # the run's turns, merged into one
    (theirs,) = [d for d in sent if -0.5 in values(d, "advantages")]
    assert trained_tokens(theirs) == guess
    assert trained_tokens(ours) == call + answer  # the model's tokens, each trained once
    targets, logq, advantages = (values(ours, k) for k in ("target_tokens", "logprobs", "advantages"))
    at = [i for i, a in enumerate(advantages) if a]
    between = range(at[len(call) - 1] + 1, at[len(call)])  # after the call, before the answer
    assert all(advantages[i] == 0.0 and logq[i] == 0.0 for i in between)
    context = [targets[i] for i in between]  # the tool's result is there, as context
    result = inkling().renderer.tokenizer.encode("18 C")
    assert result and any(context[i : i + len(result)] == result for i in range(len(context)))


def trained_tokens(datum: Any) -> list[int]:
    """The targets a datum trains (those with an advantage), in order."""
    return [t for t, a in zip(values(datum, "target_tokens"), values(datum, "advantages"), strict=True) if a]


class BaseMeasured:
    """A base sampler as the cookbook's ``incorporate_kl_penalty`` calls it (``compute_logprobs_async``),
    answering with the stand-in's base."""

    def __init__(self, service: StandInService) -> None:
        from helpers.tinker_standin import StandInSamplingClient

        self.inner = StandInSamplingClient(service)

    async def compute_logprobs_async(self, model_input: Any) -> list[float | None]:
        reply: list[float | None] = self.inner.compute_logprobs(model_input).result()
        return reply


async def test_a_kl_penalty_moves_each_tokens_advantage_as_the_cookbook_does(
    service: StandInService, tmp_path: Path
) -> None:
    from tinker import types
    from tinker_cookbook.rl.metrics import incorporate_kl_penalty

    from machine.clients._rl_turns import sequences_of

    budget = Budget(usd=5.0)
    settings = TrainSettings(base_model=INKLING, method="rl", kl=0.5)
    session = await trainer(service).rl(settings, RLSettings(), folder=tmp_path / "t-1", budget=budget)
    assert isinstance(session, RLSession) and session.learning_rate == 1e-5  # the cookbook's RL recipes'
    turns = {  # what a sampler off the base recorded: log q differs from the base's at every token
        "a": TurnRecord([1, 2, 3], [110, 111, 112], [-0.5, -2.0, -1.0], True),
        "b": TurnRecord([1, 2, 3], [120, 121], [-1.5, -0.25], True),
        "flat": TurnRecord([1, 2, 3], [130], [-3.0], True),
    }
    for run, turn in turns.items():
        session.records.add(run, turn)
    update = await session.update(1, {"a": 1.0, "b": -1.0, "flat": 0.0, "gone": 1.0}, 1e-5)
    assert (update.sequences, update.skipped, update.missing, update.tokens) == (2, 1, 1, 5)
    assert service.methods().count("compute_logprobs") == 2  # the two trained sequences, not the flat one
    (sent,) = service.sent
    ours = [values(d, "advantages") for d in sent]
    theirs = []  # the cookbook's penalty on the same datums, with the mask it reads
    for run, advantage in (("a", 1.0), ("b", -1.0)):
        (sequence,) = sequences_of([turns[run]], advantage)
        datum = rl_datum(sequence)
        mask = types.TensorData(data=[float(m) for m in sequence.mask[1:]], dtype="float32")
        theirs.append(
            types.Datum(model_input=datum.model_input, loss_fn_inputs={**datum.loss_fn_inputs, "mask": mask})
        )
    measured = await incorporate_kl_penalty(theirs, BaseMeasured(service), 0.5, 0.0)  # type: ignore[arg-type]
    for mine, cookbook in zip(ours, theirs, strict=True):
        assert mine == pytest.approx(values(cookbook, "advantages"), abs=1e-6)
    assert update.kl == pytest.approx(measured["kl_policy_base"], abs=1e-6)
    diffs = [
        q - base_logprob(t)
        for turn in (turns["a"], turns["b"])
        for q, t in zip(turn.logprobs, turn.tokens, strict=True)
    ]
    assert update.kl == pytest.approx(sum(diffs) / len(diffs))
    assert ours[0][2] == pytest.approx(1.0 + 0.5 * (update.kl - diffs[0]))  # A + kl·(mean d − d) at 110
    assert ours[0][:2] == [0.0, 0.0]  # the prompt's targets: no advantage, penalty or not
    opened = [c for c in service.calls if c.method == "create_sampling_client"]
    assert [c.args for c in opened] == [{"base_model": INKLING}]
    price = price_of(INKLING)
    assert price is not None
    reference = (6 + 5) * price.input / 1e6  # the base's prefill of both whole sequences
    assert update.cost_usd == pytest.approx(reference + (5 + 4) * PRICE)  # and training on their inputs
    assert budget.spent == pytest.approx(update.cost_usd)
    await session.close()


@pytest.mark.parametrize(
    ("method", "before"),
    [("forward_backward", 1), ("save_weights_and_get_sampling_client", 1), ("sample", 8)],
)
async def test_a_failure_of_the_service_stops_the_training_at_its_step(
    service: StandInService, tmp_path: Path, method: str, before: int
) -> None:
    service.script[method] = [None] * before + [status_error(400, {"detail": "refused"})]
    ws = workspace(tmp_path, "talk", TALK_PY, ["tell", "say", "speak", "sing"], ["hold", "keep"])
    with pytest.raises(TrainingError, match="RL step 2") as raised:
        await train(ws, "talk", method="rl", rl=RL, trials=1, trainer=trainer(service))
    assert raised.value.step == 2 and "400" in str(raised.value)
    [folder] = (ws.data_dir / "training").iterdir()
    record = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert record.status == "failed" and record.steps == 1 and "RL step 2" in (record.error or "")
    assert "save_weights_for_sampler" not in service.methods()


async def test_a_stopped_rl_training_resumes_from_its_saved_state(
    service: StandInService, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, "talk", TALK_PY, ["tell", "say", "speak", "sing"], ["hold", "keep"])

    def stop_at_two(metrics: StepMetrics) -> None:
        if metrics.step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await train(ws, "talk", method="rl", rl=RL, trials=1, trainer=trainer(service), on_step=stop_at_two)
    [folder] = (ws.data_dir / "training").iterdir()
    stopped = TrainingRecord.model_validate_json((folder / "record.json").read_bytes())
    assert stopped.status == "stopped" and stopped.checkpoint is not None and stopped.checkpoint.step == 2
    state = stopped.checkpoint.state
    assert state is not None and state.startswith("tinker://run-1/weights/")
    service.calls.clear()
    steps: list[StepMetrics] = []
    candidate = await train(
        ws,
        "talk",
        method="rl",
        rl=RL,
        trials=1,
        resume=stopped.id,
        trainer=trainer(service),
        on_step=steps.append,
    )
    assert [m.step for m in steps] == [3]
    opened = [(c.method, c.args) for c in service.calls if c.method.startswith("create_")]
    assert opened == [("create_training_client_from_state_with_optimizer", {"path": state})]
    assert candidate.version.model == f"tinker://run-1/sampler_weights/{folder.name}-step3"


def test_a_kl_penalty_is_taken_with_rl_alone(service: StandInService) -> None:
    from machine.errors import BadInputError
    from machine.training import refuse_untaken

    refuse_untaken(trainer(service), TrainSettings(base_model=INKLING, method="rl", kl=0.1))
    for method in ("sft", "dpo"):
        with pytest.raises(BadInputError, match="the tinker trainer does not take a KL penalty"):
            refuse_untaken(trainer(service), TrainSettings(base_model=INKLING, method=method, kl=0.1))


async def test_sequences_are_cut_to_the_max_length_with_their_datum(
    service: StandInService, tmp_path: Path
) -> None:
    settings = TrainSettings(base_model=INKLING, method="rl", max_length=5)
    session = await trainer(service).rl(settings, RLSettings(), folder=tmp_path / "t-1", budget=Budget())
    session.records.add("long", TurnRecord([1, 2, 3], [110, 111, 112, 113], [-0.5, -1.0, -1.5, -2.0], True))
    session.records.add("prompt", TurnRecord([1, 2, 3, 4, 5, 6], [120], [-0.5], True))  # its reply is cut off
    update = await session.update(1, {"long": 1.0, "prompt": -1.0}, 1e-5)
    assert (update.sequences, update.skipped, update.tokens) == (1, 1, 2)
    ((datum,),) = service.sent
    assert datum.model_input.to_ints() == [1, 2, 3, 110]
    assert values(datum, "target_tokens") == [2, 3, 110, 111]
    assert values(datum, "logprobs") == [0.0, 0.0, -0.5, -1.0]
    assert values(datum, "advantages") == [0.0, 0.0, 1.0, 1.0]
    assert session.done == 1 and len(session.records) == 0


async def test_ppo_takes_its_passes_over_the_batch_with_its_clip(
    service: StandInService, tmp_path: Path
) -> None:
    ppo = RLSettings(loss="ppo", clip=0.1, passes=2)
    session = await trainer(service).rl(
        TrainSettings(base_model=INKLING, method="rl"), ppo, folder=tmp_path / "t-1", budget=Budget()
    )
    tokens = [110, 111, 112]
    session.records.add("a", TurnRecord([1, 2], tokens, [base_logprob(t) for t in tokens], True))
    session.records.add("b", TurnRecord([1, 2], [120], [base_logprob(120)], True))
    update = await session.update(1, {"a": 1.0, "b": -1.0}, 0.5)
    passes = [c for c in service.calls if c.method == "forward_backward"]
    assert [c.args["loss_fn"] for c in passes] == ["ppo", "ppo"]
    assert all(
        c.args["loss_fn_config"] == pytest.approx({"clip_low_threshold": 0.9, "clip_high_threshold": 1.1})
        for c in passes
    )
    assert service.methods().count("optim_step") == 2 and service.sent[0] == service.sent[1]
    assert update.ratio is not None and update.ratio != pytest.approx(1.0)  # the second pass moved off q
    assert update.clipped == pytest.approx(1.0)  # every token moved past the clip in the first step
