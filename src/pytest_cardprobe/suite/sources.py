"""Suite stage: tools and prompts a suite reads from where the application keeps them.

A call suite's ``tools:`` may name a source instead of holding the declarations: an object in
the application's code (``python: package.module:NAME``, converted by the client library named
in ``convert``) or an MCP server (``mcp: {command: [...]}`` or ``mcp: {url: ...}``), with
``only:`` picking some of them; a ``prompts:`` entry may be ``python: package.module:NAME``.
Reading a source starts processes, which this stage never does: it parses the spec into the
records below and asks a :class:`Sources` object the glue hands to the loader (the ``source``
stage reads, checks against the recorded snapshot and answers). What stays here is pure: the
name mapping an application's MCP client applies and the selection, which the reader calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "McpServer",
    "PromptSource",
    "SourceInvalid",
    "SourceProblem",
    "Sources",
    "ToolSource",
    "map_names",
    "prompt_source",
    "select",
    "tool_source",
]


class SourceProblem(Exception):
    """A source could not give what a suite asks of it.

    The message names the source and the cause and never holds a secret (``env:`` and
    ``headers:`` values); the loader adds the suite file, key and line.
    """


class SourceInvalid(SourceProblem):
    """The source was read, and what it gives cannot be used: the module imported but has no
    such name or holds no tool list, the client library refused its items, an MCP server
    listed something invalid, ``only:`` names a tool it no longer gives.

    Unlike a source that cannot be read here (the application not installed, a server that
    will not start), this is a change at the source: a replay may not stand the snapshot in
    for it, whatever ``--cardprobe-source-check`` says.
    """


@dataclass(frozen=True)
class McpServer:
    """Where an MCP server is and how the application's client names its tools.

    ``env`` and ``headers`` hold the values as the suite wrote them (``${NAME}`` is read from
    the environment when the server is started); they are secrets and are never shown.
    """

    command: tuple[str, ...] = ()
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    prefix: str = ""
    replace: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        # A traceback's frame arguments must not carry what env/headers hold.
        env = ", ".join(name for name, _ in self.env)
        headers = ", ".join(name for name, _ in self.headers)
        return (
            f"McpServer(command={self.command!r}, url=<{'set' if self.url else 'none'}>, "
            f"env=<{env}>, headers=<{headers}>, prefix={self.prefix!r}, replace={self.replace!r})"
        )


@dataclass(frozen=True)
class ToolSource:
    """A call suite's ``tools:`` when it names a source (exactly one of python and mcp)."""

    python: str | None = None
    convert: str | None = None
    mcp: McpServer | None = None
    only: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PromptSource:
    """A ``prompts:`` entry read from the application's code: ``package.module:NAME``."""

    python: str


class Sources(Protocol):
    """What the loader asks when a suite names a source (implemented by the source stage).

    ``entry`` names the place inside the suite (``tools``, ``prompts.call``); each call
    returns what goes on the wire or raises :class:`SourceProblem`.
    """

    def tools(
        self, suite: str, path: Path, entry: str, source: ToolSource
    ) -> list[dict[str, Any]]: ...

    def prompt(self, suite: str, path: Path, entry: str, source: PromptSource) -> str: ...


def tool_source(given: Mapping[str, Any]) -> ToolSource:
    """The schema-valid ``tools:`` mapping as a record."""
    mcp = None
    if "mcp" in given:
        server = given["mcp"]
        mcp = McpServer(
            command=tuple(server.get("command", ())),
            url=server.get("url"),
            env=tuple(server.get("env", {}).items()),
            headers=tuple(server.get("headers", {}).items()),
            prefix=server.get("prefix", ""),
            replace=tuple(server.get("replace", {}).items()),
        )
    only = given.get("only")
    return ToolSource(
        python=given.get("python"),
        convert=given.get("convert"),
        mcp=mcp,
        only=tuple(only) if only is not None else None,
    )


def prompt_source(given: Mapping[str, Any]) -> PromptSource:
    """The schema-valid ``{python: ...}`` prompt entry as a record."""
    return PromptSource(python=str(given["python"]))


def mapped_name(name: str, server: McpServer) -> str:
    """``name`` as the application's MCP client sends it: replacements made, prefix added."""
    for old, new in server.replace:
        name = name.replace(old, new)
    return server.prefix + name


def map_names(tools: Sequence[dict[str, Any]], server: McpServer) -> list[dict[str, Any]]:
    """``tools`` (function declarations) renamed as the application's client names them.

    The mapping must be reversible, as the application turns a call's name back into the
    server's: two tools that end up with one name are refused, naming both.
    """
    if not server.prefix and not server.replace:
        return [dict(t) for t in tools]
    seen: dict[str, str] = {}
    renamed: list[dict[str, Any]] = []
    for tool in tools:
        original = tool["function"]["name"]
        name = mapped_name(original, server)
        if name in seen:
            raise SourceProblem(
                f"tools {seen[name]!r} and {original!r} both become {name!r} after the name "
                f"mapping ({_mapping_text(server)}); the application could not tell their "
                "calls apart — change `prefix`/`replace`, or pick one with `only:`"
            )
        seen[name] = original
        function = {**tool["function"], "name": name}
        renamed.append({**tool, "function": function})
    return renamed


def _mapping_text(server: McpServer) -> str:
    parts = [f"prefix {server.prefix!r}"] if server.prefix else []
    parts += [f"{old!r} → {new!r}" for old, new in server.replace]
    return ", ".join(parts)


def select(tools: Sequence[dict[str, Any]], only: Sequence[str] | None) -> list[dict[str, Any]]:
    """The tools ``only`` names, in the source's order (all of them without ``only``)."""
    if only is None:
        return list(tools)
    names = [t["function"]["name"] for t in tools]
    missing = [n for n in only if n not in names]
    if missing:
        shown = ", ".join(repr(n) for n in names[:12]) + (", …" if len(names) > 12 else "")
        raise SourceProblem(
            f"only: {missing[0]!r} is not among the {len(names)} tool(s) the source gives "
            f"({shown}); `only` names tools as they go on the wire"
        )
    wanted = set(only)
    return [t for t in tools if t["function"]["name"] in wanted]
