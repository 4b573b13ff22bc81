"""A cassette's own metadata (``metadata.cardprobe`` in the file), read and written here only.

What the plugin keeps beside a recording: the cassette ``format``, the request
``fingerprint``, the ``suite_file`` it was recorded from, when it was ``recorded``, the
``model`` (digest or id, with an OpenAI-compatible server's ``system_fingerprint``) and the
``server`` (kind, version, sampling defaults) it was recorded against, and why the arm is
``unsupported``. :class:`CassetteMeta` is a typed view over the mapping vcrpy persists, so
a recording writes exactly the keys, in the order, it always wrote, and a shipped cassette
reads as before.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

#: The key of the plugin's metadata in a cassette's ``metadata`` mapping.
METADATA_KEY = "cardprobe"
#: The cassette format the plugin writes (``metadata.cardprobe.format``).
FORMAT = 1

#: What each metadata entry the plugin reads must be: text, a whole number, or a mapping of
#: text to text. A value of another type would become a skip reason, a report's message or a
#: fingerprint compared as something it is not.
_TYPES: dict[str, str] = {
    "format": "int",
    "unsupported": "text",
    "suite_file": "text",
    "recorded": "text",
    "fingerprint": "mapping",
    "model": "mapping",
    "server": "mapping",
}
_TYPE_WORDS = {"int": "a whole number", "text": "text", "mapping": "a mapping of text to text"}


def utc_now() -> str:
    """The time now, as the cassettes and the baseline write it (ISO 8601, UTC, seconds)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


class CassetteMeta:
    """The plugin's metadata of one cassette: typed reads and writes over its mapping."""

    __slots__ = ("raw",)

    def __init__(self, raw: dict[str, Any] | None = None) -> None:
        #: The mapping itself (a recording's is the one vcrpy writes to the file).
        self.raw: dict[str, Any] = {} if raw is None else raw

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> CassetteMeta:
        """The metadata of a cassette's decoded data (empty when it has none)."""
        outer = data.get("metadata") or {}
        meta = outer.get(METADATA_KEY) or {} if isinstance(outer, Mapping) else {}
        return cls(meta if isinstance(meta, dict) else {})

    @staticmethod
    def fresh(fingerprint: Mapping[str, str]) -> dict[str, Any]:
        """The mapping a new recording starts with: its format and request fingerprint."""
        return {"format": FORMAT, "fingerprint": dict(fingerprint)}

    def problem(self) -> str | None:
        """What is wrong with the types of the entries, or None.

        Keys the plugin does not know are left alone (a later version may add some); the
        ones it reads must have their type, so none of them reaches a message or a
        comparison as a list, a number or a nested structure.
        """
        for key, kind in _TYPES.items():
            if key not in self.raw:
                continue
            value = self.raw[key]
            if kind == "int":
                fine = isinstance(value, int) and not isinstance(value, bool)
            elif kind == "text":
                fine = isinstance(value, str)
            else:
                fine = isinstance(value, dict) and all(
                    isinstance(k, str) and isinstance(v, str) for k, v in value.items()
                )
            if not fine:
                kind_word = _TYPE_WORDS[kind]
                return f"metadata {METADATA_KEY}.{key} is {type(value).__name__}, not {kind_word}"
        return None

    @property
    def fingerprint(self) -> dict[str, Any] | None:
        """The fingerprint it was recorded with; None when it has none (or an empty one)."""
        found = self.raw.get("fingerprint")
        return found if isinstance(found, dict) and found else None

    @property
    def suite_file(self) -> str | None:
        """The suite file it was recorded from, when it says."""
        value = self.raw.get("suite_file")
        return value if isinstance(value, str) and value else None

    @property
    def recorded(self) -> str | None:
        """When it was recorded, when that is a plausible time."""
        value = self.raw.get("recorded")
        return value if isinstance(value, str) and len(value) <= 40 else None

    @property
    def model(self) -> dict[str, str]:
        """What the model was (digest or id), empty when unknown."""
        return _text_map(self.raw.get("model"))

    @model.setter
    def model(self, identity: Mapping[str, str]) -> None:
        self.raw["model"] = dict(identity)

    @property
    def digest(self) -> str | None:
        """The model's digest (or an OpenAI-compatible server's fingerprint), when it is one:
        printable text of a plausible length, else None."""
        model = self.raw.get("model")
        if not isinstance(model, dict):
            return None
        for key in ("digest", "system_fingerprint"):
            value = model.get(key)
            if isinstance(value, str) and value and len(value) <= 200 and value.isprintable():
                return value
        return None

    @property
    def server(self) -> dict[str, str]:
        """What the server was (kind and version), empty when unknown."""
        return _text_map(self.raw.get("server"))

    @property
    def unsupported(self) -> str | None:
        """Why the arm cannot be served, when it was recorded as unsupported."""
        value = self.raw.get("unsupported")
        return str(value) if value else None

    @unsupported.setter
    def unsupported(self, why: str) -> None:
        self.raw["unsupported"] = why

    def stamp(self, suite_file: str, server: Mapping[str, str]) -> None:
        """Note a live recording: the server (when known), the suite file it belongs to (a
        same-named suite file may not record over it, glue/recording.py) and the time (the
        baseline keeps it per case)."""
        if server:
            self.raw["server"] = server
        self.raw["suite_file"] = suite_file
        self.raw["recorded"] = utc_now()
