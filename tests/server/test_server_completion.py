"""``completion/complete``: the machine names, run ids and training record ids that start with what was
typed, for the arguments of the server's prompts and resource templates; at most 100 a reply; nothing (and
no error) for an argument the server has nothing to offer for. Through the SDK's client in this process,
and over real stdio and streamable HTTP, where ``initialize`` declares the capability."""

from __future__ import annotations

import json

import anyio
from helpers.env import MACHINE_BIN, clean_env
from helpers.served_http import TOKEN, http_client, start, stop
from helpers.server_workspace import Folder, make_server
from helpers.training import make_caps
from mcp import Client, StdioServerParameters
from mcp_types import Completion, PromptReference, ResourceTemplateReference

from machine import open_workspace, run_suite

LIMIT = 60


def prompt(name: str) -> PromptReference:
    return PromptReference(type="ref/prompt", name=name)


def template(uri: str) -> ResourceTemplateReference:
    return ResourceTemplateReference(type="ref/resource", uri=uri)


async def complete(
    client: Client, ref: PromptReference | ResourceTemplateReference, name: str, value: str
) -> Completion:
    return (await client.complete(ref, {"name": name, "value": value})).completion


async def test_machine_names_complete_by_prefix_for_the_prompts_and_the_machine_template(
    folder: Folder,
) -> None:
    make_caps(folder.root)
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            every = await complete(client, prompt("improve_machine"), "name", "")
            red = await complete(client, prompt("specialize_machine"), "name", "r")
            caps = await complete(client, template("machine://machines/{+name}"), "name", "ca")
            none = await complete(client, prompt("improve_machine"), "name", "zebra")
            (folder.root / "machines" / "cabbage").mkdir()  # a new machine's folder, seen at once
            (folder.root / "machines" / "cabbage" / "machine.py").write_text(
                (folder.root / "machines" / "caps" / "machine.py").read_text().replace('"caps"', '"cabbage"')
            )
            again = await complete(client, prompt("improve_machine"), "name", "ca")
    assert (sorted(every.values), every.total, every.has_more) == (["caps", "red"], 2, False)
    assert red.values == ["red"] and caps.values == ["caps"]
    assert (none.values, none.total) == ([], 0)
    assert sorted(again.values) == ["cabbage", "caps"]


async def test_run_ids_complete_newest_first_and_at_most_a_hundred(folder: Folder) -> None:
    ws = open_workspace(folder.root, harness="scripted", script=folder.script)
    await run_suite(ws, ws.load("red"), ws.cases("red"), trials=7)  # 17 cases x 7: 119 runs
    ids = [run.id for run in sorted(ws.store.iter_runs("red"), key=lambda r: r.created_at, reverse=True)]
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            every = await complete(client, prompt("explain_run"), "id", "")
            one = await complete(client, template("machine://runs/{id}"), "id", ids[-1])
            day = await complete(client, template("machine://runs/{id}"), "id", ids[0][:8])
    assert len(ids) == 119
    assert (len(every.values), every.total, every.has_more) == (100, 119, True)  # the protocol's bound
    assert set(every.values) <= set(ids) and every.values[0] in ids[:7]  # newest first
    assert one.values == [ids[-1]]
    assert len(day.values) == 100 and day.total == sum(i.startswith(ids[0][:8]) for i in ids)


async def test_training_ids_complete_newest_first(folder: Folder) -> None:
    root = folder.root / ".machine" / "training"
    for name in ("20261101-090000-a", "20261102-090000-b", "20261102-100000-c"):
        (root / name).mkdir(parents=True)
        (root / name / "record.json").write_text(json.dumps({}))
    (root / "20261103-stray").mkdir()  # no record in it: not a training
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            found = await complete(client, template("machine://training/{id}"), "id", "20261102")
    assert found.values == ["20261102-100000-c", "20261102-090000-b"]


async def test_an_argument_with_nothing_to_offer_gets_no_values_and_no_error(folder: Folder) -> None:
    server, _ = make_server(folder)
    with anyio.fail_after(LIMIT):
        async with Client(server) as client:
            found = [
                await complete(client, prompt("test_prompt_with_arguments"), "arg1", "test"),  # not ours
                await complete(client, prompt("specialize_machine"), "focus", "e"),  # free text
                await complete(client, template("machine://elsewhere/{id}"), "id", ""),
            ]
    assert [(c.values, c.total, c.has_more) for c in found] == [([], 0, False)] * 3


async def test_over_stdio_initialize_declares_completions_and_they_answer(folder: Folder) -> None:
    params = StdioServerParameters(command=str(MACHINE_BIN), args=folder.serve_args(), env=clean_env())
    with anyio.fail_after(LIMIT):
        async with Client(params, mode="legacy") as client:
            declared = client.server_capabilities.completions
            found = await complete(client, prompt("improve_machine"), "name", "re")
    assert declared is not None and found.values == ["red"]


async def test_over_http_initialize_declares_completions_and_they_answer(folder: Folder) -> None:
    served = start(folder, {"MACHINE_SERVER_TOKEN": TOKEN})
    try:
        with anyio.fail_after(LIMIT):
            async with http_client(served) as client:
                declared = client.server_capabilities.completions
                found = await complete(client, template("machine://machines/{+name}"), "name", "")
    finally:
        stop(served)
    assert declared is not None and found.values == ["red"]
