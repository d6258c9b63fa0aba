"""Schemathesis hooks for scripts/fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

The publish endpoints allow a few pages per minute per client address, so a fuzzer on one address
mostly gets 429 and never reaches the code behind them. The server under test trusts
X-Forwarded-For from loopback (HOSTPLANE_TRUST_PROXY=loopback), and nine publish requests in ten
come from a random benchmarking address (198.18.0.0/15); the tenth keeps the real address, so the
limiter's 429 answer is still exercised and checked against the document.
"""

import random

import schemathesis

PUBLISH_PATHS = {"/ai/publish", "/demo/api/publish"}
# Not the module-level functions: Hypothesis reseeds the global `random` for every example, which
# would give every request the same address.
rng = random.SystemRandom()


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path not in PUBLISH_PATHS or rng.random() < 0.1:
        return
    headers = dict(case.headers or {})
    headers["X-Forwarded-For"] = f"198.{rng.randint(18, 19)}.{rng.randrange(256)}.{rng.randint(1, 254)}"
    case.headers = headers
