"""The embedded server's life cycle: a crashed postmaster is started again in the same process,
and PIDs of dead processes never keep a server alive."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.store.embedded import (
    embedded_url,
    live_handle_pids,
    postmaster_pid,
    release_embedded,
)
from harness.settings import Settings


@pytest.fixture
def home() -> Iterator[Path]:
    # Outside pytest's temp root (see tests/system/test_operability.py's fixture of the same name).
    folder = Path(tempfile.mkdtemp(prefix="harness-embedded-"))
    try:
        yield folder / "home"
    finally:
        release_embedded(folder / "home")
        pid = postmaster_pid(folder / "home")
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def wait_for(check: object, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(check())  # type: ignore[operator]


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_connect_after_kill_9_of_the_postmaster_starts_it_again(home: Path) -> None:
    settings = Settings.from_env(home=home)
    first = MemoryStore.connect(settings=settings, embedder=None)
    first.close()
    crashed = postmaster_pid(home)
    assert crashed is not None
    os.kill(crashed, signal.SIGKILL)
    assert wait_for(lambda: postmaster_pid(home) is None)

    store = MemoryStore.connect(settings=settings, embedder=None)
    try:
        m = store.write(
            MemoryCandidate(
                tenant="t", scope="user", scope_id="u", kind="fact", content="back again"
            )
        )
        assert store.get(m.id, tenant="t").content == "back again"  # type: ignore[union-attr]
    finally:
        store.close()
    restarted = postmaster_pid(home)
    assert restarted is not None and restarted != crashed
    assert os.getpid() in live_handle_pids(home)


def test_stale_handles_are_dropped_so_the_last_live_user_stops_the_server(home: Path) -> None:
    embedded_url(home)
    handles = home / "pgdata" / ".handle_pids.json"
    gone = dead_pid()
    handles.write_text(json.dumps([gone, *json.loads(handles.read_text())]))

    embedded_url(home)  # a later command in the same home
    assert gone not in json.loads(handles.read_text())
    assert live_handle_pids(home) == [os.getpid()]

    assert release_embedded(home) is True
    assert wait_for(lambda: postmaster_pid(home) is None), "the last live user must stop it"
    assert release_embedded(home) is False  # idempotent


def test_release_keeps_the_server_for_other_live_users(home: Path) -> None:
    embedded_url(home)
    handles = home / "pgdata" / ".handle_pids.json"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        handles.write_text(json.dumps([*json.loads(handles.read_text()), other.pid]))
        release_embedded(home)
        assert postmaster_pid(home) is not None
        # Attaching again after a release registers this process once more.
        embedded_url(home)
        assert os.getpid() in live_handle_pids(home)
    finally:
        other.kill()
        other.wait()


ZOMBIE_SCRIPT = """
import ctypes, os, signal, sys, time
from pathlib import Path
import psutil
from harness.memory import MemoryCandidate, MemoryStore
from harness.memory.store.embedded import postmaster_pid, release_embedded
from harness.settings import Settings

# Adopt orphans and never reap them: a container whose PID 1 is no init process.
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
home = Path(sys.argv[1])
settings = Settings.from_env(home=home)
MemoryStore.connect(settings=settings, embedder=None).close()
pid = postmaster_pid(home)
os.kill(pid, signal.SIGKILL)
deadline = time.time() + 30
while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
    time.sleep(0.1)
print("zombie", psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
store = MemoryStore.connect(settings=settings, embedder=None)
m = store.write(MemoryCandidate(tenant="t", scope="user", scope_id="u", kind="fact", content="ok"))
print("read", store.get(m.id, tenant="t").content)
store.close()
release_embedded(home)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl subreaper is Linux-only")
def test_restart_when_the_killed_postmaster_stays_a_zombie(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ZOMBIE_SCRIPT, str(home)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "zombie True" in done.stdout and "read ok" in done.stdout
    assert wait_for(lambda: postmaster_pid(home) is None)


def test_a_connected_store_survives_a_restart_of_the_embedded_server(home: Path) -> None:
    """Pooled connections to a server that went away are replaced at the next checkout (no
    ping per checkout): the store keeps working once the server is back."""
    settings = Settings.from_env(home=home)
    store = MemoryStore.connect(settings=settings, embedder=None)
    try:
        before = store.write(
            MemoryCandidate(tenant="t", scope="user", scope_id="u", kind="fact", content="one")
        )
        crashed = postmaster_pid(home)
        assert crashed is not None
        os.kill(crashed, signal.SIGKILL)
        assert wait_for(lambda: postmaster_pid(home) is None)
        embedded_url(home)  # another user of the home starts it again
        assert postmaster_pid(home) not in (None, crashed)

        after = store.write(
            MemoryCandidate(tenant="t", scope="user", scope_id="u", kind="fact", content="two")
        )
        assert store.get(before.id, tenant="t") is not None
        assert store.get(after.id, tenant="t").content == "two"  # type: ignore[union-attr]
    finally:
        store.close()
