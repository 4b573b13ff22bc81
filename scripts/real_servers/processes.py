"""The processes `start` runs: run files, pids, ports, launching, waiting, stopping.

A server is ours only while the pid in its run file still runs the exact command we started
(/proc/<pid>/cmdline); `stop` never kills anything else, and never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from . import paths
from .health import healthy
from .steps import Fail, say


# --- run files -------------------------------------------------------------------------------
def read_state(kind: str) -> dict[str, object] | None:
    try:
        state = json.loads(paths.state_path(kind).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def clear_run_files(kind: str) -> None:
    for p in (paths.pid_path(kind), paths.state_path(kind)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


# --- is it still ours ------------------------------------------------------------------------
def proc_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def proc_is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def ours(state: dict[str, object]) -> bool:
    """True if the recorded pid is alive and still runs the command we started."""
    pid = int(state["pid"])  # type: ignore[call-overload]
    cmd = proc_cmdline(pid)
    return cmd is not None and cmd == state["argv"] and not proc_is_zombie(pid)


def running_state(kind: str) -> dict[str, object] | None:
    state = read_state(kind)
    if state is not None and ours(state):
        return state
    return None


# --- ports -----------------------------------------------------------------------------------
def free_ports(preferred: list[int]) -> list[int]:
    """One free 127.0.0.1 port per entry: the preferred one if it is free, else any (port 0)."""
    socks = []
    try:
        for want in preferred:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # like the servers' own listeners: a port whose old connections linger in
            # TIME_WAIT is free to listen on again
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            socks.append(s)
            try:
                s.bind(("127.0.0.1", want))
            except OSError:
                s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def last_port(kind: str) -> int:
    """The port `kind` had last time, so URLs stay the same across stop/start when possible."""
    try:
        port = int(json.loads(paths.ports_file().read_text()).get(kind, 0))
    except (OSError, ValueError, AttributeError):
        return 0
    return port if 1024 <= port <= 65535 else 0


def remember_port(kind: str, port: int) -> None:
    ports_file = paths.ports_file()
    try:
        ports = json.loads(ports_file.read_text())
    except (OSError, ValueError):
        ports = {}
    ports[kind] = port
    paths.run_dir().mkdir(parents=True, exist_ok=True)
    ports_file.write_text(json.dumps(ports) + "\n")


# --- start -----------------------------------------------------------------------------------
def wait_healthy(
    kind: str, url: str, proc: subprocess.Popen[bytes] | None, log: Path, timeout: float
) -> float:
    t0 = time.monotonic()
    last = ""
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise Fail(f"{kind}: exited with code {proc.returncode} while starting", log)
        ok, last = healthy(kind, url, timeout=2.0)
        if ok:
            return time.monotonic() - t0
        time.sleep(0.25)
    raise Fail(f"{kind}: not healthy after {timeout:.0f} s (last: {last})", log)


def launch(
    kind: str, argv: list[str], env: dict[str, str], url: str, port: int, model: str, timeout: float
) -> dict[str, object]:
    paths.run_dir().mkdir(parents=True, exist_ok=True)
    log = paths.server_log(kind)
    with log.open("w") as fh:
        fh.write(f"### {time.strftime('%Y-%m-%dT%H:%M:%S')} $ {shlex.join(argv)}\n")
        fh.flush()
        try:
            proc = subprocess.Popen(
                argv,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise Fail(f"{kind}: cannot run {argv[0]}: {exc}", log) from exc
    state: dict[str, object] = {
        "kind": kind,
        "pid": proc.pid,
        "argv": argv,
        "url": url,
        "port": port,
        "model": model,
        "log": str(log),
        "started": time.time(),
    }
    paths.state_path(kind).write_text(json.dumps(state, indent=2) + "\n")
    paths.pid_path(kind).write_text(f"{proc.pid}\n")
    try:
        took = wait_healthy(kind, url, proc, log, timeout)
    except Fail:
        terminate(kind, state, quiet=True)
        raise
    say(f"  {kind}: started pid {proc.pid} at {url}, healthy after {took:.1f} s (log {log})")
    return state


# --- stop ------------------------------------------------------------------------------------
def group_members(pgid: int) -> list[int]:
    """Pids still in the process group/session we created (e.g. Ollama's runner)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(d.name)
        # fields: state, ppid, pgrp, session; skip the leader itself and zombies
        if pid != pgid and fields[0] != "Z" and int(fields[2]) == pgid and int(fields[3]) == pgid:
            pids.append(pid)
    return pids


def terminate(
    kind: str, state: dict[str, object], quiet: bool = False, grace: float = 10.0
) -> None:
    pid = int(state["pid"])  # type: ignore[call-overload]
    if ours(state):
        os.kill(pid, signal.SIGTERM)
        t0 = time.monotonic()
        while ours(state) and time.monotonic() - t0 < grace:
            time.sleep(0.1)
        if ours(state):
            os.kill(pid, signal.SIGKILL)
            if not quiet:
                say(f"  {kind}: pid {pid} ignored SIGTERM for {grace:.0f} s, sent SIGKILL")
        # reap if it is our child (start failure path)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        # children left in the session we created (start_new_session) are ours too
        for child in group_members(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
                if not quiet:
                    say(f"  {kind}: killed leftover pid {child} of its session")
        if not quiet:
            say(f"  {kind}: stopped pid {pid}")
    elif not quiet:
        say(f"  {kind}: pid {pid} is not running our command any more; nothing to kill")
    clear_run_files(kind)
