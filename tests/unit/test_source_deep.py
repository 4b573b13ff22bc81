"""What the application's module holds reaches the plugin as JSON from a subprocess: a tool
list nested deeper than the plugin reads, or a prompt holding a lone surrogate, is a problem
naming the source and the reason, not "exited without an answer (did the module end the
process at import?)"."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_source_snapshot import project, reader  # noqa: F401

from pytest_cardprobe.suite.sources import PromptSource, SourceProblem, ToolSource

DEEP = """
_d = []
for _ in range(900):
    _d = [_d]
TOOLS = [{"type": "function", "function": {"name": "g", "parameters": {
    "type": "object", "properties": {"x": {"type": "array", "default": _d}}}}}]
LONE = "Be \\ud800 brief."
"""


def test_a_tool_list_too_deep_to_read_is_said_so(project: Path) -> None:  # noqa: F811
    (project / "snapapp" / "deep.py").write_text(DEEP)
    with pytest.raises(SourceProblem) as caught:
        reader(project, recording=True).tools(
            "app", project / "app.yaml", "tools", ToolSource(python="snapapp.deep:TOOLS")
        )
    said = str(caught.value)
    assert "snapapp.deep:TOOLS" in said and "nested more than 64 levels" in said, said
    assert "without an answer" not in said


def test_a_prompt_with_a_lone_surrogate_is_said_so(project: Path) -> None:  # noqa: F811
    (project / "snapapp" / "deep.py").write_text(DEEP)
    with pytest.raises(SourceProblem) as caught:
        reader(project, recording=True).prompt(
            "app", project / "app.yaml", "prompts.call", PromptSource("snapapp.deep:LONE")
        )
    said = str(caught.value)
    assert "snapapp.deep:LONE" in said and "lone surrogate" in said, said
    assert "without an answer" not in said
