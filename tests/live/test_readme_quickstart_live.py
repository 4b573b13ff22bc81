"""The README's "your own tools" quickstart, as written, against the real Ollama.

The README's suite block and its three commands are read from README.md; the only change is
the model (the README's ``qwen3:8b`` becomes the model scripts/real-servers serves), and the
server is given the way the README's reader gives it, through ``$OLLAMA_HOST``. Record, accept,
replay: the last run replays offline and its gate passes against the baseline the second
wrote. Assertions are on files, exit codes and the gate line, never on generated text.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


def quickstart() -> tuple[str, list[list[str]]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Your own tools in a minute")
    section = text[start : text.index("\n## ", start + 1)]
    suite = re.search(r"```yaml\n(# cases/assistant\.yaml\n.*?)```", section, re.S)
    commands = re.search(r"```bash\n(.*?)```", section, re.S)
    assert suite and commands, "the README's quickstart blocks"
    lines = [shlex.split(line, comments=True) for line in commands.group(1).splitlines()]
    return suite.group(1), [line for line in lines if line]


def test_the_readme_quickstart_records_accepts_and_replays(
    pytester: pytest.Pytester, real_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, commands = quickstart()
    (pytester.path / "cases" / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "cases" / "tools" / "tools.json", pytester.path / "cases" / "tools")
    (pytester.path / "cases" / "assistant.yaml").write_text(suite, encoding="utf-8")
    monkeypatch.setenv("OLLAMA_HOST", real_ollama.base_url)
    assert [c[:2] for c in commands] == [["pytest", "cases/assistant.yaml"]] * 3
    record, accept, replay = (
        [real_ollama.model if a == "qwen3:8b" else a for a in c[1:]] for c in commands
    )
    assert "--live" in record and "--cardprobe-update-baseline" in accept

    recorded = pytester.runpytest("-p", "no:cacheprovider", *record)
    out = recorded.stdout.str()
    assert recorded.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), out[-3000:]
    cassettes = sorted(p.name for p in (pytester.path / "cassettes").rglob("*.yaml"))
    assert cassettes == ["capital-call-cold.yaml", "readme-call-cold.yaml"], out[-3000:]

    accepted = pytester.runpytest("-p", "no:cacheprovider", *accept)
    assert accepted.ret == pytest.ExitCode.OK, accepted.stdout.str()[-3000:]
    assert [p.name for p in pytester.path.rglob("cardprobe-baseline.json")] == [
        "cardprobe-baseline.json"
    ]

    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # replay asks no server
    replayed = pytester.runpytest("-p", "no:cacheprovider", *replay)
    out = replayed.stdout.str()
    assert replayed.ret == pytest.ExitCode.OK, out[-3000:]
    assert re.search(r"^gate: pass", out, re.M), out[-3000:]
