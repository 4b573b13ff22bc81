"""Files that try to be suites are reported, never silently left out of the run."""

from __future__ import annotations

import pytest


def test_a_flow_style_suite_with_a_syntax_error_is_a_usage_error_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    (pytester.path / "broken.yaml").write_text(
        "{cardprobe: 1, name: broken,\n cases: [{id: a, prompt: q, accept: [TextBlock]}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "broken.yaml")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "broken.yaml" in out and "invalid YAML" in out and "line" in out, out


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
def test_a_suite_in_a_folder_whose_name_holds_a_bidi_override_is_a_usage_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    folder = pytester.path / "a\u202eb"
    folder.mkdir()
    (folder / "p.md").write_text("Answer with a card.\n", encoding="utf-8")
    (folder / "s.yaml").write_text(
        "cardprobe: 1\nchannels: [prose]\nconditions: [cold]\nprompts: {prose: p.md}\n"
        "cases:\n  - {id: a, prompt: q, accept: [TextBlock]}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", *xdist)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "a\\u202eb/s.yaml: the path holds U+202E RIGHT-TO-LEFT OVERRIDE" in out, out
    assert "\u202e" not in out
