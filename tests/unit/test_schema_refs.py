"""A tool schema whose ``$ref``s loop without reading deeper into the arguments is a usage
error at load; recursion through a nested property stays allowed."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cardprobe.judge.argschema import schema_problem
from pytest_cardprobe.suite.toolsfile import check_tools


def tools(parameters: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "t", "parameters": parameters}}]


class Refused(Exception):
    pass


def fail(key: Any, problem: str) -> Any:
    raise Refused(f"{key}: {problem}")


LOOPS = {
    "a-b-a": {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    },
    "self": {"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {}},
    "through-allOf": {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
    },
    "root": {"type": "object", "properties": {}, "not": {"$ref": "#"}},
}


@pytest.mark.parametrize("name", list(LOOPS))
def test_a_ref_cycle_is_refused_at_load_naming_the_chain(name: str) -> None:
    with pytest.raises(Refused) as caught:
        check_tools(tools(LOOPS[name]), fail)
    message = str(caught.value)
    assert "$ref cycle" in message and "would never end" in message, message


def test_the_message_names_the_chain_and_where_it_starts() -> None:
    with pytest.raises(Refused) as caught:
        check_tools(tools(LOOPS["a-b-a"]), fail)
    message = str(caught.value)
    assert "'$defs', 'a'" in message or "$defs" in message
    assert "#/$defs/b -> #/$defs/a -> #/$defs/b" in message, message


RECURSIVE_BUT_FINE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/node"}},
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
}


def test_recursion_through_a_nested_property_loads_and_judges() -> None:
    assert check_tools(tools(RECURSIVE_BUT_FINE), fail)
    deep: dict[str, Any] = {"children": []}
    for _ in range(30):
        deep = {"children": [deep]}
    assert schema_problem({"tree": deep}, RECURSIVE_BUT_FINE) is None
    assert schema_problem({"tree": {"children": [1]}}, RECURSIVE_BUT_FINE) is not None


def test_a_suite_with_a_ref_cycle_stops_the_run_with_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    import json

    (pytester.path / "tools.json").write_text(json.dumps(tools(LOOPS["a-b-a"])), encoding="utf-8")
    (pytester.path / "calls.yaml").write_text(
        "cardprobe: 1\njudge: call\nconditions: [cold]\ntools: tools.json\n"
        "cases:\n  - {id: a, prompt: q, expect: {call: t}}\n",
        encoding="utf-8",
    )
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "tools.json" in out and "$ref cycle" in out, out


def chain(links: int) -> dict[str, Any]:
    """A property whose schema is reached through ``links`` $refs, then a string."""
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(links)}
    defs[f"d{links}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def test_a_chain_of_refs_at_the_bound_loads_and_judges() -> None:
    parameters = chain(30)  # x, d0 … d30: 32 schemas on one value
    assert check_tools(tools(parameters), fail)
    assert schema_problem({"x": 1}, parameters) is not None


def test_a_chain_of_refs_past_the_bound_is_refused_not_a_recursion_error_per_call() -> None:
    with pytest.raises(Refused, match=r"a chain of 33 schemas .* more than the 32"):
        check_tools(tools(chain(31)), fail)
    with pytest.raises(Refused, match="more than the 32"):
        check_tools(tools(chain(3000)), fail)  # judging it ended in RecursionError
