#!/usr/bin/env python3
"""Per swept point, the model's error on a `tpace tune` results.csv that predates
its `error` column: writes errors.csv next to it, one row per configuration that
ran, error = (predicted - measured) / measured (negative: the model is optimistic).

    bench/tune_errors.py bench/tune-jacobi2d/results.csv ...
"""
import csv
import os
import sys

for path in sys.argv[1:]:
    rows = [r for r in csv.DictReader(open(path)) if r["status"] == "ok"]
    out = os.path.join(os.path.dirname(path), "errors.csv")
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["schedule", "k", "b", "streams", "seconds", "predicted_seconds", "error"])
        for r in rows:
            m, p = float(r["seconds"]), float(r["predicted_seconds"])
            w.writerow([r["schedule"], r["k"], r["b"], r["streams"], r["seconds"], r["predicted_seconds"], f"{(p - m) / m:+.3f}"])
    print(f"{out}: {len(rows)} points")
