"""The server class itself, kept thin: ``initialize`` needs nothing but the SDK and this, so ``machine serve``
answers it without importing the tools, the operations behind them or their result models. Those come
(with the resources and prompts) on the first request that lists or uses any of them; the ``Service``
(the workspace and its store) with the first call or read. The protocol's utilities are declared here,
so ``initialize`` names them: completions of prompt and template arguments (``_completion``, imported
when first asked) and the server's log at the level the client sets (``_logging``)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from mcp_types import SetLevelRequestParams

from machine.errors import MachineError, StoreError

from . import _logging

if TYPE_CHECKING:
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp_types import (
        CallToolResult,
        Completion,
        CompletionArgument,
        CompletionContext,
        GetPromptResult,
        InputRequiredResult,
        Prompt,
        PromptReference,
        Resource,
        ResourceTemplate,
        ResourceTemplateReference,
    )
    from mcp_types import Tool as MCPTool

    from ._service import Service

INSTRUCTIONS = (
    "Machines are small agent loops with a rubric. list_machines and show_machine describe them, "
    "recent_runs lists their graded runs, show_run shows one whole (each grader's reason) and "
    "show_training a training record; rehearse runs and grades a machine's cases; specialize has an "
    "author write a child machine and its cases, optimize rewrites a machine's instructions and keeps a "
    "rewrite measured better, train fine-tunes its model (each spends: give budget_usd; optimize and "
    "train leave a pending candidate); commit and revert change which version is live. Spending and "
    "changing tools need the person's consent: they are asked, or an allowance in the server's "
    "configuration covers it. Code a model wrote (a child from specialize) is not imported until the "
    "person trusts it: trust_machine shows it to them and asks; until then rehearse runs its own code "
    "only in the sandbox. The same things are resources (machine://machines, machine://machines/NAME, "
    "machine://runs/ID, machine://training/ID), and the prompts improve_machine, specialize_machine "
    "and explain_run start those conversations."
)
TRUST_ASKS = "trust_machine shows it to them and asks"
TRUST_OUTSIDE = "they trust it outside this host, since this server does not offer trust_machine"
"""What the instructions say instead of ``TRUST_ASKS`` where the server leaves trust_machine out."""


def instructions(trust_over_mcp: bool = True) -> str:
    """The server's instructions to the host's agent, saying where the person trusts code a model wrote."""
    return INSTRUCTIONS if trust_over_mcp else INSTRUCTIONS.replace(TRUST_ASKS, TRUST_OUTSIDE)


def plain(doc: str | None) -> str:
    """A docstring as a host shows it: its indentation gone and each paragraph on one line."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs).strip()


def version() -> str:
    """This library's version, as ``initialize`` reports it."""
    try:
        return metadata.version("machine")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def service(ctx: Context) -> Service:
    """The state of the server this call reached."""
    server = ctx.mcp_server
    assert isinstance(server, MachineServer), "the machine tools run only on a MachineServer"
    return server.service


class MachineServer(MCPServer):
    """An MCP server that carries the ``Service`` its tools act through. ``add_tools(server)`` registers
    the tools, resources and prompts, on the first request that needs them; ``make_service()`` makes the
    service, on the first tool call (it raises ``ToolError`` saying what is wrong, e.g. an unusable
    allowance). Every description is registered as ``plain`` text."""

    def __init__(
        self,
        make_service: Callable[[], Service],
        add_tools: Callable[[MCPServer], None],
        *,
        trust_over_mcp: bool = True,
        **options: Any,
    ) -> None:
        said = instructions(trust_over_mcp)
        super().__init__(name="machine", instructions=said, version=version(), **options)
        self._make_service = make_service
        self._add_tools: Callable[[MCPServer], None] | None = add_tools
        self._service: Service | None = None
        lowlevel = self._lowlevel_server  # the SDK's way to serve a method it has no decorator for
        lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, _logging.set_level)
        self.middleware.append(_logging.forward_logs)
        _logging.attach()
        self.completion()(self._complete)  # type: ignore[no-untyped-call]  # the SDK leaves it untyped

    @property
    def service(self) -> Service:
        """The server's state, made on first use and kept for the server's life."""
        if self._service is None:
            self._service = self._make_service()
        return self._service

    async def _complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        """``completion/complete``: the values of a prompt's or a resource template's argument that
        start with what was typed (``_completion``)."""
        from ._completion import completion

        return completion(lambda: self.service, ref, argument)

    def _tools_ready(self) -> None:
        if self._add_tools is not None:
            self._add_tools(self)
            self._add_tools = None

    def tool(  # type: ignore[override]  # the same call; the decorator it gives is typed loosely
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = super().tool

        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            return register(name, title, description or plain(fn.__doc__), **options)(fn)

        return add

    async def list_tools(self) -> list[MCPTool]:
        self._tools_ready()
        return await super().list_tools()

    async def list_resources(self) -> list[Resource]:
        self._tools_ready()
        return await super().list_resources()

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        self._tools_ready()
        return await super().list_resource_templates()

    async def read_resource(
        self, uri: Any, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        self._tools_ready()
        return await super().read_resource(uri, context)

    async def list_prompts(self) -> list[Prompt]:
        self._tools_ready()
        return await super().list_prompts()

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        self._tools_ready()
        return await super().get_prompt(name, arguments, context)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The call, once the tools are registered and the service is ready for it (``Service.before``).
        A library error no tool caught (a store that cannot be opened, say) is the tool's error in its
        own words, never a traceback on stderr."""
        self._tools_ready()
        try:
            self.service.before(name)
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as error:
            if not isinstance(error.__cause__, MachineError):
                raise
            failed: MachineError = error.__cause__
        except MachineError as error:
            failed = error
        from ._service import tool_error

        said = tool_error(failed)
        if isinstance(failed, StoreError):  # the person who started the server sees it too, in one line
            logging.getLogger("machine.server").warning("%s", said)
        raise said from None

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """Asked before a call on the newer protocol (to check its headers): the tools must be there."""
        self._tools_ready()
        return super()._tool_input_schema(name)
