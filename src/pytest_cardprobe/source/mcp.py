"""Source stage: an MCP server's tools, listed through the official ``mcp`` SDK.

Only with the optional extra (``pip install 'pytest-cardprobe[mcp]'``). A stdio server is
started with ``command`` and ``env`` (the SDK starts it in a session of its own and stops its
whole process tree when the client closes); a streamable HTTP server is reached at ``url``
with ``headers``. ``initialize``, then ``tools/list`` page after page (``cursor`` →
``nextCursor``) until the last, all under one deadline. Values of ``env`` and ``headers`` are
secrets: ``${NAME}`` reads one from the environment, and neither reaches a message (the
server's standard error is shown with them blanked).
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import asynccontextmanager
from typing import IO, Any, TextIO, cast

from pytest_cardprobe.source.listing import MAX_LISTED
from pytest_cardprobe.source.python import Bounds, Read, stderr_tail
from pytest_cardprobe.suite.sources import McpServer, SourceInvalid, SourceProblem
from pytest_cardprobe.text import escape_control
from pytest_cardprobe.wire.redact import REDACTED, redact_url

#: Most pages of ``tools/list`` read from one server.
MAX_PAGES = 200
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def label(server: McpServer) -> str:
    """How a server is named in messages and the snapshot: no env, no header, no URL secret."""
    if server.url is not None:
        return f"mcp: {redact_url(server.url)}"
    import shlex

    shown = shlex.join(server.command)
    return f"mcp: {shown if len(shown) <= 160 else shown[:157] + '...'}"


def secret_values(server: McpServer) -> list[str]:
    """The values a message about ``server`` must never show (expanded, as the server got)."""
    found = []
    for _, value in (*server.env, *server.headers):
        found += [value, _expand_quietly(value)]
    if server.url is not None:  # a password or a token typed into the URL
        import urllib.parse

        from pytest_cardprobe.wire.redact import SECRET_PARAM

        try:
            parts = urllib.parse.urlsplit(server.url)
            found += [parts.password or ""]
            found += [v for k, v in urllib.parse.parse_qsl(parts.query) if SECRET_PARAM.search(k)]
        except ValueError:
            pass
    return sorted({text for text in found if len(text) >= 3}, key=len, reverse=True)


def blank(text: str, secrets: list[str]) -> str:
    """``text`` with every secret value replaced by ``[redacted]``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _expand_quietly(value: str) -> str:
    return _REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), value)


def expand(pairs: tuple[tuple[str, str], ...], what: str) -> dict[str, str]:
    """``env``/``headers`` with ``${NAME}`` read from the environment (names only in errors)."""
    result: dict[str, str] = {}
    for name, value in pairs:
        for ref in _REFERENCE.findall(value):
            if ref not in os.environ:
                raise SourceProblem(
                    f"{what} {name}: ${{{ref}}} is not set in the environment; set it (in CI, "
                    "from a secret) or run without reading the source"
                )
        result[name] = _expand_quietly(value)
    return result


def list_tools(server: McpServer, bounds: Bounds) -> Read:
    """Every tool the server lists (as the SDK parsed it, plus the server's name and version).

    ``value`` is a list of ``{name, description, inputSchema}`` mappings in the server's order.
    """
    try:
        import anyio
    except ImportError:  # pragma: no cover - anyio comes with httpx
        raise SourceProblem("the MCP client needs anyio") from None
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise SourceProblem(
            f"{label(server)}: reading an MCP server needs the mcp extra "
            "(pip install 'pytest-cardprobe[mcp]')"
        ) from None
    secrets = secret_values(server)
    env = expand(server.env, "env")
    headers = expand(server.headers, "headers")
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:

        def tail() -> str:
            errlog.flush()
            errlog.seek(0, os.SEEK_END)
            errlog.seek(max(0, errlog.tell() - 4000))
            return blank(stderr_tail(errlog.read()), secrets)

        try:
            return anyio.run(_list, server, env, headers, bounds, errlog)
        except Exception as exc:  # the SDK's task groups wrap what happened inside
            cause = _leaf(exc)
            # The server answered, and what it listed cannot be used (our checks, or the
            # SDK's models refusing it): a change at the source, not a server missing here.
            kind = SourceInvalid if _listed_badly(cause) else SourceProblem
            if isinstance(cause, SourceProblem):
                problem = f"{label(server)}: {cause}"
            elif isinstance(cause, TimeoutError):
                problem = (
                    f"{label(server)} did not list its tools within {bounds.timeout:g} s and "
                    "was stopped (raise ini cardprobe_source_timeout if it is only slow)"
                )
            elif kind is SourceInvalid:
                problem = f"{label(server)} listed what the MCP SDK refuses: {_one_line(cause)}"
            else:
                problem = f"{label(server)} could not be read: {_one_line(cause)}"
            raise kind(blank(escape_control(problem), secrets) + tail()) from None


def _listed_badly(cause: BaseException) -> bool:
    """Whether ``cause`` says the server answered with a listing that cannot be used: one of
    this module's checks, or the SDK's Pydantic models refusing what the server sent."""
    return isinstance(cause, SourceProblem) or type(cause).__module__.startswith("pydantic")


def _leaf(exc: BaseException) -> BaseException:
    """The first real cause inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    kind = type(exc).__name__
    if not text:
        return kind
    return f"{kind}: {text if len(text) <= 300 else text[:297] + '...'}"


async def _list(
    server: McpServer,
    env: dict[str, str],
    headers: dict[str, str],
    bounds: Bounds,
    errlog: IO[str],
) -> Read:
    import anyio
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    with anyio.fail_after(bounds.timeout):
        async with (
            _transport(server, env, headers, bounds, errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            started = await session.initialize()
            tools: list[dict[str, Any]] = []
            cursors: set[str] = set()
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(_plain(tool) for tool in page.tools)
                if len(tools) > MAX_LISTED:
                    raise SourceProblem(
                        f"lists more than {MAX_LISTED} tools; cardprobe reads at most "
                        f"{MAX_LISTED} from one server (an application sends a few: "
                        "serve those, or point at a server that lists fewer)"
                    )
                cursor = page.next_cursor
                if cursor is None:
                    break
                if cursor in cursors:
                    raise SourceProblem(
                        f"tools/list sent the cursor {cursor[:40]!r} twice; the listing "
                        "would never end"
                    )
                cursors.add(cursor)
            else:
                raise SourceProblem(f"tools/list did not end after {MAX_PAGES} pages")
    info = started.server_info
    identity = {"mcp_server": f"{info.name} {info.version}".strip()}
    return Read(tools, identity)


def _plain(tool: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        found["description"] = tool.description
    found["inputSchema"] = tool.input_schema
    return found


@asynccontextmanager
async def _transport(
    server: McpServer,
    env: dict[str, str],
    headers: dict[str, str],
    bounds: Bounds,
    errlog: IO[str],
) -> Any:
    if server.url is not None:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(server.url, http_client=client) as streams,
        ):
            yield streams[0], streams[1]
        return
    from mcp.client.stdio import StdioServerParameters, stdio_client

    program, *args = server.command
    parameters = StdioServerParameters(
        command=program, args=args, env=env, cwd=str(bounds.cwd) if bounds.cwd else None
    )
    async with stdio_client(parameters, errlog=cast(TextIO, errlog)) as streams:
        yield streams[0], streams[1]
