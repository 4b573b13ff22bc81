"""Numbers from a server or a recording are finite, and arithmetic on them cannot crash.

A float that overflows (``1e999`` parses as infinity in Python) is refused where replies are
read, live as infra and replayed as a corrupt cassette; an integer too large for a float
is no server figure. Either would otherwise crash the session's end, after every test ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.jsonread import load_json
from pytest_cardprobe.wire.cassettes.format import dump_cassette
from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.errors import CorruptCassette
from pytest_cardprobe.wire.figures import server_figures
from pytest_cardprobe.wire.shapes import check_reply


@pytest.mark.parametrize("text", ["1e999", "-1e400", '{"a": [1.5, 2e308]}', "NaN", "-Infinity"])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"overflows a float|is not a JSON number"):
        load_json(text)


def test_finite_numbers_read_as_json_reads_them() -> None:
    text = '{"a": 1.5, "b": -0.0, "c": 1e308, "d": 12345678901234567890123, "e": 5e-324}'
    assert load_json(text) == json.loads(text)


def test_a_recorded_reply_with_an_overflowing_float_is_a_corrupt_cassette(tmp_path: Path) -> None:
    reply = (
        '{"message": {"role": "assistant", "content": "x"}, "done": true, "eval_duration": 1e400}'
    )
    data = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://h/api/chat", "body": "{}"},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
        "metadata": {"cardprobe": {"format": 1, "fingerprint": {"model": "m"}}},
        "version": 1,
    }
    path = tmp_path / "c.yaml"
    path.write_text(dump_cassette(data), encoding="utf-8")
    with pytest.raises(CorruptCassette, match=r"c\.yaml: interaction 1: reply is not JSON: 1e400"):
        read_cassette(path)
    assert (
        check_reply("ollama", True, reply)[0]
        == "stream line 1 is not JSON: 1e400 overflows a float"
    )


HUGE = st.integers(min_value=10**309, max_value=10**400) | st.integers(
    max_value=-(10**309), min_value=-(10**400)
)
NUMBER = st.integers() | st.floats(allow_nan=False, allow_infinity=False) | HUGE


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    counts=st.dictionaries(
        st.sampled_from(["prompt_eval_count", "eval_count", "eval_duration", "total_duration"]),
        NUMBER,
    ),
    timings=st.dictionaries(st.sampled_from(["prompt_ms", "predicted_ms", "predicted_n"]), NUMBER),
)
def test_server_figures_are_finite_whatever_numbers_come(
    counts: dict[str, object], timings: dict[str, object]
) -> None:
    figures = server_figures({"final": {**counts, "timings": timings}})
    assert all(isinstance(v, float) and abs(v) <= sys.float_info.max for v in figures.values())
    assert json.loads(json.dumps(figures, allow_nan=False)) == figures


def test_a_report_or_baseline_number_too_long_to_read_names_its_line() -> None:
    """Python's own error names a setting (sys.set_int_max_str_digits), not the place."""
    from pytest_cardprobe.jsonread import load_json

    text = '{\n  "arms": [],\n  "count": ' + "7" * 5000 + "\n}"
    with pytest.raises(ValueError, match=r"^line 3: a number of 5,000 digits, more than the 4,300"):
        load_json(text)
    assert load_json('{"count": ' + "7" * 4300 + "}")["count"] > 0
