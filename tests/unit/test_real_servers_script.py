"""scripts/real-servers without servers: releases, kinds, the env file, the model variants.

The command's code is the standard-library package `scripts/real_servers/`, imported here as
`real_servers` (pytest's `pythonpath` ini setting puts `scripts/` on sys.path). Its paths are
computed when asked, so each test points the cache at a temporary folder.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from real_servers import cli, envfile, kinds, models, paths, pins, processes

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
SCRIPT = SCRIPTS / "real-servers"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tmp_path / "cardprobe-servers" == paths.cache_root()
    return paths.cache_root()


def test_paths_follow_the_cache_set_after_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / name))
        root = tmp_path / name / "cardprobe-servers"
        assert paths.cache_root() == root
        assert paths.env_file() == root / "run" / "servers.env"
        assert paths.state_path("llama-server") == root / "run" / "llama-server.json"
        assert paths.ollama_bin_cached("0.33.0") == root / "ollama-v0.33.0" / "bin" / "ollama"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_root() == tmp_path / "home" / ".cache" / "cardprobe-servers"


def test_the_package_is_standard_library_only() -> None:
    """It runs before the project is installed: nothing but the standard library and itself."""
    files = [SCRIPT, *sorted((SCRIPTS / "real_servers").glob("*.py"))]
    assert len(files) > 5
    outside: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = {node.module.split(".")[0]}
            else:
                continue
            names -= set(sys.stdlib_module_names) | {"__future__", "real_servers"}
            if names:
                outside.setdefault(path.name, set()).update(names)
    assert outside == {}


def test_the_command_finds_its_package_from_an_isolated_python(tmp_path: Path) -> None:
    """`python3 -I` puts no script folder on sys.path: the launcher adds its own. `status` with
    nothing started says so for each server, exits 3 and writes nothing."""
    env = {"PATH": os.environ.get("PATH", ""), "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-I", str(SCRIPT), "status"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    run = tmp_path / "cardprobe-servers" / "run"
    assert done.stdout.splitlines() == [
        f"ollama: not running (no {run / 'ollama.json'})",
        f"llama-server: not running (no {run / 'llama-server.json'})",
        f"env file: {run / 'servers.env'} (absent)",
    ]
    assert not (tmp_path / "cardprobe-servers").exists()


def test_env_prints_the_env_file_or_says_how_to_get_one(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_file = cache / "run" / "servers.env"
    assert cli.main(["env"]) == 1
    assert capsys.readouterr().err == f"# no {env_file}: run `scripts/real-servers start`\n"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("A=1\n")
    assert cli.main(["env"]) == 0
    assert capsys.readouterr().out == f"# {env_file}\nA=1\n"
    assert cli.main(["env", "-q"]) == 0
    assert capsys.readouterr().out == "A=1\n"


def test_releases_are_the_pinned_and_the_latest_sorted() -> None:
    assert cli.ollama_versions_arg("latest,pinned") == [pins.OLLAMA_PINNED, pins.OLLAMA_LATEST]
    assert cli.ollama_versions_arg("0.33.0, v0.33.0,0.11.4") == ["v0.11.4", "v0.33.0"]
    for bad in ("0.33", "newest", ","):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.ollama_versions_arg(bad)


def test_only_releases_from_0_30_get_the_llama_server_helper(cache: Path) -> None:
    assert not pins.needs_helper("v0.11.4")
    assert pins.needs_helper("v0.30.0") and pins.needs_helper("0.33.0")
    assert paths.ollama_helper_dir("0.33.0") == cache / "ollama-v0.33.0" / "lib" / "ollama"
    assert paths.ollama_models("0.11.4") != paths.ollama_models("0.33.0")


def test_start_kinds_extras_are_of_the_newest_release() -> None:
    versions = ["v0.11.4", "v0.33.0"]
    assert kinds.start_kinds([], versions, 2) == [
        "ollama-0.11.4",
        "ollama-0.33.0",
        "ollama-0.33.0-2",
        "llama-server",
    ]
    assert kinds.start_kinds(["llama-server"], versions, 3) == ["llama-server"]
    assert kinds.kind_version("ollama-0.33.0-2") == "0.33.0"
    # run files of the one-release script before this one are still Ollamas to stop
    assert kinds.is_ollama("ollama") and kinds.is_ollama("ollama-2")
    assert not kinds.kind_version("ollama")
    assert not kinds.is_ollama("llama-server")


def fake_running(kind: str, url: str) -> None:
    """A run file whose pid is this test process, so `ours()` sees it running."""
    paths.run_dir().mkdir(parents=True, exist_ok=True)
    state = {
        "kind": kind,
        "pid": os.getpid(),
        "argv": processes.proc_cmdline(os.getpid()),
        "url": url,
        "model": pins.OLLAMA_MODEL if kind != "llama-server" else pins.LLAMA_ALIAS,
        "log": "",
        "started": 0,
    }
    paths.state_path(kind).write_text(json.dumps(state))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_env_file_names_todays_ollama_and_each_release(cache: Path) -> None:
    fake_running("ollama-0.11.4", "http://127.0.0.1:1001")
    fake_running("ollama-0.33.0", "http://127.0.0.1:1002")
    fake_running("ollama-0.33.0-2", "http://127.0.0.1:1003")
    fake_running("llama-server", "http://127.0.0.1:1004")
    envfile.write_env_file()
    assert paths.env_file() == cache / "run" / "servers.env"
    lines = paths.env_file().read_text().splitlines()
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
        paths.state_path(kind).unlink()
    envfile.write_env_file()
    assert not paths.env_file().exists()  # nothing running: no env file


def test_variants_change_only_what_they_say() -> None:
    template = str(models.parse_modelfile(paths.MODELFILE.read_text())["template"])
    jsoncall = models.variant_template(template, "jsoncall")
    # Same prompt text: the tag is written by a template action instead of literal text.
    assert jsoncall.replace('{{ "<tool_call>" }}', "<tool_call>") == template
    assert "{{ json .Function }}" in template
    think = models.variant_template(template, "think")
    assert "{{ .Thinking }}" in think and "$.IsThinkSet" in think
    assert models.create_ollama_models.__defaults__[-1] is True  # variants made unless asked not to
    with pytest.raises(models.Fail, match="expected"):
        models.variant_template(template.replace("<tool_call>", "<call>"), "jsoncall")


def test_each_ollama_is_parametrized_over_the_scripts_releases() -> None:
    # tests/live/conftest.py, by its path: `import conftest` finds whichever conftest module
    # was imported first under that name (tests/plugin's, in some xdist orders).
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "live" / "conftest.py"
    spec = importlib.util.spec_from_file_location("cardprobe_tests_conftest_releases", path)
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = conftest  # its dataclasses look their module up there
    spec.loader.exec_module(conftest)
    # each_ollama's params come from the script's constants
    releases = (pins.plain(pins.OLLAMA_PINNED), pins.plain(pins.OLLAMA_LATEST))
    assert releases == conftest.OLLAMA_RELEASES


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
