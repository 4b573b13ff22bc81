"""The application's own tools, with the official clients and the real servers.

1. Byte identity: the official ``ollama`` and ``openai`` Python clients send a tool set given
   as Python functions, Pydantic models, dicts or listed by an MCP server (tests/unit/mcp_app.py,
   built with the ``mcp`` SDK) to the real Ollama releases and llama-server, through a
   pass-through proxy that keeps each request body as the client put it on the wire
   (tests/live/faultproxy.py). The ``tools`` array a ``python:`` or ``mcp:`` source yields,
   written as the clients write JSON, is that array's bytes, key order included.
2. A suite over each source records with ``--live``, replays with the source gone, goes stale
   naming the tool and field when the function's docstring or the MCP tool's description
   changes, is re-recorded, and the gate decides.

SmolLM2-135M seldom calls a tool; what it answers is recorded and judged as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faultproxy import FaultProxy

from pytest_cardprobe.source.listing import checked, from_mcp
from pytest_cardprobe.source.mcp import list_tools
from pytest_cardprobe.source.python import Bounds, convert_items, read_python
from pytest_cardprobe.suite.sources import McpServer
from pytest_cardprobe.wire.body import json_body

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
MCP_APP = ROOT / "tests" / "unit" / "mcp_app.py"
LLAMA_MODEL = "smollm2-135m"
APP = '''\
"""The tools of a small coding assistant, the way applications keep them."""

from pydantic import BaseModel, Field


def read_file(path: str, limit: int = 200) -> str:
    """{doc}

    Args:
      path: Path of the file, relative to the project root.
      limit: Most lines to return.
    """
    return ""


def search_code(query: str, regex: bool = False) -> str:
    """Search the project's code for a text.

    Args:
      query: What to look for.
      regex: Whether query is a regular expression.
    """
    return ""


class ReadFile(BaseModel):
    """{doc}"""

    path: str = Field(description="Path of the file, relative to the project root.")
    limit: int = Field(200, description="Most lines to return.")


class SearchCode(BaseModel):
    """Search the project's code for a text."""

    query: str = Field(description="What to look for.")


FUNCTIONS = [read_file, search_code]
MODELS = [ReadFile, SearchCode]
DICTS = [
    {{
        "type": "function",
        "function": {{
            "name": "read_file",
            "description": "{doc}",
            "parameters": {{
                "type": "object",
                "properties": {{
                    "path": {{"type": "string", "maxLength": 80, "description": "A path."}},
                }},
                "required": ["path"],
            }},
        }},
    }}
]
SYSTEM = "You are a coding assistant. Use a tool when the question needs the project's files."
'''
DOC = "Read a text file of the user's project and return its text."


def write_app(folder: Path, doc: str = DOC) -> None:
    package = folder / "liveapp"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(APP.format(doc=doc))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("liveapp")
    write_app(folder)
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m.startswith("liveapp")]:
            del sys.modules[name]


def app_objects(name: str) -> list[Any]:
    return list(getattr(importlib.import_module("liveapp.tools"), name))


def bounds(folder: Path) -> Bounds:
    return Bounds(120.0, 10_000_000, folder)


def mcp_dicts() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What an application's own MCP client makes of the server's tools (the SDK, by hand,
    the usual shape), and what the ``mcp:`` source yields for the same server."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def listed() -> list[Any]:
        parameters = StdioServerParameters(command=sys.executable, args=[str(MCP_APP)])
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return list((await s.list_tools()).tools)

    by_hand = [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in anyio.run(listed)
    ]
    read = list_tools(McpServer(command=(sys.executable, str(MCP_APP))), Bounds(120, 10**7, None))
    return by_hand, checked(from_mcp(read.value))


def wire_tools(body: bytes) -> str:
    """The ``tools`` array of a captured request body, as the bytes it was sent as."""
    text = body.decode("utf-8")
    start = text.index('"tools":') + len('"tools":')
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]


def as_clients_write(tools: Any) -> str:
    """JSON as both clients write a request (httpx's and openai's compact, non-ASCII form)."""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def send_with_ollama(server: str, tools: list[Any], model: str) -> bytes:
    import ollama

    with FaultProxy(server) as proxy:
        client = ollama.Client(host=proxy.url)
        client.chat(
            model=model,
            messages=[{"role": "user", "content": "Show me README.md."}],
            tools=tools,
            options={"num_predict": 1, "temperature": 0},
        )
        (body,) = proxy.bodies
    return body


def send_with_openai(base_url: str, tools: list[Any], model: str) -> bytes:
    import openai

    with FaultProxy(base_url) as proxy:
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="unused", max_retries=0)
        client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "Show me README.md."}],
            tools=tools,
            max_tokens=1,
            temperature=0,
        )
        (body,) = proxy.bodies
    return body


@pytest.mark.parametrize("kind", ["functions", "dicts", "mcp"])
def test_the_ollama_client_sends_the_bytes_the_source_yields(
    app: Path, each_ollama: Any, kind: str
) -> None:
    if kind == "mcp":
        by_hand, listed = mcp_dicts()
        sent: list[Any] = by_hand
        yielded = convert_items(listed, "ollama", bounds(app)).value
    else:
        sent = app_objects(kind.upper())
        yielded = read_python(f"liveapp.tools:{kind.upper()}", "tools", "ollama", bounds(app)).value
    body = send_with_ollama(each_ollama.base_url, sent, each_ollama.model)
    assert wire_tools(body) == as_clients_write(yielded)
    # cardprobe's own request body writes the same bytes for them.
    assert as_clients_write(yielded) in json_body({"tools": yielded})
    if kind == "functions":  # the client's quirk, inherited: a defaulted parameter is required
        assert json.loads(wire_tools(body))[0]["function"]["parameters"]["required"] == [
            "path",
            "limit",
        ]


OPENAI_KINDS = ["models", "dicts", "mcp"]


def openai_case(app: Path, kind: str) -> tuple[list[Any], Any]:
    import openai

    if kind == "mcp":
        by_hand, listed = mcp_dicts()
        return by_hand, listed
    if kind == "models":
        sent = [openai.pydantic_function_tool(m) for m in app_objects("MODELS")]
        return sent, read_python("liveapp.tools:MODELS", "tools", "openai", bounds(app)).value
    return app_objects("DICTS"), read_python(
        "liveapp.tools:DICTS", "tools", None, bounds(app)
    ).value


@pytest.mark.parametrize("kind", OPENAI_KINDS)
def test_the_openai_client_sends_the_bytes_the_source_yields_to_ollama(
    app: Path, each_ollama: Any, kind: str
) -> None:
    sent, yielded = openai_case(app, kind)
    body = send_with_openai(each_ollama.base_url, sent, each_ollama.model)
    assert wire_tools(body) == as_clients_write(yielded)


@pytest.mark.parametrize("kind", OPENAI_KINDS)
def test_the_openai_client_sends_the_bytes_the_source_yields_to_llama_server(
    app: Path, real_llama_server: Any, kind: str
) -> None:
    sent, yielded = openai_case(app, kind)
    body = send_with_openai(real_llama_server.base_url, sent, real_llama_server.model)
    assert wire_tools(body) == as_clients_write(yielded)


# ---------------------------------------------------------------- suites over each source

SUITE = """\
cardprobe: 1
name: live-sources
judge: call
conditions: [cold]
samples: 1
tools: {tools}
prompts: {{call: {{python: 'liveapp.tools:SYSTEM'}}}}
options: {{num_predict: 16}}
cases:
  - id: readme
    prompt: Show me what is in README.md.
    expect: {{call: {call}}}
"""


def make_project(pytester: pytest.Pytester, tools: str, call: str, server: str, api: str) -> None:
    write_app(pytester.path)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "app.yaml").write_text(SUITE.format(tools=tools, call=call))
    pytester.makeini(
        f"[pytest]\npythonpath = .\ncardprobe_servers = {server}\ncardprobe_api = {api}\n"
    )


def run(pytester: pytest.Pytester, model: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "cases", "--model", model, "--cardprobe-no-warmup", *args
    )


def workflow(pytester: pytest.Pytester, model: str, edit: Any, gone: Any, field: str) -> None:
    """Record, replay without the source, edit at the source (stale), re-record, gate."""
    recorded = run(pytester, model, "--live", "--cardprobe-update-baseline")
    assert recorded.ret == 0, recorded.stdout.str()
    folder = pytester.path / "cassettes" / "live-sources"
    snapshot = json.loads((folder / "@sources.json").read_text())
    tools = snapshot["entries"]["tools"]["value"]
    cassette = yaml.safe_load(next(folder.glob("*/readme-call-cold.yaml")).read_text())
    # What went on the wire (and into the cassette's request) is what the source yielded.
    assert wire_tools(cassette["interactions"][0]["request"]["body"].encode()) == (
        as_clients_write(tools)
    )

    gone()  # the source is unavailable: no module, no server
    offline = run(pytester, model, "--cardprobe-server", "http://127.0.0.1:9")
    assert offline.ret == 0, offline.stdout.str()
    offline.stdout.fnmatch_lines(["*tools from *: snapshot used unchecked*"])
    assert "1 passed" in offline.stdout.str() or "1 xfailed" in offline.stdout.str()

    edit()
    stale = run(pytester, model, "--cardprobe-server", "http://127.0.0.1:9")
    assert stale.ret == 1
    # One line per change, naming the source, then the command that records exactly them.
    stale.stdout.fnmatch_lines(
        [
            "  1 stale — suite live-sources (cases/app.yaml)",
            f"  tools changed at the source (*): {field} (1 test(s))",
            "  record exactly them: pytest * --cardprobe-record-mode stale",
        ]
    )

    rerecorded = run(pytester, model, "--live")
    again = run(pytester, model, "--cardprobe-server", "http://127.0.0.1:9")
    out = again.stdout.str()
    assert "checked against the source: unchanged" in out
    decided = "gate: pass" if "gate: pass" in out else "gate: fail"
    assert decided in out, out
    assert again.ret == (0 if decided == "gate: pass" else 1), out
    assert rerecorded.ret in (0, 1)


def test_a_suite_of_python_functions_records_replays_and_goes_stale(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    tools = "{python: 'liveapp.tools:FUNCTIONS', convert: ollama}"
    make_project(pytester, tools, "read_file", real_ollama.base_url, "ollama")
    package = pytester.path / "liveapp"
    kept = pytester.path / "kept-liveapp"

    def gone() -> None:
        shutil.move(package, kept)

    def edit() -> None:
        shutil.move(kept, package)
        write_app(pytester.path, doc="Read one file of the project.")

    workflow(pytester, real_ollama.model, edit, gone, "read_file: description changed")


def test_a_suite_of_pydantic_models_records_replays_and_goes_stale(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    # Through Ollama's OpenAI-compatible API, as an application on the openai client asks.
    tools = "{python: 'liveapp.tools:MODELS', convert: openai}"
    make_project(pytester, tools, "ReadFile", real_ollama.base_url, "openai")
    package = pytester.path / "liveapp"
    kept = pytester.path / "kept-liveapp"

    def gone() -> None:
        shutil.move(package, kept)

    def edit() -> None:
        shutil.move(kept, package)
        write_app(pytester.path, doc="Read one file of the project.")

    workflow(pytester, real_ollama.model, edit, gone, "ReadFile: description changed")


def test_a_suite_over_a_stdio_mcp_server_records_replays_and_goes_stale(
    pytester: pytest.Pytester, real_ollama: Any
) -> None:
    # The server is the project's own script, reading its tools from the project: the suite
    # names it once; taking it away, or editing a description, happens at the server.
    server = pytester.path / "server.py"
    listing = pytester.path / "listing.json"
    spec = importlib.util.spec_from_file_location("mcp_app", MCP_APP)
    assert spec is not None and spec.loader is not None
    mcp_app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mcp_app)
    listing.write_text(json.dumps(mcp_app.DEFAULT_TOOLS))
    command = [sys.executable, "server.py", "--tools", "listing.json", "--page", "1"]
    spec = {"mcp": {"command": command, "replace": {".": "_"}}, "only": ["read_file"]}
    make_project(pytester, json.dumps(spec), "read_file", real_ollama.base_url, "ollama")
    shutil.copy(MCP_APP, server)
    kept = pytester.path / "kept-server.py"

    def gone() -> None:
        shutil.move(server, kept)

    def edit() -> None:
        shutil.move(kept, server)
        changed = json.loads(listing.read_text())
        changed[0]["description"] = "Read one file of the project."
        listing.write_text(json.dumps(changed))

    workflow(pytester, real_ollama.model, edit, gone, "read_file: description changed")
    # only: the server lists two tools, the application (and so the request) sends one.
    folder = pytester.path / "cassettes" / "live-sources"
    cassette = yaml.safe_load(next(folder.glob("*/readme-call-cold.yaml")).read_text())
    sent = json.loads(cassette["interactions"][0]["request"]["body"])["tools"]
    assert [t["function"]["name"] for t in sent] == ["read_file"]


@pytest.fixture
def http_mcp() -> Iterator[tuple[str, Path]]:
    """The test MCP server over streamable HTTP, two tools a page; restartable with a new
    description (the ``describe`` file)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    state: dict[str, Any] = {}

    def start(*extra: str) -> None:
        state["process"] = subprocess.Popen(
            [sys.executable, str(MCP_APP), "--http", str(port), "--page", "1", *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)

    def stop() -> None:
        process = state.pop("process", None)
        if process is not None:
            process.terminate()
            process.wait(timeout=20)

    state["start"], state["stop"] = start, stop
    start()
    try:
        yield f"http://127.0.0.1:{port}/mcp", state  # type: ignore[misc]
    finally:
        stop()


def test_a_suite_over_an_http_mcp_server_records_replays_and_goes_stale(
    pytester: pytest.Pytester, real_llama_server: Any, http_mcp: Any
) -> None:
    url, state = http_mcp
    tools = json.dumps({"mcp": {"url": url, "prefix": "app_", "replace": {".": "_"}}})
    make_project(pytester, tools, "app_read_file", real_llama_server.base_url, "openai")

    def gone() -> None:
        state["stop"]()

    def edit() -> None:
        state["start"]("--describe", "Read one file of the project.")

    workflow(pytester, real_llama_server.model, edit, gone, "app_read_file: description changed")
