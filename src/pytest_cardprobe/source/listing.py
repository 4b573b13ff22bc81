"""Source stage: what a source gave, made into function declarations and checked.

Everything here is untrusted: an application's module may hold anything, an MCP server may
list anything. A listing becomes declarations (an MCP tool is ``{type: function, function:
{name, description, parameters: inputSchema}}``, the description left out when the server gives
none) and is checked with the suite's own rules for a tools file (the ``toolList`` schema,
unique names, parameter schemas that are valid and resolve), each problem naming the tool.
Names follow what servers accept rather than one client's rule: up to 128 characters without
whitespace or control characters (MCP's own limit); a name strict OpenAI-compatible servers
would refuse is the lint's portability warning, not an error.
"""

from __future__ import annotations

from typing import Any, NoReturn

from pytest_cardprobe.suite.errors import KeyPath, describe, json_path
from pytest_cardprobe.suite.schema import first_problem
from pytest_cardprobe.suite.sources import SourceProblem
from pytest_cardprobe.suite.toolsfile import check_tools
from pytest_cardprobe.text import escape_control

#: The most tools cardprobe reads from one source (an MCP server's listing, a module's list).
MAX_LISTED = 1000
#: The longest tool name a source may give (MCP's limit; OpenAI's strict one is 64).
MAX_NAME = 128
#: The most tools one request may declare: OpenAI's documented limit, and far past what a
#: small model can choose from; a source that gives more needs ``only:``.
MAX_WIRE_TOOLS = 128


def from_mcp(listing: Any) -> list[dict[str, Any]]:
    """An MCP ``tools/list`` listing (``{name, description?, inputSchema}`` each) as function
    declarations, in the server's order."""
    if not isinstance(listing, list):
        raise SourceProblem(f"tools/list gave {describe(listing)}, not a list of tools")
    declarations = []
    for index, tool in enumerate(listing):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise SourceProblem(f"tool {index} has no name")
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        function["parameters"] = tool.get("inputSchema")
        declarations.append({"type": "function", "function": function})
    return declarations


def named(value: Any) -> list[dict[str, Any]]:
    """``value`` when it is a list of at most :data:`MAX_LISTED` mappings that each name a
    function: enough to pick from with ``only:`` before the full check (of what is sent)."""
    if not isinstance(value, list):
        raise SourceProblem(f"gave {describe(value)}, not a list of tool declarations")
    if len(value) > MAX_LISTED:
        raise SourceProblem(
            f"gives {len(value)} tools; cardprobe reads at most {MAX_LISTED} from one source "
            "(an application sends a few: keep those in the list the suite names)"
        )
    for index, item in enumerate(value):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise SourceProblem(f"{json_path((index,))}: not a function declaration with a name")
        _check_name(
            name, lambda problem, i=index: _fail_at(value, (i, "function", "name"), problem)
        )
    return value


def _fail_at(value: list[Any], key: KeyPath, problem: str) -> NoReturn:
    raise SourceProblem(f"{_where(value, key)}: {problem}")


def checked(value: Any) -> list[dict[str, Any]]:
    """``value`` when it is a list of valid function declarations; else the problem, naming
    the tool (by name when it has one) and the place inside it."""
    if not isinstance(value, list):
        raise SourceProblem(f"gave {describe(value)}, not a list of tool declarations")
    if not value:
        raise SourceProblem("gave no tools (an empty list)")

    def fail(key: KeyPath, problem: str) -> NoReturn:
        raise SourceProblem(f"{_where(value, key)}: {problem}")

    for index, item in enumerate(value):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            _check_name(name, lambda problem, i=index: fail((i, "function", "name"), problem))
    found = first_problem(value, "toolList")
    if found is not None:
        fail(*found)
    return check_tools(value, fail)


def _check_name(name: str, fail: Any) -> None:
    if not name:
        fail("a tool name is empty")
    if len(name) > MAX_NAME:
        fail(f"a name of {len(name)} characters; servers take at most {MAX_NAME}")
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        fail("a name with whitespace or control characters, which no server takes")


def _where(value: list[Any], key: KeyPath) -> str:
    """``tool 'read_file' ($[0].function.parameters)``, or the path alone without a name."""
    path = json_path(key)
    if key and isinstance(key[0], int) and key[0] < len(value):
        item = value[key[0]]
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str) and name and len(name) <= MAX_NAME:
            return f"tool {escape_control(name)!r} ({path})"
    return path


def within_wire_limit(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tools`` when one request can carry them all."""
    if len(tools) > MAX_WIRE_TOOLS:
        raise SourceProblem(
            f"gives {len(tools)} tools; one request declares at most {MAX_WIRE_TOOLS} "
            "(OpenAI's limit, and more than a model chooses well from) — pick the ones the "
            "application sends with `only: [names]`"
        )
    return tools
