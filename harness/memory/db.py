"""Database plumbing shared by the store's modules: URLs and driver-error translation."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from harness.errors import HarnessError, StoreError, StoreUnavailable

__all__ = ["normalize_url", "redact_url", "translate_errors"]


def redact_url(url: str) -> str:
    """The URL with its password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def normalize_url(url: str) -> str:
    """Use psycopg 3 for plain ``postgresql://`` URLs."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


@contextlib.contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Turn driver errors into ``StoreUnavailable`` / ``StoreError``; keep ours untouched."""
    try:
        yield
    except HarnessError:
        raise
    except (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError) as exc:
        raise StoreUnavailable(f"{action}: database unavailable: {_first_line(exc)}") from exc
    except sa_exc.DBAPIError as exc:
        raise StoreError(f"{action}: database error: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
