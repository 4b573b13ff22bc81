"""A live run's request bound, progress estimate and spent line (glue/progress.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.glue.progress import (
    Plan,
    Planned,
    Progress,
    clock_text,
    plan_line,
    planned,
    requests_of,
    spent_line,
    turns_per_sample,
)
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult, SampleRecord

ROOT = Path(__file__).resolve().parents[2]
SERVER = "http://127.0.0.1:11434"


def probes(name: str) -> list[Probe]:
    suite = load_suite(ROOT / "cases" / name, known_judges=("card", "call"))
    return list(expand(suite, ["m"]))


def test_turns_per_sample_card_suite() -> None:
    found = {p.channel: turns_per_sample(p) for p in probes("cards.yaml")}
    assert found == {"prose": 1, "tool": 1, "retry": 2}


def test_turns_per_sample_call_suite() -> None:
    found = {(p.case.id, turns_per_sample(p)) for p in probes("tools.yaml")}
    loops = {case for case, turns in found if turns > 1}
    assert loops  # the shipped tool suite has sequence cases
    for probe in probes("tools.yaml"):
        expect = probe.case.expect
        multi = expect is not None and expect.multi_turn
        assert turns_per_sample(probe) == (probe.case.max_turns if multi else 1)
        assert (probe.case.id in loops) == multi


def test_planned_multiplies_samples_turns_and_tries() -> None:
    retry = next(p for p in probes("cards.yaml") if p.channel == "retry")
    assert planned(retry, 3, SERVER, retries=2) == Planned("m", SERVER, 3, 3 * 2 * 3)
    prose = next(p for p in probes("cards.yaml") if p.channel == "prose")
    assert planned(prose, 1, SERVER, retries=0).most == 1


def plan(*tests: tuple[str, str, int, int], warmup: bool = True) -> Plan:
    return Plan(
        {f"t{i}": Planned(m, s, n, most) for i, (m, s, n, most) in enumerate(tests)},
        retries=2,
        warmup=warmup,
    )


def test_plan_line_counts_per_model_and_server_with_warmups() -> None:
    lines = plan_line(
        plan(("a", SERVER, 2, 6), ("a", SERVER, 2, 6), ("b", "http://u:secret@h:1", 1, 3)),
        "rewrite",
    )
    assert lines[0] == (
        f"cardprobe: live — at most 17 requests: a on {SERVER} (13), b on http://h:1 (4)"
    )
    assert lines[1].startswith("  (3 tests, 5 samples; an upper bound")
    assert "secret" not in "\n".join(lines)
    once = plan_line(plan(("a", SERVER, 1, 3), warmup=False), "once")
    assert once[0].startswith("cardprobe: live (record mode once) — at most 3 requests")
    said = " ".join(line.strip() for line in once[1:])
    assert "record mode once replays" in said and "warm-up" not in said


def test_plan_line_fits_the_width() -> None:
    tests = [(f"model-{i}", f"http://127.0.0.1:1100{i}", 1, 1) for i in range(3)]
    narrow = plan_line(
        Plan({f"t{i}": Planned(*t) for i, t in enumerate(tests)}, 0, False), "rewrite", 60
    )
    assert narrow[:4] == [
        "cardprobe: live — at most 3 requests:",
        "  model-0 on http://127.0.0.1:11000 (1)",
        "  model-1 on http://127.0.0.1:11001 (1)",
        "  model-2 on http://127.0.0.1:11002 (1)",
    ]
    assert all(len(line) <= 60 for line in narrow), narrow
    assert "tool-loop turns, no retry)" in " ".join(line.strip() for line in narrow)
    wide = plan_line(
        Plan({f"t{i}": Planned(*t) for i, t in enumerate(tests)}, 1, False), "rewrite", 200
    )
    assert len(wide) == 2 and wide[0].endswith("model-2 on http://127.0.0.1:11002 (1)")
    assert "1 retry of a failed request" in wide[1]


def test_estimate_uses_measured_time_per_request_and_requests_per_sample() -> None:
    tests = (("a", SERVER, 2, 6), ("a", SERVER, 2, 6), ("b", SERVER, 2, 6))
    progress = Progress(plan(*tests), 0, every=45)
    assert progress.left_s(0) is None
    assert "estimating" in progress.line(0)
    # First test: 2 samples took 4 requests (a loop), 10 s each.
    for now in (10, 20, 30, 40):
        assert not progress.request_sent(now)  # a line was written at 0
    assert not progress.test_done("t0", failed=True, requests=None, now=40)
    # 4 samples left x 2 requests per sample x 10 s per request.
    assert progress.left_s(40) == pytest.approx(80)
    progress.request_sent(50)  # one of them is on its way
    assert progress.left_s(50) == pytest.approx(7 * 50 / 5)
    line = progress.line(50)
    assert line == (
        "cardprobe: 1/3 tests, 1 failed; 5 requests, one every 10.0s; about 1m10s left"
        " | a 1/2 (1 failed), b 0/1 (0 failed)"
    )
    assert "\r" not in line


def test_xdist_counts_come_with_the_test() -> None:
    progress = Progress(plan(("a", SERVER, 1, 3), ("a", SERVER, 1, 3)), 0)
    assert progress.test_done("t1", failed=False, requests=3, now=6)  # first: always a line
    assert progress.left_s(6) == pytest.approx(1 * 3 * 2)
    assert not progress.test_done("t1", failed=True, requests=3, now=7)  # counted once
    assert not progress.test_done("other", failed=True, requests=1, now=7)  # not planned
    progress.pending = 3  # t0's requests came back (3 a sample, as t1's): none left to send
    assert progress.line(7).endswith("; finishing")
    progress.pending = 2  # one request of t0 is still to come: 7 s / 3 requests
    assert progress.line(7).endswith("; about 2s left")
    progress.pending = 0
    assert progress.test_done("t0", failed=False, requests=1, now=8)  # the model's last
    assert progress.line(8) == "cardprobe: a 2/2 tests, 0 failed; 4 requests, one every 2.0s; done"


def test_a_line_every_interval_only() -> None:
    progress = Progress(plan(*[("a", SERVER, 1, 3)] * 4), 0, every=10)
    assert progress.test_done("t0", False, 1, 1)
    progress.line(1)
    assert not progress.test_done("t1", False, 1, 5)
    assert not progress.request_sent(10.9)
    assert progress.request_sent(11)


def sample(figures: dict[str, float], **rest: object) -> SampleRecord:
    record = SampleRecord(0, "content", True, "ok", None, figures=figures)
    for key, value in rest.items():
        setattr(record, key, value)
    return record


def result(*samples: SampleRecord) -> ProbeResult:
    found = ProbeResult("n", "s", "m", "prose", "cold", "c", status="passed")
    found.samples = list(samples)
    return found


def test_requests_of_a_result() -> None:
    live = {"wall_s": 1.0}
    done = result(
        sample(live),
        sample(live, turns=3),
        sample(live, retry_of={"label": "x"}),
        sample({}),  # replayed
        SampleRecord(0, None, False, "infra", "infra"),
    )
    assert requests_of(done) == 1 + 3 + 2 + 0 + 1


def test_spent_line_counts_live_samples_only() -> None:
    live = {"wall_s": 2.0, "prompt_tokens": 100, "generated_tokens": 20, "total_s": 1.5}
    replayed = {"prompt_tokens": 999, "generated_tokens": 999, "total_s": 99}
    line = spent_line([result(sample(live), sample(live)), result(sample(replayed))], 2, 65)
    assert line == (
        "cardprobe: spent 2 requests in 1m05s: 200 prompt + 40 generated tokens, "
        "3.0s of server time"
    )
    assert spent_line([result(sample(replayed))], 0, 1) is None
    one = spent_line([result(sample(live))], 1, 3)
    assert one is not None and one.startswith("cardprobe: spent 1 request in 3s: "), one


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.2, "1s"), (59.4, "59s"), (61, "1m01s"), (3600, "1h00m"), (-3, "0s")],
)
def test_clock_text(seconds: float, text: str) -> None:
    assert clock_text(seconds) == text


def test_header_lines_cut_at_joints_then_spaces() -> None:
    from types import SimpleNamespace

    from pytest_cardprobe.glue.progress import header_lines

    no_terminal = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    short = "cardprobe: replay (record mode none); models m; baseline b.json"
    assert header_lines(short, no_terminal) == [short]  # type: ignore[arg-type]
    long = "cardprobe: replay (record mode none: no server is asked); models " + "m" * 30
    long += "; baseline " + "x " * 60
    lines = header_lines(long, no_terminal)  # type: ignore[arg-type]
    assert (
        lines[0] == "cardprobe: replay (record mode none: no server is asked); models " + "m" * 30
    )
    assert lines[1].startswith("  baseline x x") and lines[2].startswith("    x x")
    assert all(len(line) <= 100 for line in lines)
    assert " ".join(" ".join(lines).split()) == " ".join(long.replace("; b", " b").split())
