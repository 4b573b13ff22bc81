"""``python -m pytest_cardprobe init``: the starter it writes and how it treats existing files."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

import pytest

from pytest_cardprobe.__main__ import main as cli
from pytest_cardprobe.cli.init import run
from pytest_cardprobe.cli.starter import (
    DEFAULT_MODEL,
    STARTER_DIR,
    STARTER_SUITE,
    STARTER_TOOLS_SUITE,
)
from pytest_cardprobe.suite.builtin import builtin_suite_path
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.toollint import lint_tools

SUITE = Path(STARTER_DIR) / f"{STARTER_SUITE}.yaml"


def init(root: Path, *args: str) -> int:
    return cli(["init", str(root), *args])


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_the_starter_call_suite_loads_with_clean_tools_and_every_kind_of_expectation(
    tmp_path: Path,
) -> None:
    assert init(tmp_path) == 0
    suite = load_suite(tmp_path / STARTER_DIR / f"{STARTER_TOOLS_SUITE}.yaml")
    assert suite.is_call_suite and suite.name == STARTER_TOOLS_SUITE
    assert [t["function"]["name"] for t in suite.tools] == ["get_weather", "set_reminder"]
    assert lint_tools(suite.tools, suite.path) == []
    kinds = {c.expect.kind for c in suite.cases if c.expect is not None}
    assert kinds == {"call", "no_call"}
    # Its system prompt is written for its own tools (a coding assistant's once came with them).
    prompt = suite.prompts["call"]
    assert "get_weather" in prompt and "set_reminder" in prompt and "code" not in prompt.lower()


def test_empty_folder_gets_a_suite_that_loads_and_a_pytest_ini(tmp_path: Path) -> None:
    assert init(tmp_path) == 0
    suite = load_suite(tmp_path / SUITE)
    cards = load_suite(builtin_suite_path("cards"))
    assert suite.name == STARTER_SUITE
    assert 3 <= len(suite.cases) <= 8
    assert any(c.is_control for c in suite.cases)
    # Prompts, tool and history start out as the built-in suite's, so both ask the same way.
    assert dict(suite.prompts) == dict(cards.prompts)
    assert suite.tool == cards.tool and suite.history == cards.history
    # testpaths is left alone: a plain `pytest` collects what it did (here: everything).
    assert (
        tmp_path / "pytest.ini"
    ).read_text() == f"[pytest]\ncardprobe_models = {DEFAULT_MODEL}\n"


def test_models_given_are_written_one_per_line(tmp_path: Path) -> None:
    assert init(tmp_path, "--model", "qwen3:4b", "--model", "llama3.2:3b") == 0
    assert (
        "cardprobe_models =\n    qwen3:4b\n    llama3.2:3b\n"
        in (tmp_path / "pytest.ini").read_text()
    )


PYPROJECT = """\
[project]
name = "app"  # keep me

[tool.pytest.ini_options]
# a comment of the user's
addopts = "-ra"

[tool.ruff]
line-length = 88
"""


def test_an_existing_pyproject_is_added_to_without_force_keeping_everything_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    assert init(tmp_path) == 0
    out = capsys.readouterr().out
    assert "pyproject.toml: add to [tool.pytest.ini_options]" in out
    assert f'+ cardprobe_models = ["{DEFAULT_MODEL}"]' in out
    text = (tmp_path / "pyproject.toml").read_text()
    assert "# a comment of the user's" in text and 'name = "app"  # keep me' in text
    data = tomllib.loads(text)
    assert data["tool"]["pytest"]["ini_options"] == {
        "addopts": "-ra",
        "cardprobe_models": [DEFAULT_MODEL],
    }
    assert data["tool"]["ruff"] == {"line-length": 88}
    # The key went into the pytest table, before the next table starts.
    assert text.index("cardprobe_models") < text.index("[tool.ruff]")
    assert (tmp_path / SUITE).is_file()


def test_keys_already_set_are_kept_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\ntestpaths = ["{STARTER_DIR}"]\n'
        'cardprobe_models = ["mine:7b"]\n'
    )
    before = (tmp_path / "pyproject.toml").read_text()
    assert init(tmp_path) == 0  # nothing to change in an existing file: no --force needed
    assert (tmp_path / "pyproject.toml").read_text() == before
    assert "cardprobe_models is set already (mine:7b); kept" in capsys.readouterr().out
    assert (tmp_path / SUITE).is_file()


def test_testpaths_are_left_alone_and_init_says_how_the_probes_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    text = (
        "[tool.pytest.ini_options]\n# the project's own tests\n"
        'testpaths = ["tests"]  # mine\naddopts = "-ra"\n'
    )
    pyproject.write_text(text)
    assert init(tmp_path) == 0
    out = capsys.readouterr().out
    assert pyproject.read_text() == text + f'cardprobe_models = ["{DEFAULT_MODEL}"]\n'
    assert (
        f"testpaths (tests) leaves {STARTER_DIR}/ out, so a plain `pytest` runs what it ran "
        f"before; run the probes with `pytest {STARTER_DIR}`"
    ) in out
    assert f"`pytest {STARTER_DIR} --live` records the starter's cassettes" in out


@pytest.mark.parametrize(
    "config",
    [
        "[pytest]\ntestpaths = tests\n    docs\naddopts = -q\n",
        '[tool.pytest.ini_options]\ntestpaths = [\n    "tests",  # unit\n    "e2e",\n]\n',
    ],
)
def test_a_multi_line_testpaths_stays_as_it_was(tmp_path: Path, config: str) -> None:
    name = "pytest.ini" if config.startswith("[pytest]") else "pyproject.toml"
    (tmp_path / name).write_text(config)
    assert init(tmp_path) == 0
    text = (tmp_path / name).read_text()
    assert text.startswith(config)  # testpaths as it was, the key added after it
    assert text[len(config) :].lstrip().startswith("cardprobe_models")


def test_a_testpaths_that_reaches_the_starter_says_it_is_skipped_until_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = . tests\n")
    assert init(tmp_path) == 0
    assert (
        f"a plain `pytest` collects {STARTER_DIR}/ too: until they are recorded its probes are "
        "skipped (never recorded), not failed"
    ) in capsys.readouterr().out


def test_crlf_and_a_bom_are_kept_and_old_lines_are_byte_for_byte_the_same(
    tmp_path: Path,
) -> None:
    ini = b"[pytest]\r\naddopts = -q\r\n\r\n[other]\r\nx = 1\r\n"
    (tmp_path / "pytest.ini").write_bytes(ini)
    toml = b'\xef\xbb\xbf[project]\r\nname = "app"\r\n'
    (tmp_path / "pyproject.toml").write_bytes(toml)
    assert init(tmp_path) == 0
    data = (tmp_path / "pytest.ini").read_bytes()
    assert data.startswith(b"[pytest]\r\naddopts = -q\r\n")
    assert data.endswith(b"\r\n\r\n[other]\r\nx = 1\r\n")
    assert data.count(b"\n") == data.count(b"\r\n")  # no bare LF added
    (tmp_path / "pytest.ini").unlink()
    assert init(tmp_path) == 0
    data = (tmp_path / "pyproject.toml").read_bytes()
    assert data.startswith(toml) and data.count(b"\n") == data.count(b"\r\n")
    assert tomllib.loads(data[3:].decode())["tool"]["pytest"]["ini_options"] == {
        "cardprobe_models": [DEFAULT_MODEL]
    }


def test_a_config_file_that_is_not_utf8_is_refused_not_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pytest.ini").write_bytes(b"[pytest]\n# caf\xe9\naddopts = -q\n")
    assert init(tmp_path, "--force") == 1
    assert "pytest.ini: not UTF-8 text" in capsys.readouterr().err
    assert (tmp_path / "pytest.ini").read_bytes() == b"[pytest]\n# caf\xe9\naddopts = -q\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (f"x = {'[' * 5000}{']' * 5000}\n", "not valid TOML"),
        ('tool = "x"\n', "tool is a string, not a table"),
        ("[tool]\npytest = 3\n", "tool.pytest is a number, not a table"),
    ],
    ids=["deep", "tool", "tool.pytest"],
)
def test_a_pyproject_init_cannot_add_to_is_refused_by_name_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    assert init(tmp_path) == 1
    err = capsys.readouterr().err
    assert "pyproject.toml: " in err and said in err
    assert (tmp_path / "pyproject.toml").read_text() == text


def test_an_edited_config_file_keeps_its_mode(tmp_path: Path) -> None:
    config = tmp_path / "pytest.ini"
    config.write_text("[pytest]\naddopts = -q\n")
    config.chmod(0o664)
    assert init(tmp_path) == 0
    assert config.stat().st_mode & 0o777 == 0o664


@pytest.mark.parametrize("model", ["", "  ", "a b", "../x"])
def test_a_model_name_that_cannot_be_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        init(tmp_path, "--model", model)
    assert exited.value.code == 2
    assert f"--model {model!r}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_starter_call_suite_reads_the_tools_file_init_writes_next_to_it(
    tmp_path: Path,
) -> None:
    assert init(tmp_path) == 0
    folder = tmp_path / STARTER_DIR
    assert "\ntools: tools.json\n" in (folder / f"{STARTER_TOOLS_SUITE}.yaml").read_text()
    suite = load_suite(folder / f"{STARTER_TOOLS_SUITE}.yaml")
    assert list(suite.tools) == json.loads((folder / "tools.json").read_text())


def test_pyproject_without_pytest_config_gets_a_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\n')
    assert init(tmp_path) == 0
    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert data["project"] == {"name": "app"}
    assert data["tool"]["pytest"]["ini_options"] == {"cardprobe_models": [DEFAULT_MODEL]}
    assert not (tmp_path / "pytest.ini").exists()  # pytest would read it instead of pyproject


def test_pytest_ini_wins_over_pyproject_as_pytest_reads_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q\n\n[other]\nx = 1\n")
    assert init(tmp_path) == 0
    assert (tmp_path / "pyproject.toml").read_text() == PYPROJECT
    assert (tmp_path / "pytest.ini").read_text() == (
        f"[pytest]\naddopts = -q\ncardprobe_models = {DEFAULT_MODEL}\n\n[other]\nx = 1\n"
    )


def test_setup_cfg_section_is_the_one_edited(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = app\n[tool:pytest]\naddopts = -q\n")
    assert init(tmp_path) == 0
    assert "[tool:pytest]\naddopts = -q\ncardprobe_models" in (tmp_path / "setup.cfg").read_text()
    assert not (tmp_path / "pytest.ini").exists()


def test_an_edited_starter_file_is_kept_without_force_and_init_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert init(tmp_path) == 0
    mine = tmp_path / STARTER_DIR / "prompts" / "tool.md"
    mine.write_text("my own prompt\n")
    capsys.readouterr()
    assert init(tmp_path) == 0
    assert mine.read_text() == "my own prompt\n"
    out = capsys.readouterr().out
    assert (
        f"{STARTER_DIR}/prompts/tool.md: kept (it exists and differs; --force overwrites it)" in out
    )
    assert init(tmp_path, "--force") == 0
    assert mine.read_text() != "my own prompt\n"


def test_broken_toml_is_reported_not_edited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    assert init(tmp_path, "--force") == 1
    assert "pyproject.toml: not valid TOML" in capsys.readouterr().err
    assert not (tmp_path / STARTER_DIR).exists()


def test_run_reports_to_the_given_stream(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run(tmp_path, ["m"], force=False, out=out) == 0
    assert f"{SUITE}: create" in out.getvalue()


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err
    assert cli([]) == 2


def test_multi_line_arrays_in_the_table_stay_whole(tmp_path: Path) -> None:
    text = (
        "[tool.pytest.ini_options]\n"
        "filterwarnings = [\n"
        '    "error",\n'
        '    ["nested", "x"],\n'
        "]\n"
        "\n"
        "  [tool.other]\n"
        "x = 1\n"
    )
    (tmp_path / "pyproject.toml").write_text(text)
    assert init(tmp_path) == 0
    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert data["tool"]["pytest"]["ini_options"]["filterwarnings"] == ["error", ["nested", "x"]]
    assert data["tool"]["pytest"]["ini_options"]["cardprobe_models"] == [DEFAULT_MODEL]
    assert data["tool"]["other"] == {"x": 1}


def test_from_a_subfolder_init_writes_into_the_projects_rootdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Fails without finding the project: a pytest.ini and the starter landed in src/app,
    # where the new pytest.ini would have rooted every run started there.
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    sub = tmp_path / "src" / "app"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert cli(["init"]) == 0
    assert "writing into" in capsys.readouterr().out
    assert list(sub.iterdir()) == []
    assert (tmp_path / SUITE).is_file()
    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert data["tool"]["pytest"]["ini_options"]["cardprobe_models"] == [DEFAULT_MODEL]


def test_without_a_project_init_writes_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["init"]) == 0
    assert (tmp_path / "pytest.ini").is_file() and (tmp_path / SUITE).is_file()
