"""The admin console's Starlette app: routes, sign-in, CSRF, tenant checks, error pages.

Every route but ``/login`` needs a session; every POST needs the session's CSRF token; every
tenant in a path must be one of the admin's tenants, else the answer is 404 exactly as for a
tenant that does not exist. Store calls go through :class:`ConsoleBackend` only.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.templating import Jinja2Templates

from harness import metrics
from harness.console.backend import (
    ConsoleBackend,
    format_cursor,
    parse_cursor,
    parse_memory_id,
)
from harness.console.chart import ORIGIN_COLOURS, layout_chart
from harness.console.present import relevance_label, when
from harness.console.sessions import COOKIE_NAME, Session, SessionStore
from harness.console.signin import SignInThrottle
from harness.console.tokens import Admin, AdminTokenFile, TokenFileUnreadable
from harness.console.web import (
    base_path,
    cookie_path,
    csrf_ok,
    enum_value,
    form_text,
    harden,
    set_cookie,
    whole_number,
)
from harness.errors import (
    ConflictingState,
    HarnessError,
    InvalidInput,
    MemoryNotFound,
    StoreUnavailable,
)
from harness.memory import MemoryStore
from harness.memory.domain.listing import BrowseFilter
from harness.memory.domain.types import Kind, RecallRequest, Scope, Status

__all__ = ["BROWSE_PAGE", "PENDING_PAGE", "build_console_app", "console_mount"]

PENDING_PAGE = 20
BROWSE_PAGE = 50
LOGIN_COOKIE = "hm_console_login"
MAX_TEXT_FILTER = 200


@dataclass(frozen=True)
class Ctx:
    """Who is asking, in which tenant (already checked against the admin's tenants)."""

    session: Session
    admin: Admin
    tenant: str | None


Handler = Callable[[Request, Ctx], Awaitable[Response]]


class Console:
    """State shared by the routes: backend, admin tokens, sessions, templates."""

    def __init__(
        self,
        backend: ConsoleBackend,
        tokens: AdminTokenFile,
        sessions: SessionStore,
        throttle: SignInThrottle,
    ):
        self.backend = backend
        self.tokens = tokens
        self.sessions = sessions
        self.throttle = throttle
        env = Environment(loader=PackageLoader("harness.console", "templates"), autoescape=True)
        env.globals["Scope"] = Scope
        env.globals["Kind"] = Kind
        env.globals["Status"] = Status
        env.globals["ORIGIN_COLOURS"] = ORIGIN_COLOURS
        env.globals["relevance_label"] = relevance_label
        env.filters["when"] = when
        self.templates = Jinja2Templates(env=env)

    # --- rendering -----------------------------------------------------------------------------

    def render(
        self,
        request: Request,
        name: str,
        ctx: Ctx | None,
        status_code: int = 200,
        **values: Any,
    ) -> Response:
        nonce = secrets.token_urlsafe(16)
        context = {
            "base": request.scope.get("root_path", ""),
            "ctx": ctx,
            "nonce": nonce,
            "flashes": ctx.session.take_flashes() if ctx else [],
            **values,
        }
        response = self.templates.TemplateResponse(request, name, context, status_code=status_code)
        return harden(response, nonce)

    def error(self, request: Request, ctx: Ctx | None, status: int, message: str) -> Response:
        return self.render(
            request, "error.html", ctx, status_code=status, status=status, message=message
        )

    def tokens_broken(self, request: Request, exc: TokenFileUnreadable) -> Response:
        """503 while the token file cannot be used (the cause is logged once per change)."""
        return self.error(
            request,
            None,
            503,
            f"The console's token file ({exc.path.name}) cannot be used, so nobody can sign "
            "in; an operator must fix it (the server log says what is wrong).",
        )

    async def routing_error(self, request: Request, exc: Exception) -> Response:
        """Routing's own 404 and 405 as console pages, with the console's headers."""
        assert isinstance(exc, HTTPException)
        message = "Not found." if exc.status_code == 404 else str(exc.detail)
        response = self.error(request, None, exc.status_code, message)
        for name, value in (exc.headers or {}).items():  # 405 keeps its Allow header
            response.headers[name] = value
        return response

    async def server_error(self, request: Request, exc: Exception) -> Response:
        """An unexpected failure: a plain console page (the traceback goes to the log)."""
        return self.error(request, None, 500, "Something went wrong; the server log has details.")

    # --- guards --------------------------------------------------------------------------------

    def guarded(
        self, handler: Handler, *, tenant_scoped: bool = True
    ) -> Callable[[Request], Awaitable[Response]]:
        """Wrap a handler: session, live token, tenant, CSRF on POST; typed errors -> pages."""

        async def endpoint(request: Request) -> Response:
            session = self.sessions.get(request.cookies.get(COOKIE_NAME))
            try:
                admin = self.tokens.admin_by_hash(session.token_sha256) if session else None
            except TokenFileUnreadable as exc:
                return self.tokens_broken(request, exc)
            if session is None or admin is None:
                if request.method == "GET":
                    return harden(RedirectResponse(f"{base_path(request)}/login", status_code=303))
                return self.error(request, None, 401, "Sign in first.")
            tenant = request.path_params.get("tenant") if tenant_scoped else None
            ctx = Ctx(session, admin, tenant)
            if tenant is not None and not admin.may_see(tenant):
                return self.error(request, Ctx(session, admin, None), 404, "Not found.")
            try:
                if request.method == "POST":
                    form = await request.form()
                    if not csrf_ok(form, session.csrf):
                        return self.error(
                            request,
                            ctx,
                            403,
                            "The form's CSRF token is missing or stale; reload the page and try again.",
                        )
                return await handler(request, ctx)
            except MemoryNotFound:
                return self.error(request, ctx, 404, "Not found.")
            except InvalidInput as exc:
                return self.error(request, ctx, 400, str(exc))
            except ConflictingState as exc:
                return self.error(request, ctx, 409, str(exc))
            except StoreUnavailable as exc:
                return self.error(request, ctx, 503, f"The memory store is unavailable: {exc}")
            except HarnessError as exc:
                return self.error(request, ctx, 500, str(exc))

        return endpoint

    # --- sign-in -------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        nonce = secrets.token_urlsafe(24)
        response = self.render(request, "login.html", None, login_csrf=nonce, message=None)
        set_cookie(request, response, LOGIN_COOKIE, nonce, max_age=600)
        return response

    async def login(self, request: Request) -> Response:
        address = request.client.host if request.client else "unknown"
        wait = self.throttle.retry_after(address)
        if wait is not None:  # refused before the token is even looked at
            response = self.error(
                request,
                None,
                429,
                f"Too many failed sign-ins from this address; try again in {wait} s.",
            )
            response.headers["Retry-After"] = str(wait)
            return response
        form = await request.form()
        expected = request.cookies.get(LOGIN_COOKIE, "")
        if not expected or not csrf_ok(form, expected):
            return self.error(
                request, None, 403, "The sign-in form is stale; reload the page and try again."
            )
        token = form.get("token")
        try:
            admin = self.tokens.verify(token) if isinstance(token, str) else None
        except TokenFileUnreadable as exc:
            return self.tokens_broken(request, exc)
        if admin is None:
            self.throttle.failed(address)
            nonce = secrets.token_urlsafe(24)
            response = self.render(
                request,
                "login.html",
                None,
                status_code=401,
                login_csrf=nonce,
                message="Unknown token.",
            )
            set_cookie(request, response, LOGIN_COOKIE, nonce, max_age=600)
            return response
        from harness.console.tokens import hash_token

        self.throttle.succeeded(address)
        session = self.sessions.open(hash_token(token.strip()))  # type: ignore[union-attr]
        response = harden(RedirectResponse(f"{base_path(request)}/", status_code=303))
        set_cookie(request, response, COOKIE_NAME, session.sid, max_age=None)
        response.delete_cookie(LOGIN_COOKIE, path=cookie_path(request))
        return response

    async def logout(self, request: Request, ctx: Ctx) -> Response:
        self.sessions.close(ctx.session.sid)
        response = harden(RedirectResponse(f"{base_path(request)}/login", status_code=303))
        response.delete_cookie(COOKIE_NAME, path=cookie_path(request))
        return response

    async def home(self, request: Request, ctx: Ctx) -> Response:
        return harden(
            RedirectResponse(
                f"{base_path(request)}/t/{quote(ctx.admin.tenants[0], safe='')}/pending",
                status_code=303,
            )
        )

    # --- pending queue -------------------------------------------------------------------------

    async def pending(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        after = parse_cursor(request.query_params.get("after"), "after")
        items, nxt = await run_in_threadpool(
            self.backend.pending, tenant, after=after, limit=PENDING_PAGE
        )
        return self.render(
            request,
            "pending.html",
            ctx,
            items=items,
            next_cursor=format_cursor(nxt) if nxt else None,
            page="pending",
        )

    async def decide(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        form = await request.form()
        action = form_text(form, "action")
        if action not in ("approve", "reject"):
            raise InvalidInput("action: must be approve or reject", fields=("action",))
        raw_ids = [v for v in form.getlist("id") if isinstance(v, str)]
        if not raw_ids:
            raise InvalidInput("id: select at least one memory", fields=("id",))
        reason = form_text(form, "reason").strip()
        if action == "reject" and not reason:
            raise InvalidInput("reason: a rejection needs a reason", fields=("reason",))
        ids = list(dict.fromkeys(parse_memory_id(r) for r in raw_ids))
        # Check every id before deciding any, so a bad selection changes nothing.
        for mid in ids:
            mem = await run_in_threadpool(self.backend.memory, tenant, mid)
            if mem.status is not Status.PENDING_APPROVAL:
                raise ConflictingState(f"memory {mid} is {mem.status.value}, not pending_approval")
        for mid in ids:
            if action == "approve":
                await run_in_threadpool(self.backend.approve, tenant, mid, ctx.admin.name)
            else:
                await run_in_threadpool(self.backend.reject, tenant, mid, ctx.admin.name, reason)
        done = "approved" if action == "approve" else "rejected"
        ctx.session.flash("ok", f"{done} {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}")
        return harden(
            RedirectResponse(
                f"{base_path(request)}/t/{quote(tenant, safe='')}/pending", status_code=303
            )
        )

    # --- lessons proposed for retirement ---------------------------------------------------------

    async def retirements(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        proposals = await run_in_threadpool(self.backend.retirement_proposals, tenant)
        retired = await run_in_threadpool(self.backend.retired, tenant, limit=PENDING_PAGE)
        return self.render(
            request,
            "retirements.html",
            ctx,
            proposals=proposals,
            retired=retired,
            page="retirements",
        )

    async def retire(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        form = await request.form()
        action = form_text(form, "action")
        if action not in ("retire", "restore"):
            raise InvalidInput("action: must be retire or restore", fields=("action",))
        mid = parse_memory_id(form_text(form, "id"))
        reason = form_text(form, "reason").strip() or None
        if action == "retire":
            await run_in_threadpool(self.backend.retire, tenant, mid, ctx.admin.name, reason)
        else:
            await run_in_threadpool(self.backend.restore, tenant, mid, ctx.admin.name)
        ctx.session.flash("ok", f"{action}d {mid}")
        return harden(
            RedirectResponse(
                f"{base_path(request)}/t/{quote(tenant, safe='')}/retirements", status_code=303
            )
        )

    # --- browser and item page -----------------------------------------------------------------

    async def memories(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        q = request.query_params
        flt = BrowseFilter(
            scope=enum_value(Scope, q.get("scope"), "scope"),
            scope_id=q.get("scope_id") or None,
            kind=enum_value(Kind, q.get("kind"), "kind"),
            status=enum_value(Status, q.get("status"), "status"),
            text=(q.get("q") or "").strip() or None,
        )
        if flt.text and len(flt.text) > MAX_TEXT_FILTER:
            raise InvalidInput(f"q: at most {MAX_TEXT_FILTER} characters", fields=("q",))
        if flt.scope_id and len(flt.scope_id) > 200:
            raise InvalidInput("scope_id: at most 200 characters", fields=("scope_id",))
        before = parse_cursor(q.get("before"), "before")
        rows, nxt = await run_in_threadpool(
            self.backend.browse, tenant, flt, before=before, limit=BROWSE_PAGE
        )
        keep = {k: v for k, v in q.items() if k != "before" and v}
        return self.render(
            request,
            "memories.html",
            ctx,
            rows=rows,
            flt=flt,
            filters=keep,
            next_cursor=format_cursor(nxt) if nxt else None,
            page="memories",
        )

    async def memory(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        mid = parse_memory_id(request.path_params["memory_id"])
        mem = await run_in_threadpool(self.backend.memory, tenant, mid)
        history = await run_in_threadpool(self.backend.history, mem)
        audit = await run_in_threadpool(self.backend.audit_of, tenant, mid)
        now = self.backend.store.clock.now()
        return self.render(
            request,
            "memory.html",
            ctx,
            m=mem,
            history=history,
            audit=audit,
            expired=mem.expires_at is not None and mem.expires_at <= now,
            page="memories",
        )

    async def forget_form(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        mid = parse_memory_id(request.path_params["memory_id"])
        mem = await run_in_threadpool(self.backend.memory, tenant, mid)
        return self.render(request, "forget.html", ctx, m=mem, page="memories")

    async def forget(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        mid = parse_memory_id(request.path_params["memory_id"])
        form = await request.form()
        if form_text(form, "confirm") != "yes":
            raise InvalidInput(
                "confirm: tick the confirmation to forget a memory", fields=("confirm",)
            )
        await run_in_threadpool(self.backend.forget, tenant, mid)
        ctx.session.flash("ok", f"forgot memory {mid}")
        return harden(
            RedirectResponse(
                f"{base_path(request)}/t/{quote(tenant, safe='')}/memories", status_code=303
            )
        )

    # --- playground ----------------------------------------------------------------------------

    async def playground(self, request: Request, ctx: Ctx) -> Response:
        tenant = _tenant(ctx)
        q = request.query_params
        values = {
            "user_id": q.get("user_id", ""),
            "workflow_id": q.get("workflow_id", ""),
            "session_id": q.get("session_id", ""),
            "query": q.get("query", ""),
            "budget_chars": q.get("budget_chars", "2000"),
            "max_items": q.get("max_items", "20"),
            "max_item_chars": q.get("max_item_chars", "500"),
        }
        result = None
        if q.get("run"):
            request_ = RecallRequest(
                tenant=tenant,
                user_id=values["user_id"].strip(),
                workflow_id=values["workflow_id"].strip() or None,
                session_id=values["session_id"].strip() or None,
                query=values["query"],
                budget_chars=whole_number(values["budget_chars"], "budget_chars"),
                max_items=whole_number(values["max_items"], "max_items"),
                max_item_chars=whole_number(values["max_item_chars"], "max_item_chars"),
            )
            result = await run_in_threadpool(self.backend.recall, request_)
        return self.render(
            request, "playground.html", ctx, values=values, result=result, page="playground"
        )

    # --- status --------------------------------------------------------------------------------

    async def status(self, request: Request, ctx: Ctx) -> Response:
        report = await run_in_threadpool(self.backend.status, list(ctx.admin.tenants))
        charts = {
            t: layout_chart(report.days, report.per_day.get(t, [])) for t in ctx.admin.tenants
        }
        return self.render(request, "status.html", ctx, report=report, charts=charts, page="status")


def _tenant(ctx: Ctx) -> str:
    assert ctx.tenant is not None  # guaranteed by the route's path
    return ctx.tenant


def build_console_app(
    store: MemoryStore,
    tokens: AdminTokenFile,
    *,
    sessions: SessionStore | None = None,
    session_lifetime: timedelta = timedelta(hours=8),
    signin: SignInThrottle | None = None,
) -> Starlette:
    """The console as a Starlette app over ``store``, admins from ``tokens``.

    No IO at construction. Sessions and sign-in failure counts (``signin``, default: the
    default :class:`~harness.console.signin.SignInPolicy`) live in this process's memory (sign in again after a restart). Mount it anywhere:
    links follow the mount's ``root_path``.
    """
    c = Console(
        ConsoleBackend(store),
        tokens,
        sessions or SessionStore(session_lifetime),
        signin or SignInThrottle(),
    )
    g = c.guarded
    routes = [
        Route("/login", c.login_form, methods=["GET"]),
        Route("/login", c.login, methods=["POST"]),
        Route("/logout", g(c.logout, tenant_scoped=False), methods=["POST"]),
        Route("/", g(c.home, tenant_scoped=False), methods=["GET"]),
        Route("/status", g(c.status, tenant_scoped=False), methods=["GET"]),
        Route("/t/{tenant}/pending", g(c.pending), methods=["GET"]),
        Route("/t/{tenant}/pending", g(c.decide), methods=["POST"]),
        Route("/t/{tenant}/retirements", g(c.retirements), methods=["GET"]),
        Route("/t/{tenant}/retirements", g(c.retire), methods=["POST"]),
        Route("/t/{tenant}/memories", g(c.memories), methods=["GET"]),
        Route("/t/{tenant}/memories/{memory_id}", g(c.memory), methods=["GET"]),
        Route("/t/{tenant}/memories/{memory_id}/forget", g(c.forget_form), methods=["GET"]),
        Route("/t/{tenant}/memories/{memory_id}/forget", g(c.forget), methods=["POST"]),
        Route("/t/{tenant}/playground", g(c.playground), methods=["GET"]),
        # Prometheus scrapes without signing in: the labels name no tenant (docs/operations.md).
        Route("/metrics", _metrics, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: c.routing_error, Exception: c.server_error},
    )


async def _metrics(request: Request) -> Response:
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)


def console_mount(store: MemoryStore, tokens: AdminTokenFile, *, path: str = "/console") -> Mount:
    """A :class:`Mount` of the console at ``path``, for the MCP HTTP app's route list."""
    return Mount(path, app=build_console_app(store, tokens), name="console")
