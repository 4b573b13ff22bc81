"""The plugin's stages in process, as a session drives them, for the fuzz tests.

:func:`session_end` is what a session does with results once the tests ran (the xdist round
trip, aggregate, gate, every report, the baseline written and read back), with the checks
that every output can be written; :func:`run_probe` runs one probe as ``ProbeItem.runtest``
does, allowing only what that lets through: a result, or a :class:`CassetteProblem`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fuzzing import ROOT

from pytest_cardprobe.glue.failure import describe
from pytest_cardprobe.judge.registry import card_judge
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.baseline import Baseline, parse_baseline
from pytest_cardprobe.score.baseline_update import baseline_document
from pytest_cardprobe.score.gate import GateSettings, decide
from pytest_cardprobe.score.html import html_report
from pytest_cardprobe.score.jsonreport import json_report
from pytest_cardprobe.score.markdown import markdown
from pytest_cardprobe.score.outcome import outcome_of
from pytest_cardprobe.score.report import scoreboard_lines
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.errors import CassetteProblem

CARDS = load_suite(ROOT / "cases" / "cards.yaml")
CALLS = load_suite(ROOT / "cases" / "tools.yaml")
MODEL = "smollm2:135m"


def probe(suite: str, case: str, channel: str, condition: str = "cold") -> Probe:
    """One probe of a shipped suite."""
    chosen = CARDS if suite == "cards" else CALLS
    for p in expand(chosen, [MODEL]):
        if (p.case.id, p.channel, p.condition) == (case, channel, condition):
            return p
    raise LookupError((suite, case, channel, condition))


PROBES = [
    probe("cards", "date", "prose"),
    probe("cards", "date", "tool"),
    probe("cards", "date", "retry"),
    probe("cards", "control", "tool", "history"),
    probe("tools", "readme", "call"),
    probe("tools", "find_then_read", "call"),
    probe("tools", "capital", "call"),
]


def run_probe(runtime: Runtime, p: Probe, samples: int) -> ProbeResult | CassetteProblem:
    """``ProbeItem.runtest``'s call: a result, or the cassette problem it reports as such.

    Anything else escaping here would be reported as an internal error: a bug.
    """
    judge = None
    if not p.suite.is_call_suite:
        judge = lambda text: card_judge(text, p.case, p.suite)  # noqa: E731
    try:
        return runtime.run(p, samples, f"cases/{p.suite.path.name}::{p.name}", judge)
    except CassetteProblem as exc:
        return exc


RUN = {"models": [MODEL], "servers": [], "noise_floor": 1}
CONTROLS = [chr(c) for c in range(0x20) if chr(c) not in "\n\t"] + ["\x7f", "\x9b", "\u202e"]


def session_end(
    results: Sequence[ProbeResult], baseline: Baseline | None = None, folder: Path | None = None
) -> str:
    """Everything a session end makes of ``results``, as one text (for the secret check).

    Each report must be writable as a session writes it (UTF-8; JSON without NaN), the
    terminal lines must carry no raw control character, the HTML no markup from the input,
    and the baseline written from the results must read back.
    """
    tests = []
    for result in results:
        data = result.to_dict()
        text = json.dumps(data, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
        # The xdist round trip: a worker's result arrives as the same result.
        assert ProbeResult.from_dict(json.loads(text)) == result
        tests.append(data)
    arms = aggregate(results)
    found = canaries(results)
    gate = decide(arms, results, baseline, GateSettings(), found)
    terminal = "\n".join(scoreboard_lines(arms, gate, verbosity=2))
    failures = "\n".join(describe(r, full=full) for r in results for full in (False, True))
    shown = [outcome_of(r, baseline, False) for r in results]
    for text in (terminal, failures, *(s.reason for s in shown if s is not None)):
        raw = [c for c in CONTROLS if c in text]
        assert not raw, (raw, text[:2000])
    page = html_report(arms, results, gate, RUN)
    assert "<script" not in page.lower()
    document, _ = baseline_document(arms, results, found, None)
    written = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    parse_baseline(json.loads(written), "written")
    outputs = [terminal, failures, markdown(arms, gate), json_report(arms, tests, gate, RUN)]
    outputs += [page, written]
    everything = "\n".join(outputs)
    everything.encode("utf-8")
    if folder is not None:
        for name, text in zip(
            ("scoreboard.txt", "r.md", "r.json", "r.html"), outputs, strict=False
        ):
            (folder / name).write_text(text, encoding="utf-8")
    return everything


def as_text(value: Any) -> str:
    """``value`` (a result or an error) as what a user would read of it."""
    if isinstance(value, ProbeResult):
        return json.dumps(value.to_dict(), ensure_ascii=False)
    return str(value)
