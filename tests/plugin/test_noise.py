"""A gate that knows the noise, on the shipped recordings edited into regressions.

The replies are test data (edited cassettes); replay, judging, the baseline, the paired
test and both gate modes are the real ones. Six cases of prose/cold are made to pass on
both samples and written into the baseline; then some of them lose one sample (the case
becomes unstable: a coin flip) or both (it really broke).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from cardprobe_testing import cassette, report, set_replies

from pytest_cardprobe.score.stats import ALPHA as A

CARDS = {
    "date": [{"type": "Input.Date", "id": "day", "label": "Day"}],
    "time": [{"type": "Input.Time", "id": "at", "label": "Time"}],
    "toggle": [{"type": "Input.Toggle", "id": "on", "title": "Remind me"}],
    "text": [{"type": "Input.Text", "id": "name", "label": "Name"}],
    "number": [{"type": "Input.Number", "id": "n", "label": "How many"}],
    "choice_size": [
        {"type": "Input.ChoiceSet", "id": "size", "choices": [{"title": "S", "value": "s"}]}
    ],
}
PROSE = "Any weekday morning works well for most people."
ARM = "cards/smollm2:135m/prose/cold"


# These tests read the gate's figures, not the layout: every column, the gate line whole.
pytestmark = pytest.mark.usefixtures("wide_terminal")
SIGNIFICANCE = ("--cardprobe-gate", "significance")


def set_reply(path: Path, sample: int, content: str, done_reason: str | None = None) -> None:
    """Rewrite the reply of one sample (one recorded interaction) of a prose cassette;
    ``done_reason`` also replaces why the server said the reply ended."""
    data = yaml.safe_load(path.read_text())
    body = data["interactions"][sample]["response"]["body"]
    reply = json.loads(body["string"])
    reply["message"]["content"] = content
    if done_reason is not None:
        reply["done_reason"] = done_reason
    body["string"] = json.dumps(reply)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def passing(recorded: pytest.Pytester) -> pytest.Pytester:
    """Six prose/cold cases pass on both samples, and the baseline says so."""
    for case, body in CARDS.items():
        set_replies(cassette(recorded, case, "prose", "cold"), content=json.dumps(body))
    result, _ = report(recorded, "--cardprobe-update-baseline")
    assert result.ret == 0, result.stdout.str()
    verdicts = json.loads((recorded.path / "cardprobe-baseline.json").read_text())["arms"][ARM]
    # The entry also carries when its cassette was recorded (the cassette's own metadata).
    shipped = yaml.safe_load(cassette(recorded, "date", "prose", "cold").read_text())
    recorded_at = shipped["metadata"]["cardprobe"]["recorded"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", recorded_at)
    assert verdicts["verdicts"]["date"] == {
        "calls": 2, "label": "ok Input.Date", "passed": True, "recorded": recorded_at,
        "samples": 2, "samples_passed": 2, "tool_calls": 0,
    }  # fmt: skip
    return recorded


def unsettle(project: pytest.Pytester, cases: list[str]) -> None:
    """Each case keeps its card on sample 1 and answers in prose on sample 2."""
    for case in cases:
        set_reply(cassette(project, case, "prose", "cold"), 1, PROSE)


def row(result: pytest.RunResult) -> dict[str, str]:
    """The prose/cold row of the card scoreboard, by header (cells cut at header columns)."""
    lines = result.stdout.lines
    # The suite and model are said above the table; the gate word leads each row.
    head = next(i for i, line in enumerate(lines) if re.match(r"gate +channel ", line))
    assert lines[head - 1] == "suite cards, model smollm2:135m:"
    starts = [(m.start(), m.group()) for m in re.finditer(r"\S+", lines[head])]
    line = next(x for x in lines[head:] if " prose    cold " in x)
    ends = [s for s, _ in starts[1:]] + [len(line)]
    return {name: line[start:end].strip() for (start, name), end in zip(starts, ends, strict=True)}


def test_a_three_case_coin_flip_fails_the_floor_and_passes_significance(
    passing: pytest.Pytester,
) -> None:
    unsettle(passing, ["date", "time", "toggle"])
    floor, data = report(passing)
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    floor.stdout.fnmatch_lines(
        [
            "gate: fail — 1 regression(s), 0 warning(s) within ±1, * (mode floor ±1)",
            f"  REGRESSION: {ARM}: passed 7 -> 4 of 25 (floor ±1); pass -> fail: date *",
            f"  suggestion: {ARM}: 3 of the 3 lost case(s) are unstable (samples disagreed) and "
            "the loss is not significant (p = 0.125); --cardprobe-noise-floor 3 would absorb them",
            f"  mode significance, {A} = 0.05 would pass",
        ]
    )
    # The same figures either way: p = (1/2)^3, since each case's baseline held both of its
    # three passes with chance C(3,2) C(1,0) / C(4,2) = 1/2.
    cells = row(floor)
    assert (cells["±"], cells["p"], cells["unstable"], cells["gate"]) == (
        "-3", "0.125", "3", "regression",
    )  # fmt: skip
    test = data["gate"]["arms"][ARM]["test"]
    assert test == {"p_loss": 0.125, "p_gain": 1.0, "method": "exact conditional", "strata": 3}
    assert data["gate"]["arms"][ARM]["words"] == {"floor": "regression", "significance": "warning"}

    sig, data = report(passing, *SIGNIFICANCE)
    assert sig.ret == 0, sig.stdout.str()
    sig.stdout.fnmatch_lines(
        [
            "gate: pass — 0 regression(s), 1 warning(s) not significant, * "
            f"(mode significance, {A} = 0.05)",
            f"  let through: {ARM} date: * — p = 0.125 is not significant at {A} = 0.05, so the "
            "gate passes it",
            f"  mode floor ±1 would fail: {ARM} (-3 case(s), p = 0.125)",
            f"3 flip(s) not significant at {A} = 0.05, so the run exits 0: *",
        ]
    )
    assert row(sig)["p"] == "0.125" and row(sig)["gate"] == "warning"
    assert data["gate"]["mode"] == "significance" and data["gate"]["alpha"] == 0.05
    assert data["gate"]["other_mode"] == {"mode": "floor", "decision": "fail"}
    # The unstable cases are listed with both sides.
    sig.stdout.fnmatch_lines(
        [
            "unstable cases (samples disagreed, now or in the baseline):",
            f"  {ARM}: date (now 1/2, baseline 2/2), time (now 1/2, baseline 2/2), "
            "toggle (now 1/2, baseline 2/2)",
        ]
    )


def test_a_six_case_coin_flip_fails_both_modes(passing: pytest.Pytester) -> None:
    unsettle(passing, list(CARDS))
    for mode in ((), SIGNIFICANCE):
        result, data = report(passing, *mode)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, mode
        assert data["gate"]["decision"] == "fail"
        assert row(result)["p"] == "0.0156"  # (1/2)^6 = 0.015625
        # Six of seven passing cases lost is significant: no floor is suggested to absorb it.
        assert data["gate"]["suggestions"] == [], mode
    result.stdout.fnmatch_lines(
        [
            f"  REGRESSION: {ARM}: passed 7 -> 1 of 25, significant at {A} = 0.05 "
            "(p = 0.0156, exact conditional); pass -> fail: *",
            "  mode floor ±1 would fail: *",
        ]
    )


def test_three_cases_that_broke_on_every_sample_are_significant(passing: pytest.Pytester) -> None:
    # Not noise: each case failed twice where it passed twice, p = (1/6)^3 = 1/216.
    for case in ("date", "time", "toggle"):
        set_replies(cassette(passing, case, "prose", "cold"), content=PROSE)
    result, data = report(passing, *SIGNIFICANCE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["arms"][ARM]["test"]["p_loss"] == pytest.approx(1 / 216)
    assert row(result)["p"] == "0.0046"
    # None of them is unstable. The scoreboard shows an unstable column only when some arm
    # has such a case; the shipped recordings have none, so here it has no column at all.
    assert data["gate"]["arms"][ARM]["unstable"] == [] and "unstable" not in row(result)


def test_one_sample_per_case_is_mcnemars_exact_test(passing: pytest.Pytester) -> None:
    # Record the baseline with one sample per test, then lose 3, then 5 cases.
    assert report(passing, "--cardprobe-update-baseline", "--cardprobe-samples", "1")[0].ret == 0
    for lost, p, code in ((3, "0.125", 0), (5, "0.0312", 1)):
        for case in list(CARDS)[:lost]:
            set_reply(cassette(passing, case, "prose", "cold"), 0, PROSE)
        result, data = report(passing, "--cardprobe-samples", "1", *SIGNIFICANCE)
        assert result.ret == code, result.stdout.str()
        assert row(result)["p"] == p and "samples" not in row(result)
        assert data["gate"]["arms"][ARM]["test"]["method"] == "exact McNemar"


def test_alpha_and_mode_come_from_ini_keys_and_are_checked(passing: pytest.Pytester) -> None:
    unsettle(passing, ["date", "time", "toggle"])
    passing.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_gate = significance\n"
        "cardprobe_alpha = 0.2\n"
    )
    result, _ = report(passing)  # p = 0.125 < 0.2
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"gate: fail*(mode significance, {A} = 0.2)"])
    result, _ = report(passing, "--cardprobe-gate", "floor", "--cardprobe-noise-floor", "3")
    assert result.ret == 0, result.stdout.str()
    for args, said in (
        (["--cardprobe-alpha", "1.5"], "--cardprobe-alpha wants a number between 0 and 1, got 1.5"),
        (["--cardprobe-alpha", "nan"], "--cardprobe-alpha wants a number between 0 and 1"),
        (["--cardprobe-gate", "vibes"], "argument --cardprobe-gate: invalid choice: 'vibes'"),
    ):
        bad, _ = report(passing, *args)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR, args
        assert said in bad.stderr.str(), bad.stderr.str()
    for key, value, said in (
        ("cardprobe_alpha", "0", "ini key cardprobe_alpha wants a number between 0 and 1, got 0"),
        ("cardprobe_gate", "strict", "ini key cardprobe_gate must be one of floor, significance"),
    ):
        passing.makeini(f"[pytest]\ncardprobe_models = smollm2:135m\n{key} = {value}\n")
        bad, _ = report(passing)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
        assert said in bad.stderr.str(), bad.stderr.str()
        assert "Traceback" not in bad.stderr.str()


def test_diff_between_two_runs_speaks_both_modes(passing: pytest.Pytester) -> None:
    _, _ = report(passing)
    (passing.path / "report.json").rename(passing.path / "old.json")
    unsettle(passing, ["date", "time", "toggle"])
    _, _ = report(passing)
    args = ["-m", "pytest_cardprobe", "diff", "old.json", "report.json"]
    floor = passing.run(sys.executable, *args)
    assert floor.ret == 1
    floor.stdout.fnmatch_lines([f"  REGRESSION: {ARM}: passed 7 -> 4 of 25 (floor ±1)*"])
    sig = passing.run(sys.executable, *args, "--gate", "significance")
    assert sig.ret == 0, sig.stdout.str()
    sig.stdout.fnmatch_lines(
        [f"  let through: {ARM} date: * — p = 0.125 is not significant at {A} = 0.05, so the *"]
    )
    bad = passing.run(sys.executable, *args, "--alpha", "2")
    assert bad.ret == 2 and "--alpha wants a number between 0 and 1" in bad.stderr.str()


def accepted_elsewhere(project: pytest.Pytester) -> dict[str, str]:
    """The cases of the suite with an accept list, other than the six of ``CARDS``: the
    first element type each one accepts."""
    suite = yaml.safe_load((project.path / "cases" / "cards.yaml").read_text())
    return {
        case["id"]: case["accept"][0]
        for case in suite["cases"]
        if case.get("accept") and case["id"] not in CARDS
    }


def test_cases_whose_verdict_held_cannot_hide_cases_that_broke(passing: pytest.Pytester) -> None:
    # The six baseline passes fail every sample now; each of the 18 other cases with an accept
    # list, failing in the baseline, now passes one of its two samples and still fails. More
    # samples pass than before (18 gained, 12 lost), but the arm kept 1 of its 7 passing cases.
    for case in CARDS:
        set_replies(cassette(passing, case, "prose", "cold"), content=PROSE)
    others = accepted_elsewhere(passing)
    assert len(others) == 18
    for case, element in others.items():
        body = [{"type": element, "id": "x", "text": "x", "title": "x"}]
        set_reply(cassette(passing, case, "prose", "cold"), 0, json.dumps(body))
    result, data = report(passing, *SIGNIFICANCE)
    arm = data["gate"]["arms"][ARM]
    cases = next(a for a in data["arms"] if a["channel"] == "prose" and a["condition"] == "cold")[
        "cases"
    ]
    assert {c: (cases[c]["samples_passed"], cases[c]["status"]) for c in others} == {
        c: (1, "failed") for c in others
    }
    assert (arm["passed_before"], arm["passed_now"]) == (7, 1)
    # Only the six flipped cases could have changed verdict under any split of their samples
    # (one pass in four samples never makes 2 of 2): p = (1/6)^6, where pooling the sample
    # counts of all 24 cases made it 0.92.
    assert arm["test"]["strata"] == 6
    assert arm["test"]["p_loss"] == pytest.approx(6.0**-6)
    assert arm["words"] == {"floor": "regression", "significance": "regression"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"  REGRESSION: {ARM}: passed 7 -> 1 of 25, significant at {A} = 0.05 "
            "(p = <0.0001, exact conditional); pass -> fail: *",
        ]
    )
    assert row(result)["p"] == "<0.0001"
    # The floor fails it too, and suggests no floor: none of the six lost cases is unstable
    # (18 unstable cases elsewhere in the arm lost nothing).
    floor, data = report(passing)
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    assert len(data["gate"]["arms"][ARM]["unstable"]) == 18
    assert data["gate"]["suggestions"] == [] and "suggestion:" not in floor.stdout.str()


def test_the_other_mode_names_adoption_when_adoption_decides(recorded: pytest.Pytester) -> None:
    # Two tool/cold cases call the tool on both samples in the baseline (4 of 50 calls, 8 %),
    # with an element the case does not accept, so every case verdict stays as it was; then
    # they answer in prose again (0 %). Only adoption moved, and both modes fail on it.
    paths = [cassette(recorded, case, "tool", "cold") for case in ("date", "time")]
    shipped = [path.read_text() for path in paths]
    for path in paths:
        set_replies(path, tool_body=[{"type": "TextBlock", "text": "Pick one"}])
    assert report(recorded, "--cardprobe-update-baseline")[0].ret == 0
    for path, text in zip(paths, shipped, strict=True):
        path.write_text(text)
    tool_arm = "cards/smollm2:135m/tool/cold"
    floor, data = report(recorded)
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    assert data["gate"]["arms"][tool_arm]["passed_delta"] == 0
    # Each case pooled 2 tool calls among 4 calls, both in the baseline:
    # C(2,2) C(2,0) / C(4,2) = 1/6, so p = (1/6)^2 = 1/36.
    floor.stdout.fnmatch_lines(
        [
            f"  REGRESSION: {tool_arm}: adoption 8% -> 0% (allowed drop 4% = 1 of 25 cases)",
            f"  mode significance, {A} = 0.05 would fail: {tool_arm} (adoption 8% -> 0%, "
            "p = 0.0278)",
        ]
    )
    sig, _ = report(recorded, *SIGNIFICANCE)
    assert sig.ret == pytest.ExitCode.TESTS_FAILED
    sig.stdout.fnmatch_lines(
        [f"  mode floor ±1 would fail: {tool_arm} (adoption 8% -> 0%, allowed drop 4%)"]
    )
    assert "+0 case(s)" not in sig.stdout.str() + floor.stdout.str()


def test_the_markers_rule_beats_the_cases_and_the_suites(recorded: pytest.Pytester) -> None:
    # facts and codeblock of prose/schema pass one of their two samples. The suite says 2 of
    # 2 and facts says 2 of 2 itself; a samples(2, at_least=1) marker put on every collected
    # test says 1 of 2, and the marker's rule is the one in force (docs/design.md §4).
    # No shipped case (Ollama 0.33.0) has samples that disagree, so this one is made: sample 1
    # of each becomes a complete card the case accepts (test data; the rest is the real
    # replay), sample 2 keeps its real failing reply.
    for case, element in (
        ("facts", {"type": "FactSet", "facts": [{"title": "Gate", "value": "B12"}]}),
        ("codeblock", {"type": "CodeBlock", "codeSnippet": "s[::-1]", "language": "Python"}),
    ):
        card = json.dumps({"type": "AdaptiveCard", "body": [element]})
        set_reply(cassette(recorded, case, "prose", "schema"), 0, card, done_reason="stop")
    path = recorded.path / "cases" / "cards.yaml"
    text = path.read_text()
    assert text.count("samples: 2\n") == 1 and text.count("  - id: facts\n") == 1
    text = text.replace("samples: 2\n", "samples: 2\nat_least: 2\n")
    path.write_text(text.replace("  - id: facts\n", "  - id: facts\n    at_least: 2\n"))
    args = ("-k", "schema and (facts or codeblock) and prose")
    _, data = report(recorded, *args)
    assert {t["case"]: t["status"] for t in data["tests"]} == {
        "facts": "failed", "codeblock": "failed",
    }  # fmt: skip
    recorded.makeconftest(
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.samples(2, at_least=1))\n"
    )
    _, data = report(recorded, *args)
    assert {t["case"]: (t["status"], t.get("at_least")) for t in data["tests"]} == {
        "facts": ("passed", 1), "codeblock": ("passed", 1),
    }  # fmt: skip


HOSTILE_TYPE = "Input.Time</td><img src=x> <!-- [link](https://example.invalid) *bold* |"


def test_model_text_in_the_markdown_report_is_inert(passing: pytest.Pytester) -> None:
    # The date case, which passed, now answers with an element of a made-up type that
    # carries markup; its label reaches the Markdown report (a pull-request comment) in
    # the flip and warning lines.
    set_replies(
        cassette(passing, "date", "prose", "cold"),
        content=json.dumps([{"type": HOSTILE_TYPE, "id": "day"}]),
    )
    out = passing.path / "report.md"
    _, data = report(passing, f"--cardprobe-md={out}")
    label = next(t for t in data["tests"] if t["case"] == "date" and t["condition"] == "cold")
    assert "<img src=x>" in json.dumps(label), "the label should carry the model's type"
    text = out.read_text()
    body = text.split("\n", 1)[1]  # after the marker, the one comment that belongs there
    shown = "\n".join(x for x in body.splitlines() if "Input.Time" in x)
    for raw in ("<img", "</td>", "<!--", "[link](", "*bold*"):
        assert raw not in shown, raw
    # A table mark only escaped (``\|``), whatever follows it (the let-through line goes on).
    assert not re.search(r"(?<!\\)\|", shown), shown
    # Only what would be markup changes: < and & become entities, a ] before ( and the
    # emphasis and table marks get a backslash, and the bare URL (GitHub would link it by
    # itself) is code.
    assert "Input.Time&lt;/td>&lt;img src=x> &lt;!-- [link\\](`https://example.invalid)` " in body
    assert "\\*bold\\* \\|)" in body
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # the raw checks above stand alone
        return
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and "<a " not in html and "<em>bold</em>" not in html
    assert (
        "Input.Time&lt;/td&gt;&lt;img src=x&gt; &lt;!-- [link](<code>https://example.invalid)</code>"
        " *bold*" in html
    )
