"""scripts/real-servers without servers: releases, kinds, the env file, the model variants.

The script is standard-library Python loaded here as a module, with its cache pointed at a
temporary folder (it computes its paths at import).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real-servers"


@pytest.fixture
def rs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    loader = importlib.machinery.SourceFileLoader("real_servers_script", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    assert tmp_path / "cardprobe-servers" == module.C
    yield module


def test_releases_are_the_pinned_and_the_latest_sorted(rs: ModuleType) -> None:
    assert rs.ollama_versions_arg("latest,pinned") == [rs.OLLAMA_PINNED, rs.OLLAMA_LATEST]
    assert rs.ollama_versions_arg("0.33.0, v0.33.0,0.11.4") == ["v0.11.4", "v0.33.0"]
    for bad in ("0.33", "newest", ","):
        with pytest.raises(argparse.ArgumentTypeError):
            rs.ollama_versions_arg(bad)


def test_only_releases_from_0_30_get_the_llama_server_helper(rs: ModuleType) -> None:
    assert not rs.needs_helper("v0.11.4")
    assert rs.needs_helper("v0.30.0") and rs.needs_helper("0.33.0")
    assert rs.ollama_helper_dir("0.33.0") == rs.C / "ollama-v0.33.0" / "lib" / "ollama"
    assert rs.ollama_models("0.11.4") != rs.ollama_models("0.33.0")


def test_start_kinds_extras_are_of_the_newest_release(rs: ModuleType) -> None:
    versions = ["v0.11.4", "v0.33.0"]
    assert rs.start_kinds([], versions, 2) == [
        "ollama-0.11.4",
        "ollama-0.33.0",
        "ollama-0.33.0-2",
        "llama-server",
    ]
    assert rs.start_kinds(["llama-server"], versions, 3) == ["llama-server"]
    assert rs.kind_version("ollama-0.33.0-2") == "0.33.0"
    # run files of the one-release script before this one are still Ollamas to stop
    assert rs.is_ollama("ollama") and rs.is_ollama("ollama-2") and not rs.kind_version("ollama")
    assert not rs.is_ollama("llama-server")


def fake_running(rs: ModuleType, kind: str, url: str) -> None:
    """A run file whose pid is this test process, so `ours()` sees it running."""
    rs.RUN.mkdir(parents=True, exist_ok=True)
    state = {
        "kind": kind,
        "pid": os.getpid(),
        "argv": rs.proc_cmdline(os.getpid()),
        "url": url,
        "model": rs.OLLAMA_MODEL if kind != "llama-server" else rs.LLAMA_ALIAS,
        "log": "",
        "started": 0,
    }
    rs.state_path(kind).write_text(json.dumps(state))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_env_file_names_todays_ollama_and_each_release(rs: ModuleType) -> None:
    fake_running(rs, "ollama-0.11.4", "http://127.0.0.1:1001")
    fake_running(rs, "ollama-0.33.0", "http://127.0.0.1:1002")
    fake_running(rs, "ollama-0.33.0-2", "http://127.0.0.1:1003")
    fake_running(rs, "llama-server", "http://127.0.0.1:1004")
    rs.write_env_file()
    lines = rs.ENV_FILE.read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if not line.startswith("#"))
    assert values == {
        "CARDPROBE_OLLAMA_URL": "http://127.0.0.1:1002",
        "CARDPROBE_OLLAMA_MODEL": "smollm2:135m",
        "CARDPROBE_OLLAMA_VERSION": "0.33.0",
        "CARDPROBE_OLLAMA_URL_2": "http://127.0.0.1:1003",
        "CARDPROBE_OLLAMA_VERSIONS": "0.11.4,0.33.0",
        "CARDPROBE_OLLAMA_0_11_4_URL": "http://127.0.0.1:1001",
        "CARDPROBE_OLLAMA_0_33_0_URL": "http://127.0.0.1:1002",
        "CARDPROBE_LLAMA_SERVER_URL": "http://127.0.0.1:1004",
        "CARDPROBE_LLAMA_SERVER_MODEL": "smollm2-135m",
    }
    # The values are plain words: `set -a; . servers.env` must not split them.
    assert all(re.fullmatch(r"[\w.:/,-]+", v) for v in values.values())
    for kind in ("ollama-0.11.4", "ollama-0.33.0", "ollama-0.33.0-2", "llama-server"):
        rs.state_path(kind).unlink()
    rs.write_env_file()
    assert not rs.ENV_FILE.exists()  # nothing running: no env file


def test_variants_change_only_what_they_say(rs: ModuleType) -> None:
    template = str(rs.parse_modelfile(rs.MODELFILE.read_text())["template"])
    jsoncall = rs.variant_template(template, "jsoncall")
    # Same prompt text: the tag is written by a template action instead of literal text.
    assert jsoncall.replace('{{ "<tool_call>" }}', "<tool_call>") == template
    assert "{{ json .Function }}" in template
    think = rs.variant_template(template, "think")
    assert "{{ .Thinking }}" in think and "$.IsThinkSet" in think
    assert rs.create_ollama_models.__defaults__[-1] is True  # variants made unless asked not to
    with pytest.raises(rs.Fail, match="expected"):
        rs.variant_template(template.replace("<tool_call>", "<call>"), "jsoncall")


def test_each_ollama_is_parametrized_over_the_scripts_releases(rs: ModuleType) -> None:
    # tests/conftest.py, by its path: `import conftest` finds whichever conftest module was
    # imported first under that name (tests/plugin's, in some xdist orders).
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("cardprobe_tests_conftest_releases", path)
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = conftest  # its dataclasses look their module up there
    spec.loader.exec_module(conftest)
    # each_ollama's params come from the script's constants
    assert (rs.plain(rs.OLLAMA_PINNED), rs.plain(rs.OLLAMA_LATEST)) == conftest.OLLAMA_RELEASES


INNER_CONFTEST = """
import importlib.util
import sys

_spec = importlib.util.spec_from_file_location("cardprobe_tests_conftest", {path!r})
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)
pytest_runtest_makereport = _module.pytest_runtest_makereport
"""


@pytest.mark.parametrize("required", [False, True], ids=["optional", "required"])
def test_a_skipped_live_test_fails_when_live_is_required(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, required: bool
) -> None:
    """tests/conftest.py turns any skip of a `live` test into a failure under REQUIRE_LIVE=1."""
    conftest = Path(__file__).resolve().parents[1] / "conftest.py"
    pytester.makeconftest(INNER_CONFTEST.format(path=str(conftest)))
    pytester.makeini("[pytest]\nmarkers =\n    live: talks to a real server\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.live
        def test_live_that_skips():
            pytest.skip("no Ollama 0.11.4 here")

        def test_offline_that_skips():
            pytest.skip("not live: stays a skip")
        """
    )
    if required:
        monkeypatch.setenv("CARDPROBE_REQUIRE_LIVE", "1")
    else:
        monkeypatch.delenv("CARDPROBE_REQUIRE_LIVE", raising=False)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    if required:
        result.assert_outcomes(failed=1, skipped=1)
        result.stdout.fnmatch_lines(["*skipped under CARDPROBE_REQUIRE_LIVE=1*no Ollama 0.11.4*"])
    else:
        result.assert_outcomes(skipped=2)
