"""What a cassette file holds and how it is written.

vcrpy's format (``version: 1``: interactions of a request and a response) with the plugin's
metadata under :data:`METADATA_KEY` (``metadata.py``), written as JSON that is also YAML (see
:func:`dump_cassette`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.wire.cassettes.metadata import FORMAT as FORMAT
from pytest_cardprobe.wire.cassettes.metadata import METADATA_KEY as METADATA_KEY
from pytest_cardprobe.wire.cassettes.metadata import CassetteMeta

VCR_VERSION = 1  # the cassette format vcrpy writes (``version: 1``)
# Deny by default: a header reaches a cassette only when replay needs it. Credentials come
# under too many names (X-Auth, X-Access-Key, Ocp-Apim-Subscription-Key, OpenAI-Organization,
# WWW-Authenticate...) for a list of bad names to keep up.
KEPT_HEADERS = frozenset({"content-type"})


@dataclass
class Recording:
    """State of one test's cassette while the test runs."""

    path: Path
    live: bool
    samples: int = 0
    # Cleared when a call ended in infra or the model was unknown: nothing gets written.
    keep: bool = True
    written: bool = False
    metadata: CassetteMeta = field(default_factory=CassetteMeta)


def serialize_cassette(cassette_dict: Mapping[str, Any]) -> str:
    """The file text of a recording vcrpy hands over (its requests, responses and metadata)."""
    from vcr.serialize import serialize
    from vcr.serializers import yamlserializer

    try:
        return str(serialize(cassette_dict, _JsonAsYaml))
    except (TypeError, ValueError):
        # A body that is not text (vcrpy keeps undecodable bytes as bytes) has no JSON
        # form; vcrpy's own YAML writer stores it as !!binary.
        return str(serialize(cassette_dict, yamlserializer))


# Characters a JSON encoder leaves raw (with ensure_ascii off) that a YAML 1.1 reader refuses
# (C1 controls, lone surrogates, U+FFFE/U+FFFF) or reads as a line break and folds into a
# space (U+0085, U+2028, U+2029). Escaped, they mean the same to both readers.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def dump_cassette(data: Mapping[str, Any]) -> str:
    """A cassette as JSON text that is also YAML meaning the same, so vcrpy's reader reads it.

    vcrpy's YAML serializer reads these files as they are (JSON is YAML's flow style), and
    replay reads them with :func:`json.loads`, several times faster than a YAML parser (see
    BENCHMARKS.md, "Cassette replay"). Text is kept as UTF-8, not ``\\u`` escapes: a YAML
    reader would turn an escaped surrogate pair into two lone surrogates.
    """
    text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


class _JsonAsYaml:
    """vcrpy's serializer interface around :func:`dump_cassette`."""

    @staticmethod
    def serialize(cassette_dict: Mapping[str, Any]) -> str:
        return dump_cassette(cassette_dict)
