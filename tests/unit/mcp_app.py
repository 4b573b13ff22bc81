"""A small MCP server for the source tests, built with the official ``mcp`` SDK.

    python tests/unit/mcp_app.py [--http PORT] [--page N] [--tools FILE] [--describe TEXT]
    python tests/unit/mcp_app.py --raw FILE      # hand-written JSON-RPC: hostile listings
    python tests/unit/mcp_app.py --crash | --hang | --echo-env NAME

The SDK server lists the tools of ``--tools`` (a JSON list of ``{name, description,
inputSchema}``; default: two tools of a code assistant) in pages of ``--page``, over stdio or
streamable HTTP on ``--port``. ``--describe`` replaces the first tool's description (what an
edit to the application's server looks like). ``--raw`` answers ``initialize`` and
``tools/list`` with the JSON-RPC ``result`` objects in FILE as they are (a list of
``tools/list`` results, one per page), so a listing the SDK server would never send can be
sent: an invalid ``inputSchema``, a cursor that repeats, lines that are not JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

DEFAULT_TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a text file of the user's project and return its text.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "maxLength": 30,
                    "description": "Path of the file, relative to the project root.",
                }
            },
            "required": ["path"],
        },
    },
    {
        "name": "code.search",
        "description": "Search the project's code for a text.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "mode": {"type": "string", "enum": ["word", "regex"], "description": "How."},
            },
            "required": ["query"],
        },
    },
]


def sdk_server(tools: list[dict[str, Any]], page: int) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        start = int(params.cursor) if params is not None and params.cursor else 0
        chunk = tools[start : start + page]
        following = start + page
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t["name"], description=t.get("description"), input_schema=t["inputSchema"]
                )
                for t in chunk
            ],
            next_cursor=str(following) if following < len(tools) else None,
        )

    return Server("cardprobe-test-app", version="1.2.3", on_list_tools=list_tools)


def run_stdio(server: Any) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def run_http(server: Any, port: int) -> None:
    import uvicorn

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


def run_raw(pages: list[dict[str, Any]]) -> None:
    """Answer JSON-RPC lines on stdin with the given results (initialize first)."""
    served = 0
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "id" not in message:
            continue  # a notification
        if message.get("method") == "initialize":
            result: Any = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "0"},
            }
        elif message.get("method") == "tools/list":
            page = pages[min(served, len(pages) - 1)]
            served += 1
            if page.get("garbage"):
                sys.stdout.write("this is not JSON\n")
                sys.stdout.flush()
                continue
            result = page
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        sys.stdout.write("\n")
        sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--tools")
    parser.add_argument("--many", type=int, help="list this many generated tools")
    parser.add_argument("--describe")
    parser.add_argument("--raw")
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--echo-env")
    args = parser.parse_args()
    if args.echo_env:
        print(f"{args.echo_env}={os.environ.get(args.echo_env)}", file=sys.stderr, flush=True)
    if args.crash:
        print("Traceback: the server broke at start", file=sys.stderr)
        return 3
    if args.hang:
        time.sleep(3600)
        return 0
    if args.raw:
        with open(args.raw, encoding="utf-8") as handle:
            run_raw(json.load(handle))
        return 0
    tools = DEFAULT_TOOLS
    if args.tools:
        with open(args.tools, encoding="utf-8") as handle:
            tools = json.load(handle)
    if args.many:
        tools = [
            {"name": f"tool_{i}", "description": f"Tool {i}.", "inputSchema": {"type": "object"}}
            for i in range(args.many)
        ]
    if args.describe is not None:
        tools = [{**tools[0], "description": args.describe}, *tools[1:]]
    server = sdk_server(tools, args.page)
    if args.http:
        run_http(server, args.http)
    else:
        run_stdio(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
