"""Path parts, URL and body redaction, reply shapes and capped reads (issue 14)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.files import FileRefused, read_capped
from pytest_cardprobe.jsonread import too_deep
from pytest_cardprobe.wire.cassettes.paths import _below, cassette_path, path_part
from pytest_cardprobe.wire.errors import CassetteProblem
from pytest_cardprobe.wire.redact import redact_fields, redact_url
from pytest_cardprobe.wire.shapes import reply_problem


@pytest.mark.parametrize(
    "name", ["..", ".", "", "../../x", "/etc/passwd", "a/b", "a\\b", ".hidden", "C:\\x", "x\x00y"]
)
def test_a_name_becomes_one_path_part_that_stays_inside(tmp_path: Path, name: str) -> None:
    part = path_part(name)
    assert part and "/" not in part and "\\" not in part and "\x00" not in part
    assert not part.startswith(".")
    path = cassette_path(tmp_path, name, name, name, "prose", "cold")
    assert path.resolve().is_relative_to(tmp_path.resolve())
    assert len(path.relative_to(tmp_path).parts) == 3


def test_ordinary_names_keep_their_cassette_paths(tmp_path: Path) -> None:
    path = cassette_path(tmp_path, "cards", "smollm2:135m", "date", "prose", "cold")
    assert path == tmp_path / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml"


def test_a_model_folder_linked_outside_the_cassette_folder_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "cassettes", tmp_path / "elsewhere"
    (root / "cards").mkdir(parents=True)
    outside.mkdir()
    (root / "cards" / "m").symlink_to(outside)
    with pytest.raises(CassetteProblem, match="would leave the cassette folder"):
        cassette_path(root, "cards", "m", "date", "prose", "cold")
    # A cassette file may itself be a link: only its folder has to stay inside.
    assert cassette_path(root, "cards", "n", "date", "prose", "cold").parent.name == "n"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@host:1/?key=k&x=1", "http://host:1/?x=1"),
        ("https://h/v1?api_key=a&access_token=b&token=c&sig=d", "https://h/v1"),
        ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
    ],
)
def test_urls_lose_userinfo_and_secret_parameters(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_body_fields_are_redacted_at_any_depth() -> None:
    body = {"options": {"api_key": "s", "n": 1}, "messages": [{"Token": "t"}]}
    assert redact_fields(body, ["api_key", "token"]) == {
        "options": {"api_key": "[redacted]", "n": 1},
        "messages": [{"Token": "[redacted]"}],
    }


OLLAMA = {"message": {"role": "assistant", "content": "hi"}, "done": True}
OPENAI = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}


@pytest.mark.parametrize(
    ("api", "stream", "body", "problem"),
    [
        ("ollama", False, OLLAMA, None),
        ("ollama", False, {**OLLAMA, "message": "hi"}, "reply.message is a string"),
        ("ollama", False, {"done": True}, "reply has no message"),
        ("openai", False, OPENAI, None),
        ("openai", False, {"choices": []}, "reply.choices is a list, not a non-empty list"),
        ("openai", False, {"choices": [{"message": {"content": 3}}]}, "content is a number"),
        (
            "openai",
            False,
            {"choices": [{"message": {"tool_calls": [{"function": {"name": 1}}]}}]},
            "function.name is a number",
        ),
    ],
)
def test_reply_shapes(api: str, stream: bool, body: object, problem: str | None) -> None:
    found = reply_problem(api, stream, json.dumps(body))
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found, found


def test_stream_shapes() -> None:
    good = "\n".join(json.dumps({**OLLAMA, "done": i == 2}) for i in range(3))
    assert reply_problem("ollama", True, good) is None
    bad = "\n".join([*good.splitlines()[:2], "[1]", good.splitlines()[2]])
    assert reply_problem("ollama", True, bad) == "stream line 3 is a list, not an object"
    # After done: no part of the reply, not checked (tests/unit/test_stream_done.py).
    assert reply_problem("ollama", True, good + "\n[1]\n") is None
    sse = 'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: [DONE]\n'
    assert reply_problem("openai", True, sse) is None
    bad = 'data: {"choices":[{"delta":{"content":1}}]}'
    assert reply_problem("openai", True, bad) == (
        "stream line 1.choices[0].delta.content is a number, not a string"
    )


def test_depth_check_is_linear_and_ignores_brackets_in_strings() -> None:
    assert too_deep("[" * 200_000 + "]" * 200_000)
    assert not too_deep(json.dumps({"content": "[" * 10_000}))


def _too_deep_as_first_written(text: str, limit: int) -> bool:
    """The depth check before it was sped up: every string's text blanked, then each bracket."""
    depth = 0
    for match in re.finditer(r"[\[\]{}]", re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}"\\a\n', max_size=60), st.integers(min_value=0, max_value=6))
def test_depth_check_reads_strings_and_escapes_as_it_did(text: str, limit: int) -> None:
    # Unclosed strings, escaped quotes and brackets inside strings, against the first version.
    assert too_deep(text, limit) == _too_deep_as_first_written(text, limit)


def test_read_capped_refuses_what_is_not_a_small_regular_file(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(FileRefused, match="larger than"):
        read_capped(big, 10)
    assert read_capped(big, 11) == b"x" * 11
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="FIFO"):
        read_capped(fifo, 10)
    with pytest.raises(FileRefused, match="character device"):
        read_capped(Path("/dev/zero"), 10)
    with pytest.raises(FileRefused, match="directory"):
        read_capped(tmp_path, 10)
    (tmp_path / "link").symlink_to("nowhere")
    with pytest.raises(FileRefused, match="dangling"):
        read_capped(tmp_path / "link", 10)


def test_read_capped_reads_empty_files_and_files_that_grew_since_their_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_capped(empty, 10) == b""
    grown = tmp_path / "grown"
    grown.write_bytes(b"0123456789AB")
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        # As if the file was 3 bytes long when opened and grew before it was read.
        info = list(real_fstat(fd))
        info[6] = 3
        return os.stat_result(info)

    monkeypatch.setattr(os, "fstat", stale_fstat)
    assert read_capped(grown, 12) == b"0123456789AB"
    with pytest.raises(FileRefused, match="larger than"):
        read_capped(grown, 10)


def test_read_capped_asks_for_little_more_than_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"x" * 5000)
    asked: list[int] = []
    real_read = os.read

    def read(fd: int, n: int) -> bytes:
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read)
    assert read_capped(path, 10 * 1024 * 1024) == b"x" * 5000
    # The file's size plus one, then a small read that finds the end: never the whole cap.
    assert asked == [5001, 1 << 16]


def test_a_folder_that_did_not_exist_is_checked_again(tmp_path: Path) -> None:
    root, outside = tmp_path / "cassettes", tmp_path / "elsewhere"
    (root / "cards").mkdir(parents=True)
    outside.mkdir()
    cassette_path(root, "cards", "later", "date", "prose", "cold")  # no folder yet
    (root / "cards" / "later").symlink_to(outside)
    with pytest.raises(CassetteProblem, match="would leave the cassette folder"):
        cassette_path(root, "cards", "later", "date", "prose", "cold")


def test_a_checked_folder_still_has_each_cassette_link_checked(tmp_path: Path) -> None:
    """A replay checks a suite and model folder once per session; the cassette file itself
    is looked at on every ask, so a link out made after the folder was checked is refused."""
    root, outside = tmp_path / "cassettes", tmp_path / "elsewhere"
    (root / "cards" / "m").mkdir(parents=True)
    outside.mkdir()
    first = cassette_path(root, "cards", "m", "date", "prose", "cold")
    assert first == root / "cards" / "m" / "date-prose-cold.yaml"
    first.symlink_to(outside / "stolen.yaml")
    with pytest.raises(CassetteProblem, match="outside the cassette folder"):
        cassette_path(root, "cards", "m", "date", "prose", "cold")
    # Another folder under the same cassette folder is its own entry.
    assert cassette_path(root, "cards", "other", "date", "prose", "cold").parent.name == "other"


def test_a_checked_folder_that_is_gone_is_checked_again(tmp_path: Path) -> None:
    """A model folder checked by one test, then removed and its suite folder swapped for a
    link to a folder outside without it, is refused: a recording would otherwise create the
    model folder outside (found by review r43 of the folder cache)."""
    root, outside = tmp_path / "cassettes", tmp_path / "elsewhere"
    (root / "s" / "m").mkdir(parents=True)
    outside.mkdir()
    cassette_path(root, "s", "m", "c", "prose", "cold")
    shutil.rmtree(root / "s")
    (root / "s").symlink_to(outside)
    with pytest.raises(CassetteProblem, match="would leave the cassette folder"):
        cassette_path(root, "s", "m", "c", "prose", "cold")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a/", "/etc/passwd"])
def test_a_cassette_name_that_is_no_file_name_is_refused(tmp_path: Path, name: str) -> None:
    """The last line of defence behind path_part, which never makes such a name."""
    (tmp_path / "s" / "m").mkdir(parents=True)
    with pytest.raises(CassetteProblem, match="would leave the cassette folder"):
        _below(tmp_path, "s", "m", name)
