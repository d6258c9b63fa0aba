"""Schemathesis hooks for scripts/fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

Publish: the publish endpoints allow a few pages per minute per client address, so a fuzzer on one
address mostly gets 429 and never reaches the code behind them. The server under test trusts
X-Forwarded-For from loopback (HOSTPLANE_TRUST_PROXY=loopback), and nine publish requests in ten
come from a random benchmarking address (198.18.0.0/15); the tenth keeps the real address, so the
limiter's 429 answer is still exercised and checked against the document. SQLite register and
login (5 a minute per address) get the same treatment.

SQLite (/api/v1/sqlite/*, except install, the token and database lists and the point-in-time
restore routes, which take the master key): a scoped token is only accepted with the site's `Origin`, and most operations
also want a user session, which no static configuration can keep alive while the fuzzer revokes
tokens, logs sessions out and resets passwords. So:
- an auth provider (`SqliteAuth`) gives nine cases in ten the credentials their security
  requirement names, from the fixture of sqlite_fixture.py (HOSTPLANE_FUZZ_SQLITE); the tenth keeps
  the fuzzer's own (random or missing) values, so the 401 answers stay exercised and checked;
  credentials a stateful link put there (a token from install, a session from login) are kept;
- `before_call` adds the allowed Origin to nine requests in ten (a foreign origin or none to the
  rest: the 403 path), and to half of the CRUD requests with the fixture's token gives a statement
  that can succeed (its placeholders fitted to the fuzzer's parameters), since random text is
  almost never valid SQL;
- `after_call` notices when the fuzzer broke the fixture (a 401 "revoked token" or "invalid
  session" for the fixture's own credential, a logout, reset-password or delete that hit them) and
  the next case repairs it first: re-install a revoked token, sign the admin in again, register a
  new victim user, or, when the admin cannot sign in any more, build a fresh database.
"""

from __future__ import annotations

import atexit
import os
import random
import re
import sys
import threading

import schemathesis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqlite_fixture as fx  # noqa: E402

PUBLISH_PATHS = {"/ai/publish", "/demo/api/publish"}
ACCOUNT = "/api/v1/account"
# Sign-in, sign-up, invitations, verification, resets and sudo: limited per client address (and email or account).
ACCOUNT_LIMITED = {
    f"{ACCOUNT}/{p}"
    for p in (
        "sign-in",
        "sign-up",
        "invitations/accept",
        "verify",
        "verify/resend",
        "password-reset",
        "password-reset/confirm",
        "password",
        "sudo",
    )
}
LIMITED_PATHS = PUBLISH_PATHS | ACCOUNT_LIMITED | {f"{fx.API}/auth/register", f"{fx.API}/auth/login"}
# Calls that end the session they are sent with, or delete the fixture's site or its keys.
ENDS_SESSION = {f"{ACCOUNT}/sign-out", f"{ACCOUNT}/sessions/{{id}}"}
SPARE_SESSIONS = [t for t in os.environ.get("HOSTPLANE_FUZZ_SPARE_SESSIONS", "").split(",") if t]
UNKNOWN_ID = "2147483647"
# Not the module-level functions: Hypothesis reseeds the global `random` for every example, which
# would give every request the same address.
rng = random.SystemRandom()

CRUD = {f"{fx.API}/{op}" for op in ("query", "exec", "batch", "version", "schema", "vacuum")}
USER_PATHS = {f"{fx.API}/auth/users", f"{fx.API}/auth/users/{{id}}", f"{fx.API}/auth/users/{{id}}/reset-password"}
REAL_TOKEN = re.compile(r"^hp_sqlite_[A-Za-z0-9_-]{16,}$")
REAL_SESSION = re.compile(r"^[0-9a-f]{64}$")


def _fixture_api() -> fx.Api | None:
    base = os.environ.get("HOSTPLANE_FUZZ_BASE_URL")
    if not base or "HOSTPLANE_FUZZ_SQLITE" not in os.environ:
        return None
    return fx.Api(base, os.environ["HOSTPLANE_FUZZ_API_KEY"], os.environ["HOSTPLANE_FUZZ_SQLITE_ORIGIN"])


class State:
    """The live fixture and what the fuzzer may have broken since the last check."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.api = _fixture_api()
        self.fixture = fx.Fixture.from_json(os.environ["HOSTPLANE_FUZZ_SQLITE"]) if self.api else None
        self.suspect_tokens: set[str] = set()
        self.suspect_admin = False
        self.repairs: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.repairs[what] = self.repairs.get(what, 0) + 1

    def ours(self) -> dict[str, str]:
        """The fixture's token values by kind."""
        return {kind: t.token for kind, t in self.fixture.tokens.items()}

    def repair(self) -> None:
        """Puts back what the fuzzer broke; a fresh database when the admin is lost."""
        with self.lock:
            f, api = self.fixture, self.api
            for kind in sorted(self.suspect_tokens):
                token = f.tokens[kind]
                headers = {"X-Sqlite-Token": token.token}
                if token.requires_user_auth and f.admin.session:
                    headers["X-Sqlite-User-Token"] = f.admin.session
                status, answer = api.call("GET", f"{fx.API}/version", headers=headers)
                if status == 401 and answer.get("message") == fx.TOKEN_INVALID:
                    f.tokens[kind] = fx.install(api, f.path, kind)
                    self._count(f"token {kind}")
            self.suspect_tokens.clear()
            if self.suspect_admin:
                self.suspect_admin = False
                headers = {"X-Sqlite-Token": f.tokens["rw"].token, "X-Sqlite-User-Token": f.admin.session or ""}
                status, answer = api.call("GET", f"{fx.API}/auth/me", headers=headers)
                if status == 200 and answer["user"]["role"] == "admin" and not answer["user"]["disabled"]:
                    return
                status, answer = fx.login(api, f.tokens["rw"].token, f.admin)
                if status == 200 and answer["user"]["role"] == "admin":
                    self._count("admin session")
                    return
                # Password reset or changed to a value we missed, or the database is gone.
                self.fixture = fx.build(api, f.generation + 1)
                self._count("database")

    def victim(self) -> fx.User:
        """The victim user, registering a new one when the fuzzer deleted or disabled it."""
        with self.lock:
            if self.fixture.victim is None:
                self.fixture.victim = fx.register(self.api, self.fixture.tokens["rw"].token, "user")
                self._count("victim")
            return self.fixture.victim

    def victim_session(self) -> str:
        """A session of the victim user, signing it in (or registering a new one) when needed."""
        with self.lock:
            f, api = self.fixture, self.api
            if f.victim and f.victim.session:
                return f.victim.session
            if f.victim:
                status, _ = fx.login(api, f.tokens["rw"].token, f.victim)
                if status == 200:
                    return f.victim.session
            f.victim = fx.register(api, f.tokens["rw"].token, "user")
            fx.login(api, f.tokens["rw"].token, f.victim)
            self._count("victim")
            return f.victim.session or ""


STATE = State()


def _sqlite_case(case) -> bool:
    path = case.operation.path
    return STATE.fixture is not None and path.startswith(f"{fx.API}/") and not re.match(
        r"^/api/v1/sqlite/(auth/(install|tokens)|restore|databases)", path
    )


def _platform_credentials(case) -> dict[str, str] | None:
    """The site key or the account session, for the first security requirement they satisfy."""
    values = {
        "ApiKey": ("X-API-Key", os.environ.get("HOSTPLANE_FUZZ_API_KEY")),
        "Session": ("Authorization", f"Bearer {os.environ.get('HOSTPLANE_FUZZ_SESSION')}"),
    }
    for requirement in case.operation.definition.raw.get("security", []):
        if requirement and all(scheme in values for scheme in requirement):
            return dict(values[scheme] for scheme in requirement)
    return None


# Schemathesis drops programmatic auth when the configuration has any, so this one provider gives
# every operation its credentials: the platform's ones (what [auth.openapi] in schemathesis.toml
# used to give) and the SQLite ones.
@schemathesis.auth(refresh_interval=None)
class Credentials:
    """What each operation's security requirement names (see the module's docstring)."""

    def get(self, case, context):
        if not _sqlite_case(case):
            return _platform_credentials(case)
        if STATE.suspect_tokens or STATE.suspect_admin:
            STATE.repair()
        # Credentials a stateful link put there (a token minted by install, a session from login).
        given = case.headers or {}
        if REAL_TOKEN.match(str(given.get("X-Sqlite-Token", ""))):
            linked = {"X-Sqlite-Token": given["X-Sqlite-Token"]}
            if REAL_SESSION.match(str(given.get("X-Sqlite-User-Token", ""))):
                linked["X-Sqlite-User-Token"] = given["X-Sqlite-User-Token"]
            return linked
        if rng.random() < 0.1:
            return None  # the fuzzer's own values
        f = STATE.fixture
        path = case.operation.path
        rw = f.tokens["rw"].token
        headers: dict[str, str | None] = {"X-Sqlite-Token": rw}
        if path in CRUD:
            pick = rng.random()
            if pick < 0.2:
                headers["X-Sqlite-Token"] = f.tokens["ro"].token
            elif pick < 0.45:
                headers["X-Sqlite-Token"] = f.tokens["ua"].token
                headers["X-Sqlite-User-Token"] = f.admin.session
        elif path == f"{fx.API}/auth/register":
            if rng.random() < 0.5:
                headers["X-API-Key"] = STATE.api.api_key
            else:
                headers["X-Sqlite-User-Token"] = f.admin.session
        elif path == f"{fx.API}/auth/logout":
            # Never the admin's session: logging it out would only cost a sign-in.
            if rng.random() < 0.7:
                headers["X-Sqlite-User-Token"] = STATE.victim_session()
        elif path in USER_PATHS and rng.random() < 0.3:
            headers["X-API-Key"] = STATE.api.api_key  # the owner's master key (extension)
        elif path != f"{fx.API}/auth/login":
            headers["X-Sqlite-User-Token"] = f.admin.session
        return {k: v for k, v in headers.items() if v}

    def set(self, case, data, context):
        headers = dict(case.headers or {})
        headers.update(data)
        case.headers = headers


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


QUERIES = [
    "SELECT * FROM fuzz_items ORDER BY id LIMIT 50",
    "SELECT count(*) AS n, sum(qty) AS total, max(price) AS top FROM fuzz_items",
    "SELECT id, data, typeof(data) AS kind FROM fuzz_items WHERE data IS NOT NULL",
    "SELECT * FROM fuzz_totals",
    "SELECT * FROM fuzz_wide LIMIT 20",
    "SELECT 9223372036854775807 AS big, -9223372036854775808 AS small, x'00ff' AS blob, 1.5 AS real",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT sum(i) AS s FROM n",
    "PRAGMA table_info(fuzz_items)",
]
WRITES = [
    "INSERT INTO fuzz_items(name, qty, price) VALUES ('fuzz', 1, 2.5)",
    "UPDATE fuzz_items SET qty = qty + 1 WHERE name = 'apple'",
    "DELETE FROM fuzz_wide WHERE rowid NOT IN (SELECT rowid FROM fuzz_wide ORDER BY rowid DESC LIMIT 100)",
    "DELETE FROM fuzz_items WHERE id > 200",
    "CREATE TABLE IF NOT EXISTS fuzz_extra (k TEXT PRIMARY KEY, v)",
    "INSERT OR REPLACE INTO fuzz_extra(k, v) VALUES ('k', randomblob(8))",
]


def _statement(kind: str, params) -> str | None:
    """A statement that can succeed with the fuzzer's parameters (None: keep the fuzzer's SQL)."""
    n = len(params) if isinstance(params, list) else 0
    if n == 0:
        return rng.choice(QUERIES if kind == "query" else WRITES)
    if kind == "query":
        return f"SELECT {_placeholders(n)}" if n <= 64 else None
    if n <= 8:
        return f"INSERT INTO fuzz_wide(c1{''.join(f', c{i}' for i in range(2, n + 1))}) VALUES ({_placeholders(n)})"
    return None


def _valid_sql(case) -> None:
    body = case.body
    meta = getattr(case, "meta", None)
    # Only schema-valid cases: a negative one must stay invalid (an empty `sql`, say).
    positive = meta is None or meta.generation.mode.is_positive
    if not positive or not isinstance(body, dict) or rng.random() < 0.5:
        return
    path = case.operation.path
    if path in (f"{fx.API}/query", f"{fx.API}/exec") and isinstance(body.get("sql"), str):
        sql = _statement("query" if path.endswith("query") else "exec", body.get("params"))
        if sql:
            body["sql"] = sql
    elif path == f"{fx.API}/batch" and isinstance(body.get("statements"), list):
        for statement in body["statements"]:
            if isinstance(statement, dict) and isinstance(statement.get("sql"), str):
                sql = _statement("exec", statement.get("params"))
                if sql:
                    statement["sql"] = sql


def _protect_account_fixture(case, headers) -> None:
    """Keeps the fixture's session, site and keys alive: a call that ends a session gets a spare
    one (then a dead one, once they are used up); a delete of the fixture's site, or of a key or
    domain of it, names an unknown site instead (the positive paths are in the integration tests)."""
    path, method = case.operation.path, case.operation.method.upper()
    if path in ENDS_SESSION and method in ("POST", "DELETE"):
        if str(headers.get("Authorization", "")).endswith(os.environ.get("HOSTPLANE_FUZZ_SESSION", "-")):
            spare = SPARE_SESSIONS.pop() if SPARE_SESSIONS else "hp_sess_" + "0" * 43
            headers["Authorization"] = f"Bearer {spare}"
        params = case.path_parameters or {}
        if str(params.get("id")) == os.environ.get("HOSTPLANE_FUZZ_SESSION_ID"):
            params["id"] = UNKNOWN_ID
            case.path_parameters = params
    if path.startswith(f"{ACCOUNT}/sites/{{siteId}}") and method == "DELETE":
        params = case.path_parameters or {}
        if str(params.get("siteId")) == os.environ.get("HOSTPLANE_FUZZ_SITE_ID"):
            params["siteId"] = UNKNOWN_ID
            case.path_parameters = params


@schemathesis.hook
def before_call(context, case, kwargs):
    path = case.operation.path
    headers = dict(case.headers or {})
    if path.startswith(ACCOUNT):
        _protect_account_fixture(case, headers)
    if path in LIMITED_PATHS and rng.random() >= 0.1:
        headers["X-Forwarded-For"] = f"198.{rng.randint(18, 19)}.{rng.randrange(256)}.{rng.randint(1, 254)}"
    if path.startswith(f"{fx.API}/restore") and STATE.fixture is not None:
        _fixture_database(case)
    if _sqlite_case(case):
        pick = rng.random()
        if pick < 0.9:
            headers["Origin"] = STATE.api.origin
        elif pick < 0.95:
            headers["Origin"] = STATE.api.origin.replace("://fuzz.", "://elsewhere.")
        if headers.get("X-Sqlite-Token") in STATE.ours().values():
            _valid_sql(case)
            _known_password(case, headers)
    case.headers = headers


def _fixture_database(case) -> None:
    """Half of the schema-valid restore cases name the fixture's database (random paths only meet 404)."""
    meta = getattr(case, "meta", None)
    if (meta is not None and not meta.generation.mode.is_positive) or rng.random() >= 0.5:
        return
    if case.operation.method.upper() == "GET" and isinstance(case.query, dict):
        case.query["path"] = STATE.fixture.path
    elif isinstance(case.body, dict):
        case.body["path"] = STATE.fixture.path


def _known_password(case, headers) -> None:
    """Some logins with the victim's credentials, some password changes with the admin's."""
    meta = getattr(case, "meta", None)
    if (meta is not None and not meta.generation.mode.is_positive) or not isinstance(case.body, dict):
        return
    path = case.operation.path
    if path == f"{fx.API}/auth/login" and rng.random() < 0.3:
        victim = STATE.victim()
        case.body["email"], case.body["password"] = victim.email, victim.password
    elif (
        path == f"{fx.API}/auth/change-password"
        and headers.get("X-Sqlite-User-Token") == STATE.fixture.admin.session
        and rng.random() < 0.3
    ):
        case.body["currentPassword"] = STATE.fixture.admin.password


def _was_admin_target(case) -> bool:
    return str((case.path_parameters or {}).get("id")) == str(STATE.fixture.admin.id)


@schemathesis.hook
def after_call(context, case, response):
    if not _sqlite_case(case):
        return
    with STATE.lock:
        f = STATE.fixture
        sent = case.headers or {}
        token, session = sent.get("X-Sqlite-Token"), sent.get("X-Sqlite-User-Token")
        status, path = response.status_code, case.operation.path
        message = ""
        if status in (401, 403):
            try:
                message = response.json().get("message", "")
            except Exception:
                message = ""
        ours = {v: k for k, v in STATE.ours().items()}
        if status == 401 and message == fx.TOKEN_INVALID and token in ours:
            STATE.suspect_tokens.add(ours[token])
        if session and session == f.admin.session:
            if (status == 401 and message == fx.SESSION_INVALID) or (status == 403 and message == "Admin role required"):
                STATE.suspect_admin = True
            if status == 204 and path.endswith("/logout"):
                STATE.suspect_admin = True
            if status == 204 and path.endswith("/change-password") and isinstance(case.body, dict):
                f.admin.password = str(case.body.get("newPassword"))
        if f.victim and session and session == f.victim.session and path.endswith("/logout") and status == 204:
            f.victim.session = None
        if 200 <= status < 300 and path in USER_PATHS and case.operation.method.upper() != "GET":
            target = str((case.path_parameters or {}).get("id"))
            if _was_admin_target(case):
                if path.endswith("/reset-password") and isinstance(case.body, dict):
                    f.admin.password = str(case.body.get("newPassword"))
                STATE.suspect_admin = True
            elif f.victim and target == str(f.victim.id):
                body = case.body if isinstance(case.body, dict) else {}
                # Reset, disabled or deleted: the next logout registers or signs in a fresh one.
                if case.operation.method.upper() != "PATCH" or body.get("disabled") is True:
                    f.victim = None


@atexit.register
def _report_repairs() -> None:
    if STATE.fixture is not None:
        print(f"[fuzz] SQLite fixture repairs: {STATE.repairs or 'none'}", file=sys.stderr)

