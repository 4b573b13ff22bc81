"""A number no JSON request can carry (NaN, an infinity, ``1e999``) anywhere in a suite, its
options or its tools file: the suite reader refuses it, naming the file, the line and the key.

These are rows of the guide's "What happens when…" table (its ``ROWS`` and the end-to-end
examples are in tests/plugin/test_hostile.py, which keeps ``options-nan`` as a whole run):
each one is the shipped suites with one edit, read here by the loader itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_cardprobe.suite.loader import SuiteError, load_suite

ROOT = Path(__file__).resolve().parents[2]
CARDS, CALLS, TOOLS_JSON = "cases/cards.yaml", "cases/tools.yaml", "cases/tools/tools.json"

NOT_FINITE = [
    pytest.param(TOOLS_JSON, '"minimum": 1,', '"minimum": NaN,', CALLS,
                 ("tools.json:16: $[0].function.parameters.properties.start_line.minimum: NaN is "
                  "not a finite number",),
                 id="tools-json-nan"),
    pytest.param(TOOLS_JSON, '"minimum": 1,', '"minimum": 1e999,', CALLS,
                 ("tools.json:16:", "1e999 is not a finite number"), id="tools-json-overflow"),
    pytest.param(CARDS, "num_predict: 512", "temperature: .inf", CARDS,
                 ("options.temperature", "not a finite number"), id="options-inf"),
    pytest.param(CARDS, "num_predict: 512", "stop: [-.inf]", CARDS,
                 ("options.stop[0]", "not a finite number"), id="options-nested-neg-inf"),
    pytest.param(CARDS, "type: string\n", "type: string\n                minimum: .nan\n", CARDS,
                 ("tool.function.parameters", "not a finite number"), id="tool-parameter-nan"),
]  # fmt: skip


@pytest.mark.parametrize(("edited", "old", "new", "read", "said"), NOT_FINITE)
def test_a_number_no_request_can_carry_is_refused_by_the_suite_reader(
    tmp_path: Path, edited: str, old: str, new: str, read: str, said: tuple[str, ...]
) -> None:
    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    file = tmp_path / edited
    text = file.read_text(encoding="utf-8")
    assert old in text, (edited, old)
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_suite(tmp_path / read)
    for part in said:
        assert part in str(caught.value), str(caught.value)
