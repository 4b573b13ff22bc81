"""Call suites against the real servers: real structured calls, real tool loops, replay.

SmolLM2-135M seldom calls a tool on its own, so the pytester project here carries a conftest
whose ``pytest_cardprobe_adjust_request`` applies the pinned recipes (tests/live/recipes.py,
docs/real-servers.md "What makes SmolLM2-135M call a tool") to the first turn of every case:

* Ollama up to 0.11.6 (the pinned 0.11.4): ``format`` set to a JSON Schema of a call whose
  first value is the ``<tool_call>`` tag the Modelfile template declares (the tag recipe);
* Ollama 0.11.7 and later (today's 0.33.0): the model ``smollm2:135m-jsoncall`` (same prompt,
  parser tag ``{``) and ``format`` set to a schema of ``{name, arguments}`` (the JSON-start
  recipe), so Ollama's own parser turns the output into ``tool_calls``;
* llama-server (``--api openai``): the assistant turn prefilled with ``<tool_call>``,
  ``tool_choice: "required"`` and ``stop: ["</tool_call>"]``.

After a tool result the hook leaves the request alone, so the model's second turn is its
own. The replies are the servers' real bytes; assertions are on routes, turns and verdict
equality between the live run and the replay, never on generated text.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import recipes
import yaml

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
CLOSED_PORT = "http://127.0.0.1:9"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the user's project and return its text.",
            "parameters": {
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
    }
]

SUITE = """\
cardprobe: 1
name: mini
judge: call
conditions: [cold]
samples: 1
tools: tools.json
options: {num_predict: 64}
max_turns: 3
cases:
  - id: read
    prompt: Read the file notes.txt for me.
    expect: {call: read_file, args: {path: {type: string}}}
  - id: loop
    prompt: Read notes.txt and tell me when the meeting is.
    expect:
      sequence: [read_file]
    results:
      read_file: "Meeting moved to 10:30 on Thursday."
"""

RECIPE_CONFTEST = '''
"""Pinned recipes (tests/live/recipes.py) applied to the first turn of each case."""

import copy

RECIPE = {recipe!r}  # "tag" or "json-start": the Ollama release's own recipe


def pytest_cardprobe_adjust_request(request, probe, config):
    if any(m.get("role") == "tool" for m in request.messages):
        return  # after a tool result the model answers on its own
    if str(config.getini("cardprobe_api")) == "openai":
        request.messages.append({{"role": "assistant", "content": "<tool_call>\\n"}})
        request.options["tool_choice"] = "required"
        request.options["stop"] = ["</tool_call>"]
        return
    function = request.tools[0]["function"]
    arguments = copy.deepcopy(function["parameters"])
    arguments["additionalProperties"] = False
    properties = {{
        "name": {{"type": "string", "enum": [function["name"]]}},
        "arguments": arguments,
    }}
    if RECIPE == "tag":
        properties = {{"tag": {{"type": "string", "enum": ["<tool_call>"]}}, **properties}}
    request.options["format"] = {{
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }}
'''


def make_project(
    pytester: pytest.Pytester, server: str, model: str, api: str, recipe: str = "tag"
) -> None:
    cases = pytester.path / "cases"
    cases.mkdir()
    (cases / "tools.json").write_text(json.dumps(TOOLS, indent=2))
    (cases / "mini.yaml").write_text(SUITE)
    conftest = textwrap.dedent(RECIPE_CONFTEST.format(recipe=recipe))
    (pytester.path / "conftest.py").write_text(conftest)
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {model}\ncardprobe_servers = {server}\n"
        f"cardprobe_api = {api}\n"
    )


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"report-{time.monotonic_ns()}.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "cases", *args, f"--cardprobe-json={out}")
    return result, json.loads(out.read_text()) if out.exists() else {}


def samples(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["case"]: t["samples"][0] for t in report["tests"]}


def verdicts(report: dict[str, Any]) -> dict[str, Any]:
    return {
        t["nodeid"]: [(s["label"], s["route"], s["calls"], s["turns"]) for s in t["samples"]]
        for t in report["tests"]
    }


def record_and_replay(
    pytester: pytest.Pytester, api: str, model: str = "smollm2:135m"
) -> dict[str, dict[str, Any]]:
    live, live_report = run(pytester, "--live")
    assert live.ret == 0, live.stdout.str()  # no baseline: the gate passes, arms are new
    got = samples(live_report)
    # A real structured call in the single-call case ...
    assert got["read"]["route"] == "tool_calls", got["read"]
    assert got["read"]["calls"][0] == ["read_file"]
    # ... and a real loop: the call went back as a tool message and the model answered again.
    assert got["loop"]["route"] == "tool_calls", got["loop"]
    assert got["loop"]["turns"] >= 2, got["loop"]
    cassette = pytester.path / "cassettes" / "mini" / model.replace(":", "%3A")
    loop = yaml.safe_load(next(cassette.glob("loop-call-cold.yaml")).read_text())
    assert len(loop["interactions"]) == got["loop"]["turns"]
    second = json.loads(loop["interactions"][1]["request"]["body"])
    roles = [m["role"] for m in second["messages"]]
    assert roles[-2:] == ["assistant", "tool"]  # the call, then its result, in that order
    tool_message = second["messages"][-1]
    if api == "openai":
        assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
    else:
        assert tool_message["tool_name"] == "read_file"
    assert tool_message["content"] == "Meeting moved to 10:30 on Thursday."

    replay, replay_report = run(pytester, "--server", CLOSED_PORT)
    assert replay.ret == 0, replay.stdout.str()
    assert verdicts(replay_report) == verdicts(live_report)
    return got


def test_ollama_call_suite_records_real_calls_and_a_loop_then_replays(
    pytester: pytest.Pytester, each_ollama: Any
) -> None:
    recipe = "tag" if recipes.tag_recipe_works(each_ollama.version) else "json-start"
    model = recipes.recipe_model(each_ollama.model, each_ollama.version)
    make_project(pytester, each_ollama.base_url, model, "ollama", recipe)
    record_and_replay(pytester, "ollama", model)
    # Call suites take the same live path as card suites: one unrecorded warm-up before
    # the first recorded request, and the model's digest pinned in every cassette.
    tags = httpx.get(f"{each_ollama.base_url}/api/tags", timeout=30).json()["models"]
    digest = next(m["digest"] for m in tags if m["name"] == model)
    live, report = run(pytester, "--live", "-k", "read")
    live.stdout.fnmatch_lines([f"warm-up (unrecorded, unscored): {model} on *"])
    folder = pytester.path / "cassettes" / "mini" / model.replace(":", "%3A")
    data = yaml.safe_load((folder / "read-call-cold.yaml").read_text())
    assert data["metadata"]["cardprobe"]["model"]["digest"] == digest
    assert len(data["interactions"]) == 1  # the warm-up is not in it
    assert report["arms"][0]["model_digest"] == [digest]


def test_llama_server_call_suite_records_real_calls_and_a_loop_then_replays(
    pytester: pytest.Pytester, real_llama_server: Any
) -> None:
    make_project(pytester, real_llama_server.base_url, "smollm2:135m", "openai")
    # llama-server serves one model whatever the request names; the suite's model name only
    # keys the cassettes.
    record_and_replay(pytester, "openai")


def test_tool_description_workflow_stale_rerecord_gate(
    pytester: pytest.Pytester, each_ollama: Any
) -> None:
    """Edit a tool description, see stale naming "tools", re-record a slice, let the gate decide."""
    cases = pytester.path / "cases"
    (cases / "prompts").mkdir(parents=True)
    shutil.copy(ROOT / "cases" / "tools.yaml", cases / "tools.yaml")
    shutil.copytree(ROOT / "cases" / "tools", cases / "tools")
    shutil.copy(ROOT / "cases" / "prompts" / "coding-assistant.md", cases / "prompts")
    shutil.copytree(ROOT / "cassettes" / "tools", pytester.path / "cassettes" / "tools")
    shutil.copy(ROOT / "cardprobe-baseline.json", pytester.path / "cardprobe-baseline.json")
    pytester.makeini(
        f"[pytest]\ncardprobe_models = {each_ollama.model}\n"
        f"cardprobe_servers = {each_ollama.base_url}\n"
    )
    slice_ = ("-k", "(readme or capital) and cold")
    before, _ = run(pytester, *slice_)
    assert before.ret == 0, before.stdout.str()

    tools = cases / "tools" / "tools.json"
    declared = json.loads(tools.read_text())
    declared[0]["function"]["description"] = (
        "Return the full text of one file in the project. Call it whenever the user wants to "
        "see a file."
    )
    tools.write_text(json.dumps(declared, indent=2))
    stale, _ = run(pytester, *slice_)
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    stale.stdout.fnmatch_lines(
        ["*stale — suite tools*", "  read_file: description changed (* test(s))", "FAILED *readme*"]
    )

    live, _ = run(pytester, "--live", *slice_)
    assert live.ret in (0, 1), live.stdout.str()  # the gate decides; either way it decided
    replay, report = run(pytester, *slice_)
    assert report["gate"]["decision"] in ("pass", "fail")
    arm = report["gate"]["arms"]["tools/smollm2:135m/call/cold"]
    assert arm["compared"] == 2
    assert replay.ret == (0 if report["gate"]["decision"] == "pass" else 1)
    why = "the reworded description's behaviour, as the test accepts it"
    accepted, accepted_report = run(
        pytester, "--update-baseline", "--cardprobe-accept-reason", why, *slice_
    )
    assert accepted.ret == 0 and accepted_report["gate"]["decision"] == "updated"


def test_shipped_tool_suite_slice_through_openai_on_llama_server(
    pytester: pytest.Pytester, real_llama_server: Any
) -> None:
    """The shipped suite as the model really answers (no recipe), over --api openai."""
    cases = pytester.path / "cases"
    (cases / "prompts").mkdir(parents=True)
    shutil.copy(ROOT / "cases" / "tools.yaml", cases / "tools.yaml")
    shutil.copytree(ROOT / "cases" / "tools", cases / "tools")
    shutil.copy(ROOT / "cases" / "prompts" / "coding-assistant.md", cases / "prompts")
    pytester.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\n"
        f"cardprobe_servers = {real_llama_server.base_url}\ncardprobe_api = openai\n"
    )
    slice_ = ("-k", "readme or capital or find_then_read", "--condition", "cold", "--samples", "1")
    # The model fails most cases; the first recording writes the baseline, so the run is
    # not red for it, and the replay reads the same failures as known.
    live, live_report = run(pytester, "--live", "--update-baseline", *slice_)
    assert live.ret == 0, live.stdout.str()
    assert len(live_report["tests"]) == 3
    for test in live_report["tests"]:
        (sample,) = test["samples"]
        assert sample["route"] in ("tool_calls", "recovered", "content", "swallowed")
        assert sample["turns"] >= 1
    replay, replay_report = run(pytester, "--server", CLOSED_PORT, *slice_)
    assert replay.ret == 0, replay.stdout.str()
    assert verdicts(replay_report) == verdicts(live_report)
