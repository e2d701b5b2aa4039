#!/usr/bin/env python3
"""The field guide's script, as its readers run it: capacity, error and retry
lines of a text log counted per weekday and hour. The baseline that
`spillway report --text-log` is measured against (BENCHMARKS.md)."""
import re
import sys
from collections import Counter
from datetime import datetime

pattern = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}):.*(capacity|error|retry)", re.IGNORECASE)
counts = Counter()
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        m = pattern.search(line)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H")
            counts[t.strftime("%A %H:00")] += 1
for key, n in sorted(counts.items()):
    print(f"{key}\t{n}")
