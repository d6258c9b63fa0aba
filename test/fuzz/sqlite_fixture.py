"""The SQLite side of `make fuzz`: a database installed through the API, its tokens and its users.

scripts/fuzz.sh runs this file once before the run (`python sqlite_fixture.py BASE_URL API_KEY
ORIGIN` prints the fixture as JSON, exported as HOSTPLANE_FUZZ_SQLITE); hooks.py imports it to
repair the fixture when the fuzzer breaks it (revokes a token, ends or resets the admin's session).

A fixture ("generation") is one database at `path` with:
- three scoped tokens: `rw` (readwrite), `ro` (read) and `ua` (readwrite, requires a user session);
- `admin`: the first user, registered with the master key (so the pool's admin), and a session;
- `victim`: a plain user whose session the fuzzer may end (logout) and whom it may reset, disable
  or delete; re-registered whenever it is gone;
- tables with a few rows (`fuzz_items`, `fuzz_wide`), so reads find something.
"""

from __future__ import annotations

import json
import secrets
import sys
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field

API = "/api/v1/sqlite"
TOKEN_INVALID = "Invalid, expired, or revoked SQLite token."
SESSION_INVALID = "Invalid or expired session: sign in again."

SEED = [
    "CREATE TABLE IF NOT EXISTS fuzz_items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER,"
    " price REAL, data BLOB, created TEXT DEFAULT CURRENT_TIMESTAMP)",
    "CREATE TABLE IF NOT EXISTS fuzz_wide (c1, c2, c3, c4, c5, c6, c7, c8)",
    "CREATE INDEX IF NOT EXISTS fuzz_items_name ON fuzz_items(name)",
    "CREATE VIEW IF NOT EXISTS fuzz_totals AS SELECT name, sum(qty) AS qty FROM fuzz_items GROUP BY name",
]
ROWS = [
    ("INSERT INTO fuzz_items(name, qty, price, data) VALUES (?, ?, ?, ?)", ["apple", 3, 0.5, None]),
    ("INSERT INTO fuzz_items(name, qty, price, data) VALUES (?, ?, ?, ?)", ["pear", 0, 1.25, {"$base64": "AAEC/w=="}]),
    (
        "INSERT INTO fuzz_items(name, qty, price, data) VALUES (?, ?, ?, ?)",
        ["big", {"$bigint": "9223372036854775807"}, -1e300, {"$base64": ""}],
    ),
    ("INSERT INTO fuzz_items(name, qty, price, data) VALUES (?, ?, ?, ?)", ["ünïcødé 🍐", -7, None, None]),
    ("INSERT INTO fuzz_wide VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [1, "two", 3.5, None, True, False, "", 0]),
]


def _client_address() -> str:
    """A benchmarking-range address (198.18.0.0/15): register and login are limited per address."""
    return f"198.{secrets.choice((18, 19))}.{secrets.randbelow(256)}.{1 + secrets.randbelow(254)}"


@dataclass
class Api:
    base: str
    api_key: str
    origin: str

    def call(self, method: str, path: str, body=None, headers=None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Origin", self.origin)
        req.add_header("X-Forwarded-For", _client_address())
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                raw = res.read()
                return res.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw) if raw else {}
            except ValueError:
                return err.code, {"raw": raw.decode("utf-8", "replace")}

    def must(self, method: str, path: str, body=None, headers=None, ok=(200,)) -> dict:
        status, answer = self.call(method, path, body, headers)
        if status not in ok:
            raise RuntimeError(f"fixture: {method} {path} answered {status}: {answer}")
        return answer


@dataclass
class Token:
    id: int
    token: str
    permissions: str
    requires_user_auth: bool


@dataclass
class User:
    id: int
    email: str
    password: str
    session: str | None = None


@dataclass
class Fixture:
    path: str
    tokens: dict[str, Token]
    admin: User
    victim: User | None = None
    generation: int = 0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> "Fixture":
        raw = json.loads(text)
        victim = raw.get("victim")
        return Fixture(
            path=raw["path"],
            tokens={k: Token(**v) for k, v in raw["tokens"].items()},
            admin=User(**raw["admin"]),
            victim=User(**victim) if victim else None,
            generation=raw.get("generation", 0),
        )


TOKEN_KINDS = {"rw": ("readwrite", False), "ro": ("read", False), "ua": ("readwrite", True)}


def install(api: Api, path: str, kind: str) -> Token:
    permissions, user_auth = TOKEN_KINDS[kind]
    answer = api.must(
        "POST",
        f"{API}/auth/install",
        {"path": path, "name": f"fuzz {kind}", "permissions": permissions, "requireUserAuth": user_auth},
        {"X-API-Key": api.api_key},
    )
    return Token(answer["tokenId"], answer["token"], permissions, user_auth)


def register(api: Api, token: str, role_hint: str) -> User:
    email = f"{role_hint}-{secrets.token_hex(6)}@fuzz.example"
    password = f"Fz-{secrets.token_urlsafe(18)}"
    answer = api.must(
        "POST",
        f"{API}/auth/register",
        {"email": email, "password": password, "displayName": role_hint},
        {"X-Sqlite-Token": token, "X-API-Key": api.api_key},
        ok=(201,),
    )
    return User(answer["user"]["id"], email, password)


def login(api: Api, token: str, user: User) -> tuple[int, dict]:
    status, answer = api.call(
        "POST", f"{API}/auth/login", {"email": user.email, "password": user.password}, {"X-Sqlite-Token": token}
    )
    if status == 200:
        user.session = answer["userToken"]
    return status, answer


def build(api: Api, generation: int = 0) -> Fixture:
    """A fresh database (a new path for each generation) with its tokens, users and rows."""
    path = "data/app.sqlite" if generation == 0 else f"data/fuzz-{generation}.sqlite"
    tokens = {kind: install(api, path, kind) for kind in TOKEN_KINDS}
    rw = tokens["rw"].token
    admin = register(api, rw, "admin")
    status, answer = login(api, rw, admin)
    if status != 200 or answer["user"]["role"] != "admin":
        raise RuntimeError(f"fixture: the first user is not a signed-in admin: {status} {answer}")
    fixture = Fixture(path, tokens, admin, victim=register(api, rw, "user"), generation=generation)
    seed = [{"sql": sql} for sql in SEED] + [{"sql": sql, "params": params} for sql, params in ROWS]
    api.must("POST", f"{API}/batch", {"statements": seed}, {"X-Sqlite-Token": rw})
    return fixture


def main() -> None:
    base, api_key, origin = sys.argv[1:4]
    print(build(Api(base, api_key, origin)).to_json())


if __name__ == "__main__":
    main()
