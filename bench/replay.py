"""Time cassette replay against bare pytest (``python bench/replay.py``; see BENCHMARKS.md).

Builds the shipped card suite on every arm it ships (``--matrix four``: the original four arms)
times ``--models`` synthetic models in a temporary folder. Each cassette is what a recording
of the test would write: ``Runtime.run`` asks every request the test makes (the retry
channel's tool retry only after a prose reply that does not parse) through a backend that
answers with a synthetic Ollama ``/api/chat`` body of one of ten kinds and writes the
requests and replies with the package's own cassette code. Then times replay with a baseline
(``replay``), replay without one (``first``: a first run, every failure reported in full),
bare (as many trivial tests) and bare with replay's outcomes (``bare-xfail``, ``bare-fail``),
interleaved, ``--repeat`` rounds after an untimed warm-up that fills a bytecode cache, and
prints Markdown: machine, runs (wall, CPU, peak RSS, load), ratios round by round, and the
plugin's per-test cost by stage, in-process. ``--against SRC`` adds both replays run with the
package in SRC (the code before a change) to every round, so a change is timed interleaved.
``--floor`` adds both replays with every test's ``Runtime.run`` answered by the result it gave
in a warm-up (``replay-floor``, ``first-floor``): the same items, outcomes and reports with
none of the plugin's replay work, so ``replay / replay-floor`` is that work's share and
``replay-floor / bare`` what pytest spends on such items whatever the plugin does.
``--indexed`` adds ``first`` and ``bare-fail`` with pytest's own failure summary made linear
(``first-indexed``, ``bare-fail-indexed``): pytest finds each failure's teardown report by
scanning every passed setup and teardown report of the session, once per failure
(``TerminalReporter._get_teardown_reports`` in pytest 9.2); a throwaway plugin indexes them
once. It changes what pytest does, not the plugin, and prints the same: it shows how much of
a first run that scan is.

``--cassettes shipped`` times the repository's own recordings instead of synthetic ones: both
shipped suites (``cases/cards.yaml`` and ``cases/tools.yaml``) on every arm, their cassettes
copied once per model with only the model's name changed (in each request and reply body and
in the metadata), so a copy replays exactly as the shipped cassette does, a recorded failed
attempt before the retry that succeeded included (synthetic cassettes hold none). The runs and
ratios are the same: ``replay`` against ``bare-xfail`` (pytest with the same passed and
imperatively xfailed counts), ``first`` against ``bare-fail``, both against ``bare``.
"""

# Markdown tables use the multiplication sign and the en dash.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SERVER = "http://127.0.0.1:11434"  # the default server, as an unconfigured recording has it
TOOL = "render_adaptive_card"
OK = {"code": 200, "message": "OK"}
BAD_SIGNS = ("not recorded", "stale cassette", "corrupt cassette", "INTERNALERROR")
PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
# name: (folder, what pytest is given, what it stands for in the tables)
TARGETS = {
    "replay": ("replay", ("cases",), "replay against a baseline"),
    "first": ("first", ("cases",), "replay without a baseline"),
    "bare": ("bare", ("test_bare.py",), "trivial tests, all pass"),
    "bare-xfail": ("bare", ("test_bare_xfail.py",), "trivial tests with replay's outcomes"),
    "bare-fail": ("bare", ("test_bare_fail.py",), "trivial tests with first's outcomes"),
    "collect": ("replay", ("cases", "--collect-only"), "collection of the replay run only"),
    # With --against SRC: the same replays with the package from SRC (the code before a change).
    "replay-against": ("replay", ("cases",), "`replay` with the package from --against"),
    "first-against": ("first", ("cases",), "`first` with the package from --against"),
    # With --floor: each test's Runtime.run answered by the result it gave in a warm-up.
    "replay-floor": ("replay", ("cases", "-p", "cardprobe_floor"), "`replay`, results given"),
    "first-floor": ("first", ("cases", "-p", "cardprobe_floor"), "`first`, results given"),
    # With --indexed: pytest's failure summary finds teardown reports through an index.
    "first-indexed": ("first", ("cases", "-p", "cardprobe_indexed"), "`first`, pytest indexed"),
    "bare-fail-indexed": (
        "bare",
        ("test_bare_fail.py", "-p", "cardprobe_indexed"),
        "`bare-fail`, pytest indexed",
    ),
}
# Runs whose outcomes must be those of a replay's warm-up (bare-fail was written from first's).
SAME_OUTCOMES = {
    **{f"{w}-{how}": w for w in ("replay", "first") for how in ("against", "floor")},
    "first-indexed": "first",
    "bare-fail-indexed": "first",
}
RATIOS = (
    ("replay", "bare"),
    ("replay", "bare-xfail"),
    ("first", "bare"),
    ("first", "bare-fail"),
    ("bare-xfail", "bare"),
    ("bare-fail", "bare"),
    ("collect", "bare"),
    ("replay", "replay-against"),
    ("first", "first-against"),
    ("replay-against", "bare"),
    ("first-against", "bare"),
    ("replay", "replay-floor"),
    ("first", "first-floor"),
    ("replay-floor", "bare"),
    ("first-floor", "bare"),
    ("first", "first-indexed"),
    ("bare-fail", "bare-fail-indexed"),
    ("first-indexed", "bare"),
    ("first-indexed", "bare-fail-indexed"),
    ("bare-fail-indexed", "bare"),
)
# The plugin of the floor runs (``-p cardprobe_floor``): with CARDPROBE_FLOOR=record it keeps
# what each test's Runtime.run returned; with serve it returns that and does nothing else.
FLOOR_PLUGIN = """\
import os
import pickle

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    from pytest_cardprobe.run import runtime

    real, path = runtime.Runtime.run, os.environ["CARDPROBE_FLOOR_FILE"]
    if os.environ["CARDPROBE_FLOOR"] == "record":
        kept = config.cardprobe_floor = {}

        def run(self, probe, samples, nodeid, *args, **kwargs):
            kept[nodeid] = result = real(self, probe, samples, nodeid, *args, **kwargs)
            return result
    else:
        with open(path, "rb") as file:
            kept = pickle.load(file)

        def run(self, probe, samples, nodeid, *args, **kwargs):
            return kept[nodeid]

    runtime.Runtime.run = run


def pytest_unconfigure(config):
    kept = getattr(config, "cardprobe_floor", None)
    if kept is not None:
        with open(os.environ["CARDPROBE_FLOOR_FILE"], "wb") as file:
            pickle.dump(kept, file)
"""
# The plugin of the indexed runs (``-p cardprobe_indexed``), bench only: it replaces a private
# method of pytest's terminal reporter, which the plugin itself never does. pytest 9.2's
# method keeps the reports whose ``when`` is "teardown" and whose ``id`` is the failure's,
# scanning ``getreports("")`` (every passed setup and teardown report) once per failure;
# this builds that mapping on the first call (``indexed``, what the timed runs use). With
# CARDPROBE_INDEXED=check each call also runs pytest's own method and compares what the two
# return; CARDPROBE_INDEXED_FILE gets the number of calls and of those that differ.
INDEXED_PLUGIN = """\
import os

from _pytest.terminal import TerminalReporter

original = TerminalReporter._get_teardown_reports
calls, differ = [], []


def indexed(self, node_id):
    index = self.__dict__.get("_cardprobe_bench_index")
    if index is None:
        index = self._cardprobe_bench_index = {}
        for report in self.getreports(""):
            if report.when == "teardown":
                index.setdefault(report.id, []).append(report)
    return index.get(node_id, [])


def checked(self, node_id):
    found = indexed(self, node_id)
    calls.append(node_id)
    if found != original(self, node_id):
        differ.append(node_id)
    return found


CHECK = os.environ.get("CARDPROBE_INDEXED") == "check"
TerminalReporter._get_teardown_reports = checked if CHECK else indexed


def pytest_unconfigure(config):
    if CHECK:
        with open(os.environ["CARDPROBE_INDEXED_FILE"], "w") as file:
            file.write(f"{len(calls)} calls, {len(differ)} differ")
"""
PROSE = (
    "I'm sorry for any confusion, but as an AI designed to assist with creative ideas and "
    "suggestions, I can only describe it. If you tell me a little more about what you need, "
    "I can certainly help with that. In general it is best to keep the options simple and to "
    "check them once more before you decide."
)
PROSE_KINDS = ("card", "adaptive", "fenced", "prose", "prose-with-card", "broken", "wrong")
TOOL_KINDS = ("tool_calls", "tool_calls", "text-call", "prose", "card-content")

CHART_RANGES = {"Chart.Pie": (5, 40), "Chart.Donut": (5, 40), "Chart.Line": (1, 50)}
CONTAINERS = {"Table": "rows", "ColumnSet": "columns", "Carousel": "pages"}
PARTS = {"Table": "TableRow", "ColumnSet": "Column", "Carousel": "CarouselPage"}


def _element(kind: str, rng: random.Random) -> dict[str, Any]:
    """A plausible element of type ``kind``, with the nested types a renderer would get."""
    n = rng.randint(3, 5)
    texts = [[{"type": "TextBlock", "text": f"Part {i}"}] for i in range(n)]
    if kind == "Table":
        cell = {"type": "TableCell", "items": texts[0]}
        return {"type": kind, "rows": [{"type": "TableRow", "cells": [cell] * 2}] * n}
    if kind in CONTAINERS:
        return {"type": kind, CONTAINERS[kind]: [{"type": PARTS[kind], "items": t} for t in texts]}
    if kind.startswith("Chart.") and kind != "Chart.Gauge":
        low, high = CHART_RANGES.get(kind, (10, 99))
        data = [{"x": f"Q{i + 1}", "y": rng.randint(low, high)} for i in range(n)]
        return {"type": kind, "title": "Per quarter", "data": data}
    if kind in ("Chart.Gauge", "ProgressBar", "ProgressRing", "Rating"):
        return {"type": kind, "value": rng.randint(1, 5 if kind == "Rating" else 100), "max": 100}
    choices = [{"title": f"Option {i}", "value": f"opt{i}"} for i in range(n)]
    return {"type": kind, "id": "answer", "label": "Your answer", "choices": choices}


def _card(accept: Sequence[str], rng: random.Random, wrong: bool = False) -> list[dict[str, Any]]:
    body: list[dict[str, Any]] = [{"type": "TextBlock", "text": "Here you go", "weight": "Bolder"}]
    if wrong:
        body.append(_element(rng.choice(["FactSet", "TextBlock", "Table"]), rng))
    elif accept:
        body.append(_element(rng.choice(list(accept)), rng))
    return body


def reply_kind(probe: Any, index: int, tool: bool) -> str:
    """Deterministic but varied: a hash of the test picks the kind; one test in four splits.

    ``tool`` picks among replies to a request that declares the tool; the retry channel's
    second request hashes apart from its first, so a retry does not echo the prose kind.
    """
    kinds = TOOL_KINDS if tool else PROSE_KINDS
    retry = tool and probe.channel == "retry"
    h = zlib.crc32((probe.name + ("#retry" if retry else "")).encode())
    if index and (h >> 8) % 4 == 0:
        h += index
    return kinds[h % len(kinds)]


def ollama_reply(probe: Any, kind: str, rng: random.Random, when: dt.datetime) -> str:
    """One ``/api/chat`` (stream:false) reply body of ``kind``, as JSON text."""
    accept, dumps = probe.case.accept, json.dumps
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    if kind in ("card", "card-content"):
        message["content"] = dumps(_card(accept, rng))
    elif kind == "adaptive":
        card = {"type": "AdaptiveCard", "version": "1.5", "body": _card(accept, rng)}
        message["content"] = dumps(card, indent=2)
    elif kind == "fenced":
        message["content"] = "```json\n" + dumps(_card(accept, rng), indent=2) + "\n```"
    elif kind == "prose":
        message["content"] = PROSE
    elif kind == "prose-with-card":
        shown = dumps(_card(accept, rng), indent=2)
        message["content"] = f"Sure! Here is a card:\n\n```json\n{shown}\n```\n\nLet me know."
    elif kind == "broken":  # a trailing comma, the commonest way small models break JSON
        message["content"] = dumps(_card(accept, rng))[:-2] + "},]"
    elif kind == "wrong":
        message["content"] = dumps(_card(accept, rng, wrong=True))
    elif kind == "tool_calls":
        call = {"name": TOOL, "arguments": {"body": _card(accept, rng)}, "index": 0}
        message["tool_calls"] = [{"function": call}]
    elif kind == "text-call":
        call = {"name": TOOL, "arguments": {"body": _card(accept, rng)}}
        message["content"] = f"<tool_call>\n{dumps(call)}\n</tool_call>"
    prompt, evals = rng.randint(600, 900), max(8, len(message["content"]) // 4)
    load, stamp = rng.randint(10**7, 3 * 10**9), when.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
    timing = {"load": load, "prompt_eval": prompt * 2 * 10**7, "eval": evals * 3 * 10**8}
    reply = {"model": probe.model, "created_at": stamp, "message": message, "done_reason": "stop"}
    reply.update(done=True, total_duration=sum(timing.values()), prompt_eval_count=prompt)
    reply.update({f"{k}_duration": v for k, v in timing.items()}, eval_count=evals)
    return dumps(reply, ensure_ascii=False, separators=(",", ":"))


class Synthetic:
    """A backend for ``Runtime.run`` that answers each request with a synthetic reply and
    writes what was asked and answered as the test's cassette, as a recording would.

    The runtime decides what is asked (the retry channel's tool request only after a prose
    reply its judge calls malformed); only the replies are made up.
    """

    live = False

    def __init__(self, samples_from: dt.datetime) -> None:
        import httpx

        self.start = samples_from
        self.headers = {
            "content-type": ["application/json"],
            "user-agent": [f"httpx/{httpx.__version__}"],
        }
        self.kinds: Counter[str] = Counter()
        self.size = 0
        self.probe: Any = None
        self.number = self.index = 0
        self.rng = random.Random()
        self.requests: list[Any] = []
        self.responses: list[dict[str, Any]] = []

    def begin(self, probe: Any, number: int) -> None:
        """The next test to be asked: its replies are seeded by its name."""
        self.probe, self.number, self.index = probe, number, -1
        self.rng = random.Random(probe.name)

    def records(self, *args: Any, **kwargs: Any) -> bool:
        return False

    def player(self) -> Callable[[str, str, str], tuple[int, bytes, Any]]:
        return self.play

    def play(self, method: str, path: str, content: str) -> tuple[int, bytes, Any]:
        from vcr.request import Request

        from pytest_cardprobe.wire.shapes import check_reply

        probe = self.probe
        tool = bool(json.loads(content).get("tools"))
        if not (tool and probe.channel == "retry"):
            self.index += 1  # a new sample; the retry's tool request belongs to its prose one
        kind = reply_kind(probe, self.index, tool)
        self.kinds[kind] += 1
        seconds = 40 * self.index + (20 if tool and probe.channel == "retry" else 0)
        when = self.start + dt.timedelta(minutes=self.number, seconds=seconds)
        text = ollama_reply(probe, kind, self.rng, when)
        problem, parsed = check_reply("ollama", False, text)
        if problem:
            raise SystemExit(f"{probe.name}: a synthetic {kind} reply is refused: {problem}")
        self.requests.append(Request(method, SERVER + path, content, dict(self.headers)))
        date = when.strftime("%a, %d %b %Y %H:%M:%S GMT")
        sent = {"content-type": ["application/json; charset=utf-8"], "date": [date]}
        self.responses.append({"status": OK, "headers": sent, "body": {"string": text}})
        return 200, text.encode("utf-8"), parsed

    @contextlib.contextmanager
    def open(self, path: Path, *, fingerprint: Any, rerecord_hint: str) -> Iterator[Any]:
        from pytest_cardprobe.files import write_atomically
        from pytest_cardprobe.wire.cassettes import format as cassettes

        self.requests, self.responses = [], []
        yield cassettes.Recording(path=path, live=False)
        meta = {"format": cassettes.FORMAT, "fingerprint": fingerprint()}
        recorded = {"requests": self.requests, "responses": self.responses}
        text = cassettes.serialize_cassette(
            {**recorded, "metadata": {cassettes.METADATA_KEY: meta}}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
        self.size += len(text.encode("utf-8"))


def four_arms(cases: Path) -> None:
    """The matrix of the earlier figures in BENCHMARKS.md (``--matrix four``): the card
    suite's original four arms (prose and tool, cold and history), without the later opt-in
    ones and without the tool-call suite, so 25 cases x 4 arms x ``--models`` models."""
    import yaml

    (cases / "tools.yaml").unlink(missing_ok=True)
    suite = yaml.safe_load((cases / "cards.yaml").read_text())
    suite.update(channels=["prose", "tool"], conditions=["cold", "history"])
    suite.pop("seed_turn", None)  # only the seeded condition reads it; older code refuses it
    (cases / "cards.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))


def card_suite_only(cases: Path) -> None:
    """The whole matrix (default): every arm the shipped card suite declares, as shipped
    (prose cold/history/seeded/schema, tool cold/history, retry cold/history), without the
    tool-call suite."""
    (cases / "tools.yaml").unlink(missing_ok=True)


def probes_and_runtime(
    project: Path, models: list[str], backend: Any = None
) -> tuple[list[Any], Any]:
    """The matrix as the plugin expands it, and a runtime over the project (replay unless
    ``backend`` is given)."""
    from pytest_cardprobe.run.runtime import Runtime
    from pytest_cardprobe.run.settings import Settings
    from pytest_cardprobe.suite.loader import load_suite
    from pytest_cardprobe.suite.matrix import expand
    from pytest_cardprobe.wire.cassettes.replay import Replay

    suites = [load_suite(p) for p in sorted((project / "cases").glob("*.yaml"))]
    probes = [p for suite in suites for p in expand(suite, models)]
    settings = Settings(models=models, servers=[SERVER], cassette_dir=project / "cassettes")
    return probes, Runtime(settings, backend or Replay())


def text_judge(probe: Any) -> Callable[[str], Any]:
    """The card judge bound to one probe, as the plugin hands it to ``Runtime.run``."""
    from pytest_cardprobe.judge.registry import card_judge

    return lambda text: card_judge(text, probe.case, probe.suite)


def write_cassettes(project: Path, models: list[str], samples: int) -> dict[str, Any]:
    """One cassette per test, asked by ``Runtime.run`` through :class:`Synthetic`."""
    synthetic = Synthetic(dt.datetime(2026, 11, 29, 12))
    probes, runtime = probes_and_runtime(project, models, synthetic)
    for number, probe in enumerate(probes):
        synthetic.begin(probe, number)
        result = runtime.run(probe, samples, probe.name, text_judge(probe))
        if result.status not in ("passed", "failed"):
            raise SystemExit(f"{probe.name}: asking it gave {result.status}: {result.message}")
    arms = Counter(f"{p.channel}-{p.condition}" for p in probes)
    kinds = ", ".join(f"{k} {v}" for k, v in synthetic.kinds.most_common())
    return {
        "tests": len(probes),
        "arms": len(arms),
        "cassette_bytes": synthetic.size,
        "source": f"replies by kind: {kinds}",
    }


#: The model the shipped cassettes were recorded with (``--cassettes shipped`` renames it).
SHIPPED_MODEL = "smollm2:135m"


def _renamed(text: str, model: str, where: str) -> str:
    """A recorded body with its ``"model"`` (exactly one, as every shipped body has) renamed."""
    old = f'"model":{json.dumps(SHIPPED_MODEL)}'
    if text.count(old) != 1:
        raise SystemExit(f"{where}: expected one {old} in a recorded body")
    return text.replace(old, f'"model":{json.dumps(model)}')


def finished(response: dict[str, Any]) -> bool:
    """Whether a recorded reply is a finished turn: a 2xx whose last line is not
    ``done: false`` (a cut reply, a failed attempt before a retry, is not)."""
    if not 200 <= response["status"]["code"] < 300:
        return False
    lines = response["body"]["string"].strip().splitlines()
    try:
        return json.loads(lines[-1]).get("done") is not False
    except (ValueError, IndexError, AttributeError):
        return True  # an OpenAI-compatible reply or stream: no `done` to read


def copy_shipped(project: Path, models: list[str]) -> dict[str, Any]:
    """Every shipped cassette (both suites), one copy per model under ``project/cassettes``,
    with the model's name changed where a recording has it and nothing else: the same JSON
    text. The matrix of ``project/cases`` must be those cassettes, no test more or less."""
    from pytest_cardprobe.wire.cassettes.paths import path_part

    shipped = REPO / "cassettes"
    files = sorted(shipped.rglob("*.yaml"))
    size = failed = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        suite, folder = path.relative_to(shipped).parts[:2]
        if folder != path_part(SHIPPED_MODEL):
            raise SystemExit(f"{path}: not a cassette of {SHIPPED_MODEL}")
        failed += sum(not finished(i["response"]) for i in data["interactions"])
        for model in models:
            copy = json.loads(json.dumps(data))
            for i in copy["interactions"]:
                i["request"]["body"] = _renamed(i["request"]["body"], model, str(path))
                body = i["response"]["body"]
                body["string"] = _renamed(body["string"], model, str(path))
            meta = copy["metadata"]["cardprobe"]
            meta["fingerprint"]["model"] = meta["model"]["name"] = model
            text = json.dumps(copy, indent=2, ensure_ascii=False) + "\n"
            if SHIPPED_MODEL in text:
                raise SystemExit(f"{path}: {SHIPPED_MODEL} is named where it is not renamed")
            target = project / "cassettes" / suite / path_part(model) / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            size += len(text.encode("utf-8"))
    probes, _ = probes_and_runtime(project, models)
    arms = Counter(f"{p.suite.name}-{p.channel}-{p.condition}" for p in probes)
    if len(probes) != len(files) * len(models):
        raise SystemExit(
            f"the matrix has {len(probes)} tests, the shipped cassettes times the models "
            f"{len(files)} x {len(models)}: a case without a recording or the other way round"
        )
    return {
        "tests": len(probes),
        "arms": len(arms),
        "cassette_bytes": size,
        "source": (
            f"the {len(files)} shipped cassettes of {SHIPPED_MODEL} copied for each model; "
            f"{failed} recorded failed attempt(s) before a retry that succeeded, in each copy"
        ),
    }


def write_bare(path: Path, tests: int, outcomes: dict[str, int]) -> None:
    """``range(tests)`` trivial tests with ``outcomes``: as many fail, then xfail, as given."""
    failed, xfailed = outcomes.get("failed", 0), outcomes.get("xfailed", 0)
    name = path.stem
    path.write_text(
        f'import pytest\n\n\n@pytest.mark.parametrize("i", range({tests}))\n'
        f"def {name}(i):\n    if i < {failed}:\n"
        '        pytest.fail("sample 1/2 FAIL [content] prose (finish: stop)", pytrace=False)\n'
        f'    if i < {failed + xfailed}:\n        pytest.xfail("known: prose (baseline: prose)")\n'
    )


def counts(output: str) -> dict[str, int]:
    """``{'failed': 712, 'passed': 788}`` from pytest's last summary line; for
    ``--collect-only``, ``{'collected': 3000}`` (what is selected)."""
    lines = [ln for ln in output.splitlines() if re.search(r"\d+ (passed|failed|xfailed)", ln)]
    if not lines:
        found = re.findall(r"^(\d+)(?:/\d+)? tests? collected", output, re.MULTILINE)
        return {"collected": int(found[-1])} if found else {}
    found = re.findall(r"(\d+) (passed|failed|error|skipped|xfailed|xpassed)", lines[-1])
    return {what: int(n) for n, what in found}


def timed(which: str, root: Path, env: dict[str, str], tests: int) -> dict[str, Any]:
    """One pytest run: wall, CPU (user+sys), peak RSS, load average; stops on a bad run."""
    folder, args, _ = TARGETS[which]
    stats = root / "time.txt"
    cmd = ["/usr/bin/time", "-v", "-o", str(stats), sys.executable, *PYTEST, *args]
    load, before, start = os.getloadavg()[0], os.times(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=root / folder, env=env, capture_output=True, text=True)
    wall, after = time.perf_counter() - start, os.times()
    out = proc.stdout + proc.stderr
    got = counts(out)
    if sum(got.values()) != tests or "error" in got or any(sign in out for sign in BAD_SIGNS):
        tail = "\n".join(out.splitlines()[-20:])
        raise SystemExit(f"{which} run is not clean (exit {proc.returncode}, {got}):\n{tail}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stats.read_text())
    return {
        "which": which,
        "wall": wall,
        "cpu": sum(after[i] - before[i] for i in (2, 3)),  # the children's user + system
        "rss": int(rss.group(1)) / 1024 if rss else 0.0,
        "load": (load, os.getloadavg()[0]),
        "counts": got,
        "exit": proc.returncode,
    }


def cpu_ms(step: Callable[[Any], object], items: list[Any], per_test: int = 1) -> float:
    """CPU ms of ``step`` per item, times ``per_test``; best of three passes."""
    times = []
    for _ in range(3):
        start = time.process_time()
        for item in items:
            step(item)
        times.append(time.process_time() - start)
    return 1000 * min(times) / len(items) * per_test


def per_test_costs(project: Path, models: list[str], count: int) -> dict[str, float]:
    """CPU ms per test of ``Runtime.run`` and of its stages, in-process, on ``count`` tests
    spread evenly over the matrix (every arm, every model)."""
    from pytest_cardprobe.judge.registry import card_judge
    from pytest_cardprobe.judge.routing import answer_of
    from pytest_cardprobe.suite.request import build_request
    from pytest_cardprobe.wire.body import json_body
    from pytest_cardprobe.wire.cassettes.fingerprint import fingerprint
    from pytest_cardprobe.wire.cassettes.reading import read_cassette

    probes, runtime = probes_and_runtime(project, models)
    probes = [p for p in probes if not p.suite.is_call_suite]  # the stages of a card test
    step = max(1, len(probes) // count)
    probes, base = probes[::step][:count], runtime.settings.base_options()

    def replay(probe: Any, chats: int = 0) -> list[tuple[Any, Any, Any]]:
        # The first request of each sample (the retry channel's is the prose one).
        request = build_request(probe, base)
        path = runtime.cassette_for(probe)
        # As Runtime.run does: the fingerprint only if a request matches nothing.
        prints = lambda: fingerprint(request)  # noqa: E731
        with runtime.backend.open(path, fingerprint=prints, rerecord_hint="-"):
            return [(probe, request, runtime.client.chat(request)) for _ in range(chats)]

    def judge(item: tuple[Any, Any, Any]) -> None:
        probe, request, reply = item
        names = request.tool_names
        answer = answer_of(reply, "tool" if names else "prose", names[0] if names else None)
        if not answer.refused:
            card_judge(answer.text, probe.case, probe.suite)

    def run(p: Any) -> object:
        return runtime.run(p, 2, p.name, text_judge(p))

    def body(p: Any) -> str:
        return json_body(runtime.client.payload(build_request(p, base))[1])

    def read(p: Any) -> object:
        return read_cassette(runtime.cassette_for(p))

    def prints(p: Any) -> object:
        return fingerprint(build_request(p, base))

    stages: list[tuple[str, Callable[[Any], object], list[Any], int]] = [
        ("build_request + the request's JSON", body, probes, 1),
        ("read_cassette (read the file, parse the JSON, check it)", read, probes, 1),
        ("build_request + read_cassette + `Replay.open` enter and exit", replay, probes, 1),
        ("the row above + 2 × `ChatClient.chat` (match, parse)", lambda p: replay(p, 2), probes, 1),
        ("for comparison: the request's fingerprint (not computed on a match)", prints, probes, 1),
        ("2 × (`answer_of` + card judge)", judge, [r for p in probes for r in replay(p, 2)], 2),
        ("**`Runtime.run` as a whole** (with the retry channel's second requests)", run, probes, 1),
    ]
    return {label: cpu_ms(step, items, n) for label, step, items, n in stages}


def bench_env(root: Path) -> dict[str, str]:
    """The environment every timed or counted run gets: this checkout's package first, a
    bytecode cache of its own under ``root``, and none of the variables that would change
    what pytest loads or whether bytecode is cached."""
    skip = ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "CARDPROBE_FLOOR")
    skip += ("CARDPROBE_FLOOR_FILE", "CARDPROBE_INDEXED", "CARDPROBE_INDEXED_FILE")
    env = {k: v for k, v in os.environ.items() if k not in skip}
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def machine(before: str) -> list[tuple[str, str]]:
    """Where the numbers come from, with the load average before and after."""
    import pytest
    import vcr
    import yaml

    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), "")
    versions = (
        f"Python {platform.python_version()}, pytest {pytest.__version__}, "
        f"vcrpy {vcr.__version__}, PyYAML {yaml.__version__} (libyaml {yaml.__with_libyaml__})"
    )
    return [
        ("date", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("machine", f"{os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}"),
        ("versions", versions),
        ("`uptime` before", before),
        ("`uptime` after", uptime()),
    ]


def uptime() -> str:
    """The ``uptime`` line: load averages over the last 1, 5 and 15 minutes."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def table(head: str, rows: list[str]) -> list[str]:
    """A Markdown table: header, rule (first column left, the others right), rows."""
    return ["", head, "|---|" + "---:|" * (head.count("|") - 2), *rows]


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """``min / median / max`` of ``values``."""
    ordered = sorted(values)
    return " / ".join(fmt.format(v) for v in (ordered[0], statistics.median(ordered), ordered[-1]))


def report(info: dict[str, Any], runs: list[dict[str, Any]], costs: dict[str, float]) -> str:
    """Markdown: machine, every run, medians and spread, ratios round by round, stage costs."""
    out = [f"Command: `{' '.join(['python bench/replay.py', *info['argv']])}`"]
    out += table("| | |", [f"| {k} | {v} |" for k, v in machine(info["uptime"])])
    size = info["cassette_bytes"] / 1e6
    out += [
        "",
        f"{info['tests']:,} tests ({info['arms']} arms), {size:.1f} MB of cassettes; "
        f"{info['source']}.",
    ]
    for which in ("replay", "first"):
        if which in info["outcome"]:
            out.append(f"Outcome of `{which}`: {info['outcome'][which]}.")
    names = [w for w in TARGETS if any(r["which"] == w for r in runs)]
    med: dict[str, dict[str, float]] = {}
    rows = []
    for which in names:
        mine = [r for r in runs if r["which"] == which]
        walls, loads = [r["wall"] for r in mine], [x for r in mine for x in r["load"]]
        m = med[which] = {k: statistics.median(r[k] for r in mine) for k in ("wall", "cpu", "rss")}
        cpus = spread([r["cpu"] for r in mine])
        rows.append(
            f"| {which} | {TARGETS[which][2]} | {spread(walls)} | {cpus} | {m['rss']:.0f} "
            f"| {min(loads):.1f}–{max(loads):.1f} |"
        )
    out += table(
        "| run | what | wall (s) min / median / max | CPU (s) min / median / max "
        "| peak RSS (MB) | load |",
        rows,
    )
    rounds = sorted({r["round"] for r in runs})
    by_round = [{r["which"]: r for r in runs if r["round"] == n} for n in rounds]
    rows = []
    for top, base in RATIOS:
        if top not in med or base not in med:
            continue
        walls = [r[top]["wall"] / r[base]["wall"] for r in by_round]
        cpus = [r[top]["cpu"] / r[base]["cpu"] for r in by_round]
        a, b = med[top], med[base]
        rows.append(
            f"| {top} / {base} | **{a['wall'] / b['wall']:.2f}×** | {spread(walls)} "
            f"| **{a['cpu'] / b['cpu']:.2f}×** | {spread(cpus)} | {a['rss'] / b['rss']:.2f}× |"
        )
    out += table(
        "| ratio | wall, of medians | wall, round by round min / median / max "
        "| CPU, of medians | CPU, round by round min / median / max | peak RSS |",
        rows,
    )
    if costs:
        rows = [f"| {k} | {v:.2f} |" for k, v in costs.items()]
        for which in names:
            per_test = 1000 * med[which]["cpu"] / info["tests"]
            rows.append(f"| for scale: a whole `{which}` run, per test | {per_test:.2f} |")
        out += table(f"| stage ({info['per_test']} tests, best of 3) | CPU ms per test |", rows)
    return "\n".join(out) + "\n"


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than ``low``."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"wants a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"wants a number of at least {low}, got {value}")
        return value

    return number


def main(argv: Sequence[str] | None = None) -> int:
    """Build, time interleaved, print the Markdown."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--models", type=at_least(1), default=15, help="models (default 15)")
    add(
        "--cassettes",
        choices=("synthetic", "shipped"),
        default="synthetic",
        help="synthetic: the card suite's cassettes written with synthetic replies (default); "
        "shipped: the repository's recorded cassettes of both suites, copied for each model",
    )
    add(
        "--samples",
        type=at_least(1),
        help="samples per test of the synthetic cassettes (default 2)",
    )
    add("--repeat", type=at_least(0), default=3, help="timed rounds (default 3)")
    add(
        "--per-test",
        type=at_least(0),
        default=300,
        metavar="N",
        help="tests timed in-process (0: skip)",
    )
    add(
        "--matrix",
        choices=("all", "four"),
        default="all",
        help="all: every arm the card suite ships (default); four: its original four arms, "
        "the matrix of the earlier figures",
    )
    add(
        "--only",
        choices=("baseline", "first"),
        help="time replay only with a baseline (`replay`) or only without one (`first`)",
    )
    add("--collect", action="store_true", help="also time `pytest cases --collect-only`")
    add(
        "--against",
        type=Path,
        metavar="SRC",
        help="also time the replays with the package in SRC (another checkout's src/, e.g. "
        "the code before a change), interleaved with the rest in every round",
    )
    add(
        "--floor",
        action="store_true",
        help="also time the replays with every test's result given (the plugin's replay work "
        "left out): what pytest alone spends on the same items and outcomes",
    )
    add(
        "--indexed",
        action="store_true",
        help="also time `first` and `bare-fail` with pytest's failure summary finding "
        "teardown reports through an index instead of a scan per failure",
    )
    add("--keep", type=Path, metavar="DIR", help="build in DIR and keep it")
    args = parser.parse_args(argv)
    if args.indexed and args.only == "baseline":
        parser.error("--indexed times runs without a baseline; it cannot go with --only baseline")
    if args.cassettes == "shipped":
        for given, name in ((args.samples, "--samples"), (args.matrix != "all", "--matrix")):
            if given:
                parser.error(f"{name} shapes synthetic cassettes; the shipped ones are as recorded")
    samples = args.samples or 2
    sys.path.insert(0, str(REPO / "src"))  # a clean checkout runs without installing
    root = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="cardprobe-bench-"))
    tags = ("7b", "1.5b", "latest", "30b-a3b-q4_K_M", "135m")
    models = [f"bench-model-{i:02d}:{tags[i % 5]}" for i in range(1, args.models + 1)]
    env = bench_env(root)
    envs = {}
    if args.against:
        other = {**env, "PYTHONPATH": str(args.against.resolve())}
        envs = {"replay-against": other, "first-against": other}
    if args.floor:
        (root / "floor").mkdir(parents=True, exist_ok=True)
        (root / "floor" / "cardprobe_floor.py").write_text(FLOOR_PLUGIN)
        for which in ("replay", "first"):
            path = os.pathsep.join([str(root / "floor"), env["PYTHONPATH"]])
            kept = str(root / "floor" / f"{which}.pickle")
            floor = {"PYTHONPATH": path, "CARDPROBE_FLOOR_FILE": kept, "CARDPROBE_FLOOR": "serve"}
            envs[f"{which}-floor"] = {**env, **floor}
    if args.indexed:
        (root / "indexed").mkdir(parents=True, exist_ok=True)
        (root / "indexed" / "cardprobe_indexed.py").write_text(INDEXED_PLUGIN)
        path = os.pathsep.join([str(root / "indexed"), env["PYTHONPATH"]])
        for which in ("first-indexed", "bare-fail-indexed"):
            envs[which] = {**env, "PYTHONPATH": path}
    info: dict[str, Any] = {"argv": sys.argv[1:] if argv is None else list(argv), "outcome": {}}
    info["uptime"] = uptime()
    replays = {"baseline": ["replay"], "first": ["first"], None: ["replay", "first"]}[args.only]
    try:
        for folder in ("replay", "first", "bare"):
            shutil.rmtree(root / folder, ignore_errors=True)
            (root / folder).mkdir(parents=True)
        cases = root / "replay" / "cases"
        shutil.copytree(REPO / "cases", cases)
        if args.cassettes == "synthetic":
            (four_arms if args.matrix == "four" else card_suite_only)(cases)
        ini = "[pytest]\ncardprobe_models =" + "".join(f"\n    {m}" for m in models) + "\n"
        (root / "replay" / "pytest.ini").write_text(ini)
        (root / "bare" / "pytest.ini").write_text("[pytest]\n")
        if args.cassettes == "shipped":
            info.update(copy_shipped(root / "replay", models))
        else:
            info.update(write_cassettes(root / "replay", models, samples))
        info["per_test"] = args.per_test
        # The same project without its baseline: the cassettes hard-linked, not copied.
        shutil.rmtree(root / "first")
        shutil.copytree(root / "replay", root / "first", copy_function=os.link)
        cmd = [sys.executable, *PYTEST, "cases", "--cardprobe-update-baseline"]
        subprocess.run(cmd, cwd=root / "replay", env=env, capture_output=True, check=True)
        tests = info["tests"]
        bare = {"replay": "bare-xfail", "first": "bare-fail"}
        names = ["bare"]
        for which in replays:  # warm-ups, which also learn each replay's outcomes
            warm = timed(which, root, env, tests)
            got = sorted(warm["counts"].items())
            info["outcome"][which] = ", ".join(f"{n} {k}" for k, n in got)
            info["counts"] = {**info.get("counts", {}), which: warm["counts"]}
            write_bare(root / "bare" / TARGETS[bare[which]][1][0], tests, warm["counts"])
            names += [which, bare[which]]
        names += [f"{w}-against" for w in replays if args.against]
        names += [f"{w}-floor" for w in replays if args.floor]
        names += ["first-indexed", "bare-fail-indexed"] if args.indexed else []
        names = [n for n in TARGETS if n in names] + (["collect"] if args.collect else [])
        write_bare(root / "bare" / "test_bare.py", tests, {})
        for which in names:  # warm-ups: the bytecode cache of their modules
            if which not in replays:
                if which.endswith("-floor"):  # first keep each test's result, then serve it
                    timed(which, root, {**envs[which], "CARDPROBE_FLOOR": "record"}, tests)
                warm = timed(which, root, envs.get(which, env), tests)
                mine = SAME_OUTCOMES.get(which)
                if mine and warm["counts"] != info["counts"][mine]:  # same verdicts
                    raise SystemExit(f"{which}: other outcomes than {mine}: {warm['counts']}")
        runs = []
        for round_ in range(args.repeat):
            for which in names:
                run = timed(which, root, envs.get(which, env), tests)
                runs.append({**run, "round": round_})
                shown = f"{run['wall']:.2f}s {run['rss']:.0f} MB, load {run['load'][1]:.2f}"
                print(f"round {round_ + 1}: {which} {shown}", file=sys.stderr)
        costs = per_test_costs(root / "replay", models, args.per_test) if args.per_test else {}
        print(report(info, runs, costs), end="")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
