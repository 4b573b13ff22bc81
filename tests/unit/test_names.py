"""Names (models, suites, cases, tools) that would read as other names are refused, and what
the plugin prints for a shell shows every character it holds."""

from __future__ import annotations

import subprocess
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.glue.hints import rerecord_hint, shell_quoted
from pytest_cardprobe.suite.loader import SuiteError, load_suite
from pytest_cardprobe.text import hidden_character, model_problem, name_problem


def fixed(examples: int = 100) -> settings:
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None)


BIDI = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c"]
INVISIBLE = ["\u200b", "\u200d", "\ufeff", "\u00ad", "\u2028", "\u2029", "\x1b", "\x7f", "\x85"]


@pytest.mark.parametrize("char", BIDI + INVISIBLE)
def test_a_model_name_with_a_bidi_or_invisible_character_is_refused(char: str) -> None:
    problem = model_problem(f"qwen{char}3:8b")
    assert problem is not None
    assert f"U+{ord(char):04X}" in problem or "control characters" in problem


@pytest.mark.parametrize(
    "name", ["smollm2:135m", "library/llama3", "hf.co/org/repo:Q4", "qwen3-中文:7b", "café"]
)
def test_ordinary_model_names_stay_accepted(name: str) -> None:
    assert model_problem(name) is None
    assert name_problem(name) is None


@fixed()
@given(st.text(max_size=30))
def test_a_name_is_refused_exactly_when_it_holds_a_character_a_screen_hides(name: str) -> None:
    hidden = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert (name_problem(name) is not None) == bool(hidden)
    if hidden:
        assert hidden_character(name).startswith(f"U+{ord(hidden[0]):04X}")  # type: ignore[union-attr]


CARD_HEAD = "cardprobe: 1\nchannels: [prose]\nconditions: [cold]\nprompts: {prose: p.md}\n"
CASES = "cases:\n  - {id: a, prompt: q, accept: [TextBlock]}\n"


def _suite(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    (tmp_path / "p.md").write_text("Answer with a card.\n", encoding="utf-8")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_suite_name_with_a_bidi_override_is_refused_naming_key_and_line(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        CARD_HEAD + 'name: "ab\\u202ecd"\n' + CASES,
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert "line 5" in message or ":5:" in message, message
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in message and "name" in message
    assert "\u202e" not in message


def test_a_suite_file_name_with_a_bidi_override_is_refused(tmp_path: Path) -> None:
    path = _suite(tmp_path, CARD_HEAD + CASES, name="ab\u202elmay.yaml")
    with pytest.raises(SuiteError, match="the file name holds U\\+202E"):
        load_suite(path)


def test_a_call_tool_name_with_a_bidi_override_is_refused(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "cardprobe: 1\njudge: call\nconditions: [cold]\nprompts: {call: p.md}\n"
        'tools:\n  - type: function\n    function:\n      name: "rm\\u202e"\n'
        "      parameters: {type: object, properties: {}}\n"
        "cases:\n  - {id: a, prompt: q, expect: {no_call: true}}\n",
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert "the tool name holds U+202E" in str(caught.value)
    assert "tools[0].function.name" in str(caught.value)


def _bash_reads(word: str) -> str:
    done = subprocess.run(
        ["bash", "-c", f"printf %s {word}"],
        capture_output=True,
        check=True,
        timeout=10,
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"},
    )
    return done.stdout.decode("utf-8", "surrogateescape")


@fixed(60)
@given(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12))
def test_a_shell_quoted_word_is_read_back_by_bash_as_the_same_text(text: str) -> None:
    word = shell_quoted(text)
    assert word.isprintable() or not text  # nothing hidden reaches the terminal
    assert _bash_reads(word) == text


def test_the_rerecord_hint_shows_a_hidden_character_as_an_escape() -> None:
    hint = rerecord_hint("cases/a\u202e.yaml::date[m-tool-cold]", "m")
    assert "\u202e" not in hint
    assert "$'cases/a\\u202e.yaml::date[m-tool-cold]'" in hint


def test_a_byte_that_is_not_utf8_is_shell_quoted_as_that_byte() -> None:
    word = shell_quoted("caf\udce9")  # how Python hands over the byte 0xe9 of an argument
    assert word == "$'caf\\xe9'"
    done = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, timeout=10)
    assert done.stdout == b"caf\xe9"
