"""A cassette read as YAML has no aliases, and the metadata the plugin reads has its types."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.errors import CorruptCassette

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "cassettes/cards/smollm2%3A135m/date-prose-cold.yaml"


def bomb(levels: int = 9, width: int = 9) -> str:
    """A YAML document of a few KB whose aliases stand for width**levels strings."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines)


def test_an_alias_bomb_in_a_cassettes_metadata_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    anchors = "\n".join("    " + line for line in bomb().splitlines())
    # The anchors first (under a key of their own), the alias after them.
    text = (
        "version: 1\ninteractions: []\nmetadata:\n  bomb:\n" + anchors + "\n"
        "  cardprobe:\n    unsupported: *a9\n"
    )
    path.write_text(text, encoding="utf-8")
    assert len(text) < 9000
    started = time.monotonic()
    with pytest.raises(CorruptCassette) as caught:
        read_cassette(path)
    assert time.monotonic() - started < 30  # a hang guard: the bomb would take hours
    message = str(caught.value)
    assert "its aliases (*name) expand to more than 200,000 values (an alias bomb)" in message
    assert "line " in message and "re-record it" in message


def test_a_bomb_through_merge_keys_is_refused_too(tmp_path: Path) -> None:
    lines = ["b0: &b0 {k0: lol}"] + [
        f"b{n}: &b{n} [" + ", ".join([f"*b{n - 1}"] * 9) + "]" for n in range(1, 8)
    ]
    path = tmp_path / "merge.yaml"
    path.write_text(
        "\n".join(lines) + "\nversion: 1\ninteractions: []\nmetadata: {cardprobe: {x: *b7}}\n",
        encoding="utf-8",
    )
    with pytest.raises(CorruptCassette, match="alias bomb"):
        read_cassette(path)


def test_an_interaction_listed_twice_by_yaml_safe_dump_still_reads(tmp_path: Path) -> None:
    """yaml.safe_dump writes an anchor and an alias for an object listed twice: a cassette
    written that way (by hand, or by a test) is no bomb."""
    import yaml

    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    data["interactions"] = [data["interactions"][0]] * 2
    text = yaml.safe_dump(data)
    assert "*id001" in text
    path = tmp_path / "twice.yaml"
    path.write_text(text, encoding="utf-8")
    assert len(read_cassette(path)["interactions"]) == 2


def test_the_alias_budget_at_its_bound_and_past_it(tmp_path: Path) -> None:
    from pytest_cardprobe.wire.cassettes.reading import MAX_YAML_NODES

    def cassette_with(values: int) -> Path:
        # One anchored list of `values - 1` numbers plus the list itself: `values` nodes, and
        # its alias once more as the metadata's extra key: 2 * values + the rest of the file.
        path = tmp_path / f"{values}.yaml"
        path.write_text(
            "version: 1\ninteractions: []\nlist: &l [" + ", ".join(["1"] * (values - 1)) + "]\n"
            "metadata: {cardprobe: {extra: *l}}\n",
            encoding="utf-8",
        )
        return path

    rest = 11  # the root, version, interactions, metadata, cardprobe, extra: keys and values
    half = (MAX_YAML_NODES - rest) // 2
    assert read_cassette(cassette_with(half))
    with pytest.raises(CorruptCassette, match="expand to more than 200,000 values"):
        read_cassette(cassette_with(half + 1))


def test_a_yaml_cassette_without_aliases_still_reads(tmp_path: Path) -> None:
    import yaml

    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert read_cassette(path)["metadata"] == data["metadata"]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("unsupported", ["x"] * 3, "metadata cardprobe.unsupported is list, not text"),
        ("unsupported", 7, "metadata cardprobe.unsupported is int, not text"),
        ("suite_file", {"a": "b"}, "metadata cardprobe.suite_file is dict, not text"),
        ("recorded", 20240101, "metadata cardprobe.recorded is int, not text"),
        ("format", "1", "metadata cardprobe.format is str, not a whole number"),
        ("format", True, "metadata cardprobe.format is bool, not a whole number"),
        ("fingerprint", {"model": 1}, "metadata cardprobe.fingerprint is dict, not a mapping"),
        ("model", ["digest"], "metadata cardprobe.model is list, not a mapping of text to text"),
        ("server", {"version": None}, "metadata cardprobe.server is dict, not a mapping"),
    ],
)
def test_a_metadata_value_of_the_wrong_type_is_a_corrupt_cassette(
    tmp_path: Path, key: str, value: object, said: str
) -> None:
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    data["metadata"]["cardprobe"][key] = value
    path = tmp_path / "typed.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CorruptCassette) as caught:
        read_cassette(path)
    assert said in str(caught.value)
    assert "re-record it" in str(caught.value)


def test_the_shipped_cassettes_metadata_has_its_types() -> None:
    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        read_cassette(path)
