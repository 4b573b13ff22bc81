"""Reading ``python: package.module:NAME`` in a bounded subprocess (source/python.py, appside.py).

Real subprocesses importing real modules written by the tests, and the official ``ollama`` and
``openai`` clients converting functions and Pydantic models with their own code. Hostile
modules (raising, looping, exiting, printing, holding something that is not a tool list) each
end in a clear :class:`SourceProblem` within the time bound.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.source.listing import checked
from pytest_cardprobe.source.python import Bounds, convert_items, read_python
from pytest_cardprobe.suite.sources import SourceProblem

APP = '''\
from pydantic import BaseModel, Field


def read_file(path: str, limit: int = 100) -> str:
    """Read a text file of the project.

    Args:
      path: Path of the file, relative to the project root.
      limit: Most lines to return.
    """
    return ""


class SearchCode(BaseModel):
    """Search the project's code for a text."""

    query: str = Field(description="What to look for.")


FUNCTIONS = [read_file]
MODELS = [SearchCode]
DICTS = [{"type": "function", "function": {"name": "x", "description": "d", "parameters":
          {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}}}]
SYSTEM = "You are the app's assistant."
'''


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder holding the package ``testapp``, on the session's sys.path."""
    package = tmp_path / "testapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def bounds(app: Path, timeout: float = 60.0, max_bytes: int = 10_000_000) -> Bounds:
    return Bounds(timeout, max_bytes, app)


def module(app: Path, name: str, text: str) -> str:
    (app / "testapp" / f"{name}.py").write_text(textwrap.dedent(text))
    return f"testapp.{name}"


def test_functions_convert_as_the_ollama_client_converts_them(app: Path) -> None:
    read = read_python("testapp.tools:FUNCTIONS", "tools", "ollama", bounds(app))
    assert read.identity == {"converter": "ollama", "version": importlib.metadata.version("ollama")}
    (tool,) = checked(read.value)
    function = tool["function"]
    assert function["name"] == "read_file"
    assert function["description"] == "Read a text file of the project."
    # The client's quirk, inherited on purpose: a parameter with a default is required too.
    assert function["parameters"]["required"] == ["path", "limit"]
    assert function["parameters"]["properties"]["limit"] == {
        "type": "integer",
        "description": "Most lines to return.",
    }


def test_pydantic_models_convert_as_the_openai_client_converts_them(app: Path) -> None:
    read = read_python("testapp.tools:MODELS", "tools", "openai", bounds(app))
    assert read.identity["converter"] == "openai"
    (tool,) = checked(read.value)
    import openai
    from testapp.tools import SearchCode  # type: ignore[import-not-found]

    assert tool == openai.pydantic_function_tool(SearchCode)
    assert list(tool["function"]) == list(openai.pydantic_function_tool(SearchCode)["function"])


def test_dicts_are_used_as_they_are_unless_a_client_converts_them(app: Path) -> None:
    plain = read_python("testapp.tools:DICTS", "tools", None, bounds(app))
    assert plain.value[0]["function"]["parameters"]["properties"]["a"]["maxLength"] == 3
    # The ollama client passes a dict through its Tool model, which keeps only the keys it
    # knows: what the application really sends has no maxLength.
    through = read_python("testapp.tools:DICTS", "tools", "ollama", bounds(app))
    assert through.value[0]["function"]["parameters"]["properties"]["a"] == {"type": "string"}
    again = convert_items(plain.value, "ollama", bounds(app))
    assert again.value == through.value


def test_a_prompt_is_a_string_of_the_module(app: Path) -> None:
    assert read_python("testapp.tools:SYSTEM", "prompt", None, bounds(app)).value == (
        "You are the app's assistant."
    )


def problem(
    app: Path, target: str, task: str = "tools", convert: str | None = None, **kw: Any
) -> str:
    with pytest.raises(SourceProblem) as info:
        read_python(target, task, convert, bounds(app, **kw))
    return str(info.value)


def test_a_function_without_convert_says_which_client_converts_it(app: Path) -> None:
    assert problem(app, "testapp.tools:FUNCTIONS") == (
        "python: testapp.tools:FUNCTIONS: item 0 is the function read_file, not a tool "
        "declaration; a function is converted by the ollama client: `convert: ollama`"
    )
    assert "the openai client converts Pydantic models" in problem(
        app, "testapp.tools:FUNCTIONS", convert="openai"
    )


@pytest.mark.parametrize(
    ("target", "wanted"),
    [
        ("nosuchapp.tools:TOOLS", "module 'nosuchapp' is not importable from the project"),
        # The package is there, the module is not: a change in the application.
        ("testapp.missing:TOOLS", "module 'testapp.missing' is not in the package 'testapp'"),
        ("testapp.tools:NOPE", "testapp.tools has no 'NOPE'"),
        ("testapp.tools:SYSTEM", "holds a str, not a list of tools"),
        ("testapp.tools:read_file", "holds the function read_file, not a list of tools"),
    ],
)
def test_what_the_target_is_not_is_said(app: Path, target: str, wanted: str) -> None:
    assert wanted in problem(app, target)


def test_a_prompt_that_is_no_string_is_refused(app: Path) -> None:
    assert "holds a list, not a string" in problem(app, "testapp.tools:DICTS", task="prompt")


HOSTILE = {
    "raises": (
        "raise RuntimeError('the database is down')\n",
        "RuntimeError: the database is down",
    ),
    "exits": ("import os\nos._exit(0)\n", "exited (code 0) without an answer"),
    "sys_exit": ("import sys\nsys.exit(4)\n", "SystemExit: 4"),
    "not_json": ("TOOLS = [{'type': 'function', 'function': {'name': {1, 2}}}]\n", "no JSON"),
    "nan": ("TOOLS = [{'a': float('nan')}]\n", "no JSON"),
    "strings": ("TOOLS = ['read_file']\n", "item 0 is a str, not a tool declaration"),
    "prints": (
        "import os\nprint('[{\"ok\": true}]')\nos.write(1, b'garbage')\nTOOLS = 5\n",
        "holds an int, not a list of tools",
    ),
    "missing_dep": (
        "import no_such_dependency_here\n",
        "No module named 'no_such_dependency_here'",
    ),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_module_is_a_clear_problem(app: Path, kind: str) -> None:
    text, wanted = HOSTILE[kind]
    name = module(app, kind, text)
    message = problem(app, f"{name}:TOOLS")
    assert message.startswith(f"python: {name}:TOOLS")
    assert wanted in message


def test_the_tail_of_standard_error_says_where_an_import_failed(app: Path) -> None:
    name = module(app, "deep", "def f():\n    raise KeyError('settings.API_URL')\nf()\n")
    message = problem(app, f"{name}:TOOLS")
    assert "KeyError: 'settings.API_URL'" in message
    assert "its standard error ended with:" in message and "deep.py" in message


def test_a_module_that_loops_is_stopped_at_the_deadline(app: Path) -> None:
    name = module(app, "loops", "while True:\n    pass\n")
    started = time.monotonic()
    message = problem(app, f"{name}:TOOLS", timeout=3.0)
    took = time.monotonic() - started
    assert "did not finish within 3 s and was stopped" in message
    assert took < 3.0 + 5.0, took  # the deadline, the kill, a loaded machine's slack


def test_a_helper_the_module_started_dies_with_it(app: Path) -> None:
    pid_file = app / "helper.pid"
    name = module(
        app,
        "spawns",
        f"""\
        import subprocess, sys
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pid_file)!r}, "w").write(str(helper.pid))
        while True:
            pass
        """,
    )
    problem(app, f"{name}:TOOLS", timeout=3.0)
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the helper {pid} outlived the deadline")


def test_a_module_that_floods_its_output_is_capped(app: Path) -> None:
    name = module(app, "big", "TOOLS = [{'x': 'y' * 1000}] * 5000\n")
    message = problem(app, f"{name}:TOOLS", max_bytes=100_000)
    assert "gave more than 100000 bytes and was stopped" in message


def test_the_subprocess_is_the_sessions_interpreter_with_its_path(app: Path) -> None:
    name = module(app, "where", "import sys\nTOOLS = sys.executable\n")
    message = problem(app, f"{name}:TOOLS")  # a str, so refused; the path is the point
    assert "holds a str" in message
    prompt = read_python(f"{name}:TOOLS", "prompt", None, bounds(app)).value
    assert prompt == sys.executable
