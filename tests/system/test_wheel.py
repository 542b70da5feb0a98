"""The built wheel, installed in a fresh virtual environment and run from outside the checkout
(issue 19, point 7): only ``harness`` and ``product_adapter`` at the top level, the Alembic
environment inside ``harness``, and ``init``, ``demo``, ``status`` working from it.

Dependencies come from this environment's site-packages through a plain path line (its
editable-install hook is not processed there), so nothing is downloaded and the checkout is not
on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("harness_memory_pg-*.whl")
    return built


def test_wheel_has_no_generic_top_level_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"harness", "product_adapter"}
    assert "harness/_migrations/env.py" in names
    assert "harness/_migrations/script.py.mako" in names
    assert any(n.startswith("harness/_migrations/versions/0001") for n in names)
    # the Apache License text travels with the distribution (pyproject says Apache-2.0)
    licence = [n for n in names if ".dist-info/" in n and n.endswith("/LICENSE")]
    assert licence and b"Apache License" in zipfile.ZipFile(wheel).read(licence[0])


def test_installed_wheel_runs_init_demo_status_outside_the_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(fresh_site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HARNESS_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    env["HARNESS_HOME"] = str(tmp_path / "home")

    probe = subprocess.run(
        [str(python), "-c", "import harness.memory.store.migrate as m; print(m.MIGRATIONS_DIR)"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert probe == str(Path(fresh_site) / "harness" / "_migrations")
    assert not Path(fresh_site, "migrations").exists()

    cli = env_dir / "bin" / "harness-memory"
    outputs = {}
    for command in ("init", "demo", "status"):
        run = subprocess.run(
            [str(cli), command], cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, (command, run.stdout, run.stderr)
        outputs[command] = run.stdout
    from harness.memory.store.migrate import head_revision

    assert f"schema revision {head_revision()}" in outputs["init"]
    assert f"schema revision {head_revision()}" in outputs["status"]
    assert "lesson" in outputs["demo"].lower()
