"""The Dockerfile, compose.yaml and the systemd unit, read with their parsers (images cannot be
built or pulled on these machines): non-root, health-checked, no secrets or model baked in,
and only settings the program knows."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from harness.mcp_server.serve_config import ServeFlags, resolve_serve_config
from harness.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
KNOWN = {f"HARNESS_{name.upper()}" for name in Settings.model_fields}
#: Names that carry a secret themselves (a *_FILE or *_PATH naming where it lives is fine).
SECRET_NAME = re.compile(r"(KEY|TOKEN|PASSWORD|SECRET|DATABASE(_READ)?_URL)$", re.IGNORECASE)


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    return DockerfileParser(path=str(ROOT / "Dockerfile"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def instructions(parser: DockerfileParser, name: str) -> list[str]:
    return [i["value"] for i in parser.structure if i["instruction"] == name]


def final_stage(parser: DockerfileParser) -> list[dict[str, Any]]:
    starts = [n for n, i in enumerate(parser.structure) if i["instruction"] == "FROM"]
    return list(parser.structure[starts[-1] :])


def test_image_is_multi_stage_and_runs_as_a_non_root_user(dockerfile: DockerfileParser) -> None:
    assert dockerfile.is_multistage and len(instructions(dockerfile, "FROM")) >= 2
    users = [i["value"].strip() for i in final_stage(dockerfile) if i["instruction"] == "USER"]
    assert users, "the final stage sets no USER (it would run as root)"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_image_health_check_asks_healthz_on_the_served_port(
    dockerfile: DockerfileParser, monkeypatch: pytest.MonkeyPatch
) -> None:
    (check,) = instructions(dockerfile, "HEALTHCHECK")
    assert "CMD" in check and "/healthz" in check
    # The image's own environment resolves to the address the health check and EXPOSE use.
    for name, value in dockerfile.envs.items():
        if name.startswith("HARNESS_"):
            monkeypatch.setenv(name, value)
    config = resolve_serve_config(Settings.from_env(), ServeFlags())
    assert config is not None and config.bind_from == "HARNESS_MCP_HTTP"
    assert instructions(dockerfile, "EXPOSE") == [str(config.port)]
    assert "HARNESS_MCP_HTTP" in check  # the check reads the port from the same variable
    assert shlex.split(instructions(dockerfile, "ENTRYPOINT")[0].strip("[]").replace(",", " "))


def test_no_secret_or_model_goes_into_a_layer(dockerfile: DockerfileParser) -> None:
    assert instructions(dockerfile, "ADD") == [], "use COPY of named sources, never ADD"
    for copy in instructions(dockerfile, "COPY"):
        sources = [p for p in copy.split()[:-1] if not p.startswith("--")]
        for source in sources:
            assert not re.search(r"secret|\.env|\.key|\.pem|model|onnx", source, re.I), copy
    env_names = [
        name
        for i in dockerfile.structure
        if i["instruction"] in ("ENV", "ARG")
        for name in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", i["value"])
    ]
    assert "HARNESS_EMBED_MODEL_PATH" in env_names
    assert not [n for n in env_names if SECRET_NAME.search(n)], env_names
    assert {n for n in env_names if n.startswith("HARNESS_")} <= KNOWN
    # The build context holds the package sources only (keys, models and .env stay out).
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*") :][0] == "*" and "!harness/" in ignore
    assert not any(re.search(r"secret|model|\.env", line) for line in ignore if line[0] == "!")


def test_compose_runs_the_server_on_pgvector_with_volumes_for_model_and_data(
    compose: dict[str, Any], dockerfile: DockerfileParser
) -> None:
    services = compose["services"]
    (db_name,) = [
        n for n, s in services.items() if str(s.get("image", "")).startswith("pgvector/pgvector")
    ]
    server = next(s for s in services.values() if s.get("build"))
    env = server["environment"]
    assert f"@{db_name}:" in env["HARNESS_DATABASE_URL"]
    assert db_name in server["depends_on"]
    targets = {v["target"]: v for v in server["volumes"]}
    model = targets[env["HARNESS_EMBED_MODEL_PATH"]]
    assert model["type"] == "bind" and model["read_only"] is True
    data = targets[dockerfile.envs["HARNESS_HOME"]]
    assert data["type"] == "volume" and data["source"] in compose["volumes"]
    assert env["HARNESS_MCP_INGEST_KEY_FILE"].startswith("/run/secrets/")


def test_compose_sets_only_known_settings_and_no_literal_secret(compose: dict[str, Any]) -> None:
    for service in compose["services"].values():
        env = service.get("environment", {})
        harness = {name for name in env if name.startswith("HARNESS_")}
        assert harness <= KNOWN, harness - KNOWN
        for name, value in env.items():
            if SECRET_NAME.search(name) or "PASSWORD" in name:
                # Interpolated at run time from .env, never written here.
                assert "${" in str(value), name
            assert "hm_" not in str(value)


def test_systemd_unit_restarts_and_stops_with_sigterm() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(ROOT / "docs" / "harness-memory.service")
    service = unit["Service"]
    assert service["Restart"] in ("on-failure", "always")
    assert service["KillSignal"] == "SIGTERM"
    # uvicorn's 10 s grace and the 15 s watchdog both fit before systemd's SIGKILL.
    assert int(service["TimeoutStopSec"].rstrip("s")) > 15
    assert "143" in service["SuccessExitStatus"].split()
    assert service["ExecStart"].split()[1:] == ["mcp"]
    assert service["User"] not in ("root", "0")
    assert not any(
        SECRET_NAME.search(line.split("=")[0]) for line in service.get("Environment", "").split()
    )
    assert (
        set(re.findall(r"HARNESS_[A-Z_]+", (ROOT / "docs" / "harness-memory.service").read_text()))
        <= KNOWN
    )
