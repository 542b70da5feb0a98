"""Request and response helpers of the console: cookies, CSRF, form fields, security headers."""

from __future__ import annotations

import secrets
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from harness.errors import InvalidInput

__all__ = [
    "base_path",
    "cookie_path",
    "csrf_ok",
    "enum_value",
    "form_text",
    "harden",
    "set_cookie",
    "whole_number",
]


def base_path(request: Request) -> str:
    """Where the console is mounted ("" at the root); every link starts with it."""
    return str(request.scope.get("root_path", ""))


def cookie_path(request: Request) -> str:
    """The cookie path: the mount point, so cookies never leak to the host app."""
    return base_path(request) or "/"


def set_cookie(
    request: Request, response: Response, name: str, value: str, *, max_age: int | None
) -> None:
    """Set an HttpOnly, SameSite=Strict cookie, Secure when the request came over TLS."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=cookie_path(request),
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def csrf_ok(form: FormData, expected: str) -> bool:
    """True when the form's ``csrf`` field equals ``expected`` (constant-time comparison)."""
    sent = form.get("csrf")
    return isinstance(sent, str) and bool(expected) and secrets.compare_digest(sent, expected)


def form_text(form: FormData, name: str) -> str:
    """A text field of the form, "" when absent or a file."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def whole_number(raw: str, name: str) -> int:
    """``raw`` as an int, or ``InvalidInput`` naming ``name``."""
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}: {raw!r} is not a whole number", fields=(name,)) from None


def enum_value(enum: type[Any], raw: str | None, name: str) -> Any:
    """``raw`` as a member of ``enum`` (None when empty), or ``InvalidInput`` naming ``name``."""
    if not raw:
        return None
    try:
        return enum(raw)
    except ValueError:
        allowed = ", ".join(e.value for e in enum)
        raise InvalidInput(f"{name}: {raw!r} is not one of {allowed}", fields=(name,)) from None


def harden(response: Response, nonce: str | None = None) -> Response:
    """Headers every console response carries: strict CSP, no framing, no caching."""
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; script-src {script}; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response
