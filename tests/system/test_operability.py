"""Operability as a user meets it, through real subprocesses of ``harness-memory``: clean
shutdown on SIGTERM, a fast single lexical-only message, the HTTP start line, one-line errors."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from harness.memory.store.embedded import live_handle_pids, postmaster_pid
from tests.support.mcp_helpers import served_port

CLI = [sys.executable, "-m", "harness.cli"]


@pytest.fixture
def model_folder() -> str:
    folder = os.environ.get("HARNESS_EMBED_MODEL_PATH", "")
    if not folder:
        pytest.fail("set HARNESS_EMBED_MODEL_PATH to the local all-MiniLM-L6-v2 ONNX folder")
    return folder


@pytest.fixture
def home() -> Iterator[Path]:
    """A private HARNESS_HOME outside pytest's temp root: concurrent pytest sessions reset that
    root to mode 0700, which the embedded server's unprivileged user (under root) cannot cross."""
    folder = Path(tempfile.mkdtemp(prefix="harness-ops-"))
    try:
        yield folder / "home"
    finally:
        for proc in postgres_of(folder / "home"):
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def silent_hub() -> Iterator[str]:
    """A hub endpoint that accepts connections and never answers (the worst case to bound)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def cli_env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "HF_"))}
    env.update(
        HARNESS_HOME=str(home),
        FASTEMBED_CACHE_PATH=str(tmp_path / "empty-fastembed-cache"),
        HF_HUB_OFFLINE="1",
        COLUMNS="80",
    )
    env.update(extra)
    return {k: v for k, v in env.items() if v != ""}


def postgres_of(home: Path) -> list[psutil.Process]:
    """Live postgres processes whose command line names this home's data folder."""
    pgdata = str((home / "pgdata").resolve())
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(pgdata in part for part in cmd):
            found.append(proc)
    return found


def wait_until(check: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return bool(check())  # type: ignore[operator]


def run_cli(args: list[str], env: dict[str, str], timeout: float = 180) -> tuple[int, str]:
    done = subprocess.run(
        [*CLI, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    return done.returncode, done.stdout + done.stderr


def first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first stdout line, or fail (killing the process) when none comes in time."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        return proc.stdout.readline()
    finally:
        timer.cancel()


# --- 1: SIGTERM releases the embedded server ---------------------------------------------------


def test_sigterm_on_http_server_logs_auth_failures_and_leaves_no_postgres(
    home: Path, tmp_path: Path
) -> None:
    # no HARNESS_EMBED_MODEL_PATH, no hub, an empty fastembed cache: lexical-only
    env = cli_env(home, tmp_path, HARNESS_MCP_INGEST_KEY="ingest-key-of-20-chars")
    proc = subprocess.Popen(
        [*CLI, "mcp", "--http", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = first_line(proc, timeout=120)
        port = served_port(line)
        # The start line: URL, token file, ingest and embedder mode, on one line.
        assert f"http://127.0.0.1:{port}/mcp" in line, line
        assert str(home / "mcp-tokens.json") in line
        assert "ingest: on" in line and "embedder: lexical-only" in line
        assert postgres_of(home), "the embedded server should be running"

        answer = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            headers={"Authorization": "Bearer hm_not-a-real-token-4711"},
            json={},
            timeout=10,
        )
        assert answer.status_code == 401
        challenge = answer.headers.get("www-authenticate", "")
        assert challenge.startswith('Bearer realm="harness-memory"')
        assert "resource_metadata" not in challenge and "does not offer OAuth" in challenge
        assert (
            httpx.get(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=10
            ).status_code
            == 404
        )

        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_until(lambda: not postgres_of(home), 15), "postgres left running after SIGTERM"
    assert live_handle_pids(home) == []
    assert "authentication failed: POST /mcp from 127.0.0.1" in err
    assert "4711" not in err and "Traceback" not in err


def test_sigterm_on_stdio_server_leaves_no_postgres(home: Path, tmp_path: Path) -> None:
    env = cli_env(home, tmp_path)  # lexical-only: no model variable, no hub, empty cache
    proc = subprocess.Popen(
        [*CLI, "mcp", "--tenant", "t", "--user", "u"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(lambda: postmaster_pid(home) is not None, 120)
        assert wait_until(lambda: proc.pid in live_handle_pids(home), 30)
        time.sleep(1.0)  # let the server reach its read loop
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_until(lambda: not postgres_of(home), 15), "postgres left running after SIGTERM"
    assert "Traceback" not in err


# --- 2: no model, no hub: lexical-only within 2 s, said once -----------------------------------


def test_lexical_decision_is_bounded_even_when_the_hub_hangs(
    home: Path, tmp_path: Path, silent_hub: str
) -> None:
    script = (
        "import time, fastembed\n"
        "from harness.memory.embedding.embedder import choose_embedder\n"
        "t = time.perf_counter()\n"
        "c = choose_embedder('sentence-transformers/all-MiniLM-L6-v2', None)\n"
        "print(c.embedder is None, round(time.perf_counter() - t, 3))\n"
    )
    env = cli_env(home, tmp_path, HF_ENDPOINT=silent_hub, HF_HUB_OFFLINE="")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    lexical, seconds = done.stdout.split()
    assert lexical == "True", done.stderr
    assert float(seconds) < 2.0
    assert "Could not download" not in done.stderr  # fastembed's retry log stays quiet


def test_status_without_model_says_lexical_once_then_the_home_remembers_its_model(
    home: Path, tmp_path: Path, silent_hub: str, model_folder: str
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o777)
    runtime.chmod(0o777)  # platformdirs warns about a non-private XDG_RUNTIME_DIR
    no_model = cli_env(
        home,
        tmp_path,
        HF_ENDPOINT=silent_hub,
        HF_HUB_OFFLINE="",
        XDG_RUNTIME_DIR=str(runtime),
    )
    code, out = run_cli(["status"], no_model)
    # status is read-only (issue 19): a fresh home has no schema until `init`
    assert code == 2 and "harness-memory init" in out, out
    code, out = run_cli(["init"], no_model)
    assert code == 0, out
    code, out = run_cli(["status"], no_model)
    assert code == 0, out
    assert out.count("no embedding model") == 1, out
    assert "HARNESS_EMBED_MODEL_PATH=<folder>" in out and "hf download" in out
    assert "lexical-only" in out
    assert "XDG_RUNTIME_DIR" not in out and "%2F" not in out and "Traceback" not in out
    assert f"data in {home / 'pgdata'}" in out

    # Once a model folder was used in this home, a shell without the variable keeps it.
    code, out = run_cli(["init"], cli_env(home, tmp_path, HARNESS_EMBED_MODEL_PATH=model_folder))
    assert code == 0, out
    code, out = run_cli(["status"], no_model)
    assert code == 0, out
    assert "hybrid" in out and "lexical-only" not in out and "no embedding model" not in out
    assert f"{Path(model_folder).resolve()} (remembered by this home" in out


# --- 3: one-line errors naming the setting -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "extra", "named"),
    [
        (["mcp", "--http", "localhost"], {}, "--http"),
        (["mcp", "--http", "127.0.0.1:99999"], {}, "--http"),
        (
            ["mcp", "--http", "127.0.0.1:8080"],
            {"HARNESS_MCP_INGEST_KEY": "short"},
            "HARNESS_MCP_INGEST_KEY",
        ),
        (["status"], {"HARNESS_POOL_SIZE": "many"}, "HARNESS_POOL_SIZE"),
    ],
)
def test_bad_setting_is_one_line_naming_it(
    home: Path, tmp_path: Path, args: list[str], extra: dict[str, str], named: str
) -> None:
    code, out = run_cli(args, cli_env(home, tmp_path, **extra), timeout=60)
    assert code == 2
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("error:") and named in lines[0]
    assert "short" not in lines[0]  # the key itself is never echoed
    assert not (home / "pgdata").exists()  # refused before any server was started


# --- 6: the demo keeps out of the user's data folder -------------------------------------------


def test_demo_without_home_uses_a_throwaway_folder(
    home: Path, tmp_path: Path, model_folder: str
) -> None:
    xdg = tmp_path / "xdg-data"
    env = cli_env(home, tmp_path, HARNESS_EMBED_MODEL_PATH=model_folder)
    del env["HARNESS_HOME"]
    env["XDG_DATA_HOME"] = str(xdg)
    code, out = run_cli(["demo"], env)
    assert code == 0, out
    assert "throwaway folder" in out and "demo OK" in out
    # The lesson is shown whole, not cut mid-word.
    lesson = (
        "A reviewer rejected an earlier answer: Start with a three-line TL;DR and list every "
        "incident id (like INC-2041) in a table with its status."
    )
    assert f"workflow lesson [active] {lesson}" in out  # what run 1 wrote
    assert "[workflow lesson | verdict | " in out and f"] {lesson}\n" in out  # run 2's context
    assert "%2F" not in out
    assert not (xdg / "harness-memory").exists()
    folder = out.split("throwaway folder ", 1)[1].split()[0]
    assert not Path(folder).exists()
    assert not postgres_of(Path(folder))


# --- 4: the benchmark smoke run keeps tracked results untouched -------------------------------


def test_bench_smoke_output_goes_to_an_ignored_folder() -> None:
    from bench.run import RESULTS, output_dir

    repo = Path(__file__).resolve().parents[2]
    smoke = output_dir(smoke=True)
    assert output_dir(smoke=False) == RESULTS and smoke != RESULTS
    for name in ("recallset.json", "smoke.json", "smoke.png"):
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", str(smoke / name)], cwd=repo, check=False
        )
        assert ignored.returncode == 0, f"{smoke / name} is not git-ignored"
    tracked = subprocess.run(
        ["git", "ls-files", str(RESULTS / "recallset.json")],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert tracked.stdout.strip(), "the full run's results stay tracked"


def test_a_swallowed_signal_still_releases_and_exits(tmp_path: Path) -> None:
    marker = tmp_path / "released"
    script = (
        "import os, signal, time\n"
        "from pathlib import Path\n"
        "from harness.shutdown import exit_on_signals\n"
        f"marker = Path({str(marker)!r})\n"
        "with exit_on_signals(last_resort=lambda: marker.write_text('yes'), grace_s=0.5):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(1)\n"
        "    except SystemExit:\n"
        "        pass  # what Python does to an exception in a weakref callback\n"
        "    time.sleep(30)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], timeout=60, check=False)
    assert done.returncode == 128 + signal.SIGTERM
    assert marker.read_text() == "yes"
    assert time.monotonic() - started < 20


def test_a_signal_inside_a_weakref_callback_is_not_lost(tmp_path: Path) -> None:
    script = (
        "import gc, os, signal, time, weakref\n"
        "from harness.shutdown import exit_on_signals\n"
        "class Held: pass\n"
        "def callback():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.3)  # the signal is handled in here, inside weakref.finalize\n"
        "with exit_on_signals(grace_s=3):\n"
        "    held = Held()\n"
        "    weakref.finalize(held, callback)\n"
        "    del held\n"
        "    gc.collect()\n"
        "    time.sleep(30)\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], timeout=60, check=False, capture_output=True, text=True
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 20  # the watchdog bounds it (3 s), not the sleep
