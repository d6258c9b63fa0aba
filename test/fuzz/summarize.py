"""A compact summary of a `make fuzz` NDJSON report: requests by operation and status, and findings.

    python3 test/fuzz/summarize.py [REPORT_DIR_OR_NDJSON] [--path-regex REGEX] [--failures-only]

REPORT_DIR_OR_NDJSON defaults to .cache/fuzz/report (its newest ndjson-*.ndjson). Operations are
named by their document label (`POST /api/v1/sqlite/query`); each line gives how many requests got
each status, and the share that got a 2xx. Findings are grouped by check and operation, with one
example (status and message) each. Only the standard library: it runs with any python3.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys


def ndjson_file(arg: str) -> str:
    if os.path.isdir(arg):
        files = sorted(glob.glob(os.path.join(arg, "ndjson-*.ndjson")), key=os.path.getmtime)
        if not files:
            sys.exit(f"no ndjson-*.ndjson in {arg}")
        return files[-1]
    return arg


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", nargs="?", default=".cache/fuzz/report")
    parser.add_argument("--path-regex", default="")
    parser.add_argument("--failures-only", action="store_true")
    args = parser.parse_args()
    wanted = re.compile(args.path_regex)

    statuses: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    seen_interactions: set[str] = set()
    for line in open(ndjson_file(args.report), encoding="utf-8"):
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished.get("recorder") or {}
        label = recorder.get("label", "?")
        cases = recorder.get("cases", {})
        for case_id, interaction in (recorder.get("interactions") or {}).items():
            if case_id in seen_interactions:
                continue
            seen_interactions.add(case_id)
            case = (cases.get(case_id) or {}).get("value", {})
            op = f"{case.get('method', '?')} {case.get('path', label)}" if case else label
            if not wanted.search(op):
                continue
            if case and not label.startswith(f"{case.get('method')} "):
                op = "(probes with undocumented methods)"
            response = interaction.get("response") or {}
            statuses[op][response.get("status_code", "error")] += 1
        for case_id, checks in (recorder.get("checks") or {}).items():
            for check in checks:
                if check.get("status") != "failure":
                    continue
                case = (cases.get(case_id) or {}).get("value", {})
                op = f"{case.get('method', '?')} {case.get('path', label)}" if case else label
                if not wanted.search(op):
                    continue
                failure = check.get("failure_info") or {}
                inner = failure.get("failure") or {}
                title = inner.get("title") or check.get("name")
                message = (inner.get("message") or "").replace("\n", " ")[:300]
                response = ((recorder.get("interactions") or {}).get(case_id) or {}).get("response") or {}
                findings[(check.get("name", "?"), op)].append(
                    f"{title}: {message} [status {response.get('status_code', '?')}, case {case_id}]"
                )

    if not args.failures_only:
        total = ok = 0
        print(f"{'operation':58} {'2xx':>6} {'reqs':>6}  statuses")
        for op in sorted(statuses):
            counts = statuses[op]
            n = sum(counts.values())
            good = sum(v for k, v in counts.items() if isinstance(k, int) and 200 <= k < 300)
            total, ok = total + n, ok + good
            spread = " ".join(f"{k}:{v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
            print(f"{op:58} {good:6d} {n:6d}  {spread}")
        print(f"{'all':58} {ok:6d} {total:6d}  ({(100 * ok / total) if total else 0:.1f}% 2xx)")
    print(f"\nfindings: {sum(len(v) for v in findings.values())} failed checks in {len(findings)} groups")
    for (check, op), examples in sorted(findings.items()):
        print(f"- {check} on {op}: {len(examples)}x, e.g. {examples[0]}")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
