#!/usr/bin/env python3
"""Writes a spillway event log for the report benchmark: N records (default
1,000,000) over four weeks (or DAYS), as the gateway writes them, with capacity
errors more likely on weekday afternoons and for large requests. Seeded:
the same file every time. Usage: genevents.py FILE [N [DAYS]]"""
import json
import random
import sys
from datetime import datetime, timedelta, timezone

rnd = random.Random(7)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
start = datetime(2026, 11, 2, tzinfo=timezone.utc)
days = int(sys.argv[3]) if len(sys.argv) > 3 else 28
span = days * 24 * 3600
models = ["gpt-6-astra", "gpt-6.1-sol", "claude-opus-5-5", "gemini-3-pro"]
with open(sys.argv[1], "w") as f:
    req = 0
    for i in range(n):
        t = start + timedelta(seconds=i * span // n)
        model = rnd.choice(models)
        size = rnd.randrange(500, 120000)
        p = 0.05 + (0.25 if t.weekday() < 5 and 13 <= t.hour < 18 else 0) + (0.1 if size > 64000 else 0)
        cls = "capacity" if rnd.random() < p else ("rate_limit" if rnd.random() < 0.02 else "ok")
        req += 1
        rec = {"ts": t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "request_id": "req-%d" % req, "attempt": 1, "source": "gateway",
               "provider": "openai", "model": model, "requested_model": model, "endpoint": "/v1/responses",
               "status": 503 if cls == "capacity" else (429 if cls == "rate_limit" else 200), "class": cls,
               "latency_ms": rnd.randrange(30, 4000), "ttfb_ms": rnd.randrange(30, 900), "req_bytes": size * 4,
               "est_input_tokens": size, "output_tokens": 0 if cls != "ok" else rnd.randrange(10, 2000), "stream": True,
               "fallback_from": "", "wait_ms": 0, "error": "" if cls == "ok" else "Selected model is at capacity."}
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")
