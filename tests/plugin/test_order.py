"""Run order (model → suite → channel → condition → case) and the lanes live runs use."""

from __future__ import annotations

import re

import pytest

from pytest_cardprobe.glue.schedule import is_probe_nodeid, lane_of, lanes_by_nodeid

ID = re.compile(
    r"::(?P<case>[^\[]+)\[(?P<model>.+)-(?P<channel>prose|tool)-(?P<cond>cold|history)\]"
)


def collected(result: pytest.RunResult) -> list[re.Match[str]]:
    return [m for line in result.outlines if (m := ID.search(line))]


def runs(values: list[str]) -> list[str]:
    """Consecutive distinct values: how often the value changes along the run."""
    out: list[str] = []
    for value in values:
        if not out or out[-1] != value:
            out.append(value)
    return out


def test_tests_run_model_then_channel_then_condition_then_case(project: pytest.Pytester) -> None:
    # A live run's order (collect-only asks nothing); replay keeps the collection order.
    result = project.runpytest(
        "--co", "-q", "--live", "cases", "--model", "zeta:1b", "--model", "alpha"
    )
    ids = collected(result)
    assert len(ids) == 25 * 2 * 2 * 2
    # Each model once, in the order given (not alphabetical), so each is loaded once.
    assert runs([m["model"] for m in ids]) == ["zeta:1b", "alpha"]
    # Within a model each channel and each condition is one block, so a system prompt is
    # sent in a row (the server's prompt-prefix cache) instead of switching every test.
    first = [m for m in ids if m["model"] == "zeta:1b"]
    assert runs([f"{m['channel']}-{m['cond']}" for m in first]) == [
        "prose-cold",
        "prose-history",
        "tool-cold",
        "tool-history",
    ]
    # Cases keep the suite file's order inside each block; ids are unchanged.
    block = [m["case"] for m in first if m["channel"] == "prose" and m["cond"] == "cold"]
    assert block[:3] == ["date", "time", "toggle"]
    assert len(block) == 25
    assert ids[0].group(0) == "::date[zeta:1b-prose-cold]"


def test_ordinary_tests_keep_their_places(project: pytest.Pytester) -> None:
    project.makepyfile(test_a="def test_first():\n    pass\n")
    result = project.runpytest("--co", "-q", "--live", "test_a.py", "cases", "--model", "m")
    lines = [line for line in result.outlines if "::" in line]
    assert lines[0] == "test_a.py::test_first"
    assert lines[1] == "cases/cards.yaml::date[m-prose-cold]"


def test_lanes_are_contiguous_and_balanced() -> None:
    lanes = [lane_of(i, 10, 2) for i in range(10)]
    assert lanes == [0] * 5 + [1] * 5
    assert [lane_of(i, 7, 3) for i in range(7)] == [0, 0, 0, 1, 1, 2, 2]
    assert {lane_of(i, 4, 1) for i in range(4)} == {0}


def test_lanes_by_nodeid_split_models_at_their_boundary() -> None:
    ids = [f"cases/cards.yaml::c{i}[{m}-tool-cold]" for m in ("a:1b", "b-x:2b") for i in range(3)]
    ids.insert(2, "tests/test_x.py::test_plain")
    lanes = lanes_by_nodeid(ids, 2)
    assert "tests/test_x.py::test_plain" not in lanes
    assert {lanes[i] for i in ids if "[a:1b" in i} == {0}
    assert {lanes[i] for i in ids if "[b-x:2b" in i} == {1}
    assert is_probe_nodeid("cases/cards.yaml::date[my-model-v2-prose-history]")
    assert not is_probe_nodeid("tests/test_x.py::test_p[a-prose-cold]")


def test_replay_keeps_the_collection_order(project: pytest.Pytester) -> None:
    result = project.runpytest("--co", "-q", "cases", "--model", "zeta:1b", "--model", "alpha")
    ids = collected(result)
    # The suite file's order: each case with every model, channel and condition.
    assert [m["case"] for m in ids[:16]] == ["date"] * 8 + ["time"] * 8
