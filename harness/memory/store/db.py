"""Database plumbing shared by the store's modules: URLs and driver-error translation.

Driver errors become one of three classes here, and nowhere else: :class:`StoreMisconfigured`
(the configuration is wrong: a retry will not help, the message says what to change),
:class:`StoreUnavailable` (a retry may help) and :class:`StoreError` (anything else). The
server's DETAIL and HINT are kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from harness.errors import (
    HarnessError,
    InvalidInput,
    StoreError,
    StoreMisconfigured,
    StoreUnavailable,
)

__all__ = [
    "SUPPORTED_URL_FORMS",
    "Diagnosis",
    "diagnose",
    "normalize_url",
    "parse_url",
    "redact_url",
    "translate_errors",
]

URL_SETTING = "HARNESS_DATABASE_URL"
SUPPORTED_URL_FORMS = "postgresql://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql+psycopg://...)"
_DRIVERS = ("postgresql", "postgres", "postgresql+psycopg")


def _bad_url(why: str, setting: str = URL_SETTING) -> InvalidInput:
    return InvalidInput(
        f"{setting}: {why}; the supported form is {SUPPORTED_URL_FORMS}, with special "
        "characters of the user name and password percent-encoded (@ as %40, : as %3A, "
        "/ as %2F, % as %25)",
        fields=(setting,),
    )


def parse_url(url: str, *, setting: str = URL_SETTING) -> URL:
    """Parse a database URL, refusing the forms the store cannot use.

    Raises:
        InvalidInput: naming ``setting`` (``HARNESS_DATABASE_URL``) with the fix (a libpq ``key=value``
            string, a malformed URL, an unencoded ``@`` in the password, a non-numeric port,
            an unsupported driver such as ``+asyncpg``). The password is never echoed.
    """
    text = url.strip()
    if "://" not in text and "=" in text:
        raise _bad_url("a libpq 'host=... dbname=...' string is not a URL", setting)
    try:
        parsed = make_url(text)
    except sa_exc.ArgumentError:
        raise _bad_url("not a database URL", setting) from None
    except ValueError:  # e.g. a port that is not a number
        raise _bad_url(
            "the port is not a number (or the password holds an unencoded ':')", setting
        ) from None
    if parsed.drivername not in _DRIVERS:
        raise _bad_url(f"driver {parsed.drivername!r} is not supported (psycopg 3 only)", setting)
    if parsed.host and ("@" in parsed.host or "/" in parsed.host):
        raise _bad_url("the password (or user name) holds an unencoded '@' or '/'", setting)
    return parsed


def redact_url(url: str) -> str:
    """The URL with its password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def normalize_url(url: str, *, setting: str = URL_SETTING) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs; refuse what it cannot use (see
    :func:`parse_url`; errors name ``setting``)."""
    parsed = parse_url(url, setting=setting)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


@dataclass(frozen=True)
class Diagnosis:
    """What a driver error means: ``misconfigured`` (retrying will not help) and the fix."""

    misconfigured: bool
    advice: str | None


_OWNER_FIX = (
    "run `harness-memory init` with the owner's URL (a role that may create tables), "
    "or GRANT CREATE ON SCHEMA to this role"
)
#: (sqlstate or None, lowercase fragments of the message joined by "*", advice): first match
#: wins.
_KNOWN: tuple[tuple[str | None, str, str], ...] = (
    (
        None,
        'extension "vector" is not available',
        "install pgvector for this server (https://github.com/pgvector/pgvector#installation), "
        "or use a server that has it",
    ),
    (
        None,
        "could not open extension control file",
        "install pgvector for this server (https://github.com/pgvector/pgvector#installation), "
        "or use a server that has it",
    ),
    (
        None,
        "permission denied to create extension",
        "an administrator runs `CREATE EXTENSION vector;` in this database, then run "
        "`harness-memory init` again",
    ),
    (None, "permission denied for schema", _OWNER_FIX),
    (None, "must be owner of", _OWNER_FIX),
    (
        None,
        'type "vector" does not exist',
        "the vector extension's schema is not on the search_path: add it "
        '(ALTER ROLE ... SET search_path = "$user", public, <schema>), or add '
        "?options=-csearch_path%3Dpublic,<schema> to HARNESS_DATABASE_URL",
    ),
    (
        "42501",
        "permission denied",
        "grant this role SELECT, INSERT, UPDATE, DELETE on the store's tables (docs/operations.md, "
        "'Running on your own PostgreSQL'), or set HARNESS_APP_ROLE when migrating",
    ),
    (None, "password authentication failed", "check the user name and password in " + URL_SETTING),
    (None, "no password supplied", "put the password in " + URL_SETTING),
    (None, 'database "* does not exist', "check the database name in " + URL_SETTING),
    (None, 'role "* does not exist', "check the user name in " + URL_SETTING),
    (
        None,
        "no pg_hba.conf entry",
        "the server refuses this client, user, database or encryption: ask for a pg_hba.conf "
        "entry, or add ?sslmode=require to " + URL_SETTING,
    ),
    (None, "ssl", "set sslmode (e.g. ?sslmode=require or ?sslmode=disable) in " + URL_SETTING),
    (None, "could not translate host name", "check the host name in " + URL_SETTING),
    (None, "name or service not known", "check the host name in " + URL_SETTING),
    (None, "failed to resolve host", "check the host name in " + URL_SETTING),
)
#: SQLSTATE classes of configuration errors: 28 (authorization), 3D (no such database),
#: privilege errors (42501) only with a known message above (an RLS violation is a bug).
_MISCONFIGURED_STATES = ("28", "3D")
#: Actions only the table's owner may run (PostgreSQL's CLUSTER): a privilege error there
#: means the command ran as the wrong login, not that a grant is missing.
_OWNER_ONLY_ACTIONS = ("cluster",)
_RUN_AS_OWNER = (
    "run it as the tables' owner (the owner's URL in --url or HARNESS_DATABASE_URL), as "
    "`harness-memory init` runs; the application login may not rewrite the table"
)


def diagnose(sqlstate: str | None, message: str, *, action: str = "") -> Diagnosis:
    """Pure: classify a server or connection error by SQLSTATE and message (and, for a
    privilege error, by the ``action`` that met it)."""
    if sqlstate == "42501" and action.startswith(_OWNER_ONLY_ACTIONS):
        return Diagnosis(True, _RUN_AS_OWNER)
    low = message.lower()
    for state, fragment, advice in _KNOWN:
        if _contains_in_order(low, fragment.split("*")) and state in (None, sqlstate):
            return Diagnosis(True, advice)
    if sqlstate is not None and sqlstate.startswith(_MISCONFIGURED_STATES):
        return Diagnosis(True, None)
    return Diagnosis(False, None)


def _contains_in_order(text: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


@contextlib.contextmanager
def translate_errors(action: str, *, url: str | None = None) -> Iterator[None]:
    """Turn driver errors into ``StoreMisconfigured`` / ``StoreUnavailable`` / ``StoreError``;
    keep ours untouched. ``url`` (shown redacted) says where a connection failed."""
    try:
        yield
    except HarnessError:
        raise
    except sa_exc.DBAPIError as exc:
        sqlstate, text = _describe(exc)
        diagnosis = diagnose(sqlstate, text, action=action)
        where = f" ({redact_url(url)})" if url else ""
        if diagnosis.misconfigured:
            fix = f" What to do: {diagnosis.advice}." if diagnosis.advice else ""
            raise StoreMisconfigured(f"{action}{where}: {text}.{fix}") from exc
        if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
            raise StoreUnavailable(f"{action}{where}: database unavailable: {text}") from exc
        raise StoreError(f"{action}: database error: {text}") from exc
    except sa_exc.TimeoutError as exc:
        raise StoreUnavailable(f"{action}: database unavailable: {_first_line(exc)}") from exc


def _describe(exc: sa_exc.DBAPIError) -> tuple[str | None, str]:
    """(SQLSTATE, one line: the server's message with its DETAIL and HINT)."""
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    diag = getattr(orig, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    text = primary or _first_line(exc)
    for label, attr in (("detail", "message_detail"), ("hint", "message_hint")):
        extra = getattr(diag, attr, None) if diag is not None else None
        if extra:
            text += f" ({label}: {' '.join(extra.split())})"
    return sqlstate, text.rstrip(".")


def _first_line(exc: BaseException) -> str:
    """The driver's message on one line (libpq splits "connection ... failed: FATAL: ...")."""
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    return text or type(exc).__name__
