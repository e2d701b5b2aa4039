#!/usr/bin/env python3
"""Writes a text log for the report benchmark: N lines (default 1,000,000),
each a timestamp and a short message, three quarters of them errors or
retries, over four weeks with more capacity errors on weekday afternoons.
Seeded: the same file every time. Usage: genlog.py FILE [N] [OK_SHARE]:
OK_SHARE (0 to 1) makes that share of the lines successes instead (0.5: a
log where half the lines are requests that went well)."""
import random
import sys
from datetime import datetime, timedelta

rnd = random.Random(7)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
ok_share = float(sys.argv[3]) if len(sys.argv) > 3 else None
start = datetime(2026, 11, 2)
span = 28 * 24 * 3600
errors = [
    "ERROR request {r} to gpt-6-astra failed: Selected model is at capacity. Please try a different model.",
    "WARN retry {k} for request {r} after 503 Service Unavailable",
    "ERROR claude-opus-5-5 529 overloaded_error: Overloaded (request {r})",
    "ERROR request {r}: 429 Too Many Requests, rate limit reached for requests per min",
    "ERROR gemini-3-pro 503 UNAVAILABLE: The model is overloaded. Please try again later. ({r})",
    "WARN retrying request {r} in {k}s",
]
ok = [
    "INFO request {r} answered by gpt-6.1-sol in {k}ms",
    "INFO request {r} done, {k} tokens",
    "DEBUG pool stats: {k} inflight",
]
with open(sys.argv[1], "w") as f:
    for i in range(n):
        t = start + timedelta(seconds=i * span // n)
        busy = t.weekday() < 5 and 10 <= t.hour < 16
        share = (0.85 if busy else 0.7) if ok_share is None else 1 - ok_share
        if rnd.random() < share:
            msg = rnd.choice(errors)
        else:
            msg = rnd.choice(ok)
        f.write(t.strftime("%Y-%m-%d %H:%M:%S ") + msg.format(r=rnd.randrange(10**6), k=rnd.randrange(1, 100)) + "\n")
