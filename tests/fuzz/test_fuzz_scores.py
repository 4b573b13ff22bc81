"""Fuzz: hostile baselines and JSON reports through the gate, the report writers and ``diff``.

The results are real: the shipped cassettes of ``pipeline.PROBES`` replayed in process. The
baseline is the shipped ``cardprobe-baseline.json`` and the report the JSON report of those
results, each with hostile edits (``fuzzing.py``: numbers of every kind, 400-digit integers
included; text; keys written twice; values of the wrong type) and sometimes broken bytes:

- ``score/baseline.load_baseline`` gives a baseline or a :class:`BaselineError` naming the
  file; a baseline it gives goes through ``score/gate.decide`` and every report writer
  (``pipeline.session_end``), and ``write_baseline`` over the hostile file writes one that
  reads back; once with any edit, once with hostile numbers at its counts;
- ``python -m pytest_cardprobe diff OLD NEW`` (``cli/diff.main``, in process) exits 0, 1 or
  2 with its own ``error:`` line naming the file, never an exception, and writes nothing
  but its ``--md`` file; with edits that keep each value's type (so most reports reach the
  gate), with any edit inside ``tests[]`` (wrong types, keys left out or added), and with
  hostile numbers at the numbers of ``tests[]`` (counts and figures);
- results whose samples carry any figure a float holds (``1.7e308``, subnormals, negative
  numbers) go through the session end: every report is written.

Budget: see ``test_fuzz_replies.py``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from fuzzing import (
    EDGE_COUNTS,
    ROOT,
    SAME_TYPES,
    corrupted,
    fuzz_settings,
    listing,
    mutated,
    renumbered,
    to_json,
)
from hypothesis import event, given
from hypothesis import strategies as st
from pipeline import CONTROLS, PROBES, RUN, run_probe, session_end

from pytest_cardprobe.cli import diff
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.score.aggregate import aggregate, canaries
from pytest_cardprobe.score.baseline import BaselineError, load_baseline
from pytest_cardprobe.score.baseline_update import write_baseline
from pytest_cardprobe.score.gate import GateSettings, decide
from pytest_cardprobe.score.jsonreport import json_report
from pytest_cardprobe.score.markdown import MARKER
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.replay import Replay

_REPLAY = Runtime(Settings(models=["smollm2:135m"], cassette_dir=ROOT / "cassettes"), Replay())
RESULTS = [run_probe(_REPLAY, p, 2) for p in PROBES]
assert all(isinstance(r, ProbeResult) for r in RESULTS), RESULTS
BASELINE = json.loads((ROOT / "cardprobe-baseline.json").read_text(encoding="utf-8"))
_ARMS = aggregate(RESULTS)  # type: ignore[arg-type]
REPORT = json.loads(
    json_report(
        _ARMS,
        [r.to_dict() for r in RESULTS],  # type: ignore[union-attr]
        decide(_ARMS, RESULTS, None, GateSettings()),  # type: ignore[arg-type]
        RUN,
    )
)
# Edits where a baseline has its content: the arms of the results' suites (the other arms
# are hundreds of entries nothing here reads).
RAN = {r.arm_id for r in RESULTS}  # type: ignore[union-attr]


RAN_CASES = {(r.arm_id, r.case) for r in RESULTS}  # type: ignore[union-attr]


def _baseline_focus(path: tuple[Any, ...]) -> bool:
    return len(path) < 2 or path[0] != "arms" or path[1] in RAN


def _counts_focus(path: tuple[Any, ...]) -> bool:
    """The counts the gate reads: those of the baseline's cases that ran, and their arms'."""
    if len(path) == 3:
        return path[0] == "arms" and path[1] in RAN
    return len(path) == 5 and path[2] == "verdicts" and (path[1], path[3]) in RAN_CASES


def _baseline(sandbox: Path, data: st.DataObject, tree: Any) -> None:
    folder = Path(tempfile.mkdtemp(dir=sandbox))
    path = folder / "cardprobe-baseline.json"
    path.write_bytes(data.draw(corrupted(to_json(tree, ascii_only=data.draw(st.booleans())))))
    results: list[ProbeResult] = RESULTS  # type: ignore[assignment]
    try:
        baseline = load_baseline(path)
        event("baseline read")
    except BaselineError as exc:
        assert str(path) in str(exc), str(exc)
        event("baseline refused")
        baseline = None
    session_end(results, baseline, folder)
    # --cardprobe-update-baseline over the hostile file: what it writes reads back.
    arms = aggregate(results)
    write_baseline(path, arms, results, canaries(results))
    assert load_baseline(path) is not None


@fuzz_settings(150)
@given(data=st.data())
def test_a_hostile_baseline_is_refused_by_name_or_gated_and_reported(
    sandbox: Path, data: st.DataObject
) -> None:
    _baseline(sandbox, data, data.draw(mutated(BASELINE, focus=_baseline_focus)))


@fuzz_settings(100)
@given(data=st.data())
def test_a_baseline_with_hostile_counts_is_refused_by_name_or_gated_and_reported(
    sandbox: Path, data: st.DataObject
) -> None:
    _baseline(sandbox, data, data.draw(renumbered(BASELINE, _counts_focus, 3, EDGE_COUNTS)))


def _in_tests(path: tuple[Any, ...]) -> bool:
    return len(path) < 2 or path[0] == "tests"


def _report(draw: st.DrawFn, tree: st.SearchStrategy[Any]) -> bytes:
    return draw(corrupted(to_json(draw(tree), ascii_only=draw(st.booleans()))))


def _diff(sandbox: Path, data: st.DataObject, tree: st.SearchStrategy[Any]) -> None:
    folder = Path(tempfile.mkdtemp(dir=sandbox))
    old, new, md = folder / "old.json", folder / "new.json", folder / "diff.md"
    old.write_bytes(_report(data.draw, tree))
    new.write_bytes(_report(data.draw, tree))
    before = listing(folder)
    # Streams that encode as a terminal does: UTF-8, strictly.
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in range(2))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = diff.main([str(old), str(new), "--md", str(md)])
    assert status in (0, 1, 2), status
    event(f"diff exit {status}")
    out.flush()
    err.flush()
    said = [s.buffer.getvalue().decode("utf-8") for s in (out, err)]  # type: ignore[attr-defined]
    if status == 2:
        line = said[1]
        assert line.startswith("error: ") and line.count("\n") == 1, line
        assert str(old) in line or str(new) in line, line
        assert not [c for c in CONTROLS if c in line], line
    else:
        assert said[0] and md.read_text(encoding="utf-8").startswith(f"{MARKER}\n## cardprobe")
    assert set(listing(folder)) - set(before) <= {"diff.md"}


@fuzz_settings(150)
@given(data=st.data())
def test_diff_of_reports_with_hostile_numbers_text_and_bytes_is_a_gate_or_its_own_error(
    sandbox: Path, data: st.DataObject
) -> None:
    _diff(sandbox, data, st.one_of(st.just(REPORT), mutated(REPORT, kinds=SAME_TYPES)))


@fuzz_settings(150)
@given(data=st.data())
def test_diff_of_reports_whose_tests_have_wrong_types_is_a_gate_or_its_own_error(
    sandbox: Path, data: st.DataObject
) -> None:
    _diff(sandbox, data, st.one_of(st.just(REPORT), mutated(REPORT, focus=_in_tests)))


@fuzz_settings(100)
@given(data=st.data())
def test_diff_of_reports_whose_tests_have_hostile_numbers_is_a_gate_or_its_own_error(
    sandbox: Path, data: st.DataObject
) -> None:
    _diff(sandbox, data, renumbered(REPORT, _in_tests))


FIGURE_KEYS = ("prompt_tokens", "generated_tokens", "prompt_s", "generate_s", "load_s", "total_s")
#: Any number a float holds, the edges first (what a hostile server's reply may carry).
FIGURE = st.one_of(
    st.sampled_from([1.7976931348623157e308, 1e308, -1e308, 5e-324, 1e-320, -0.0, 0, 10**18]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**70), max_value=2**70),
)


@fuzz_settings(100)
@given(figures=st.lists(st.dictionaries(st.sampled_from(FIGURE_KEYS), FIGURE), min_size=1))
def test_results_with_any_figure_a_float_holds_end_the_session_with_every_report(
    sandbox: Path, figures: list[dict[str, float]]
) -> None:
    results: list[ProbeResult] = [copy.deepcopy(r) for r in RESULTS]  # type: ignore[misc]
    samples = [s for r in results for s in r.samples]
    for index, sample in enumerate(samples):
        sample.figures = figures[index % len(figures)]
    session_end(results, None, Path(tempfile.mkdtemp(dir=sandbox)))
