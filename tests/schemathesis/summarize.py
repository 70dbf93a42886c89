"""Reads a Schemathesis 4.x run's JSON and NDJSON reports and prints what the console hides.

    python3 summarize.py REPORT.json REPORT.ndjson [--min-link-steps N]

Prints the number of generated test cases (JSON report: test_cases.generated), each phase's
status, the stateful steps that followed an OpenAPI link (NDJSON: ScenarioFinished of phase
"stateful" -> recorder.cases.*.transition, whose is_inferred tells a schema link from an inferred
one), and last a plain "N passed, N failed" line. Exits 1 when the run failed, when the stateful
phase did not run, or when fewer than N steps (default 1) followed a link written in the schema.
Standard library only.
"""

import argparse
import collections
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("json_report")
    parser.add_argument("ndjson_report")
    parser.add_argument("--min-link-steps", type=int, default=1)
    args = parser.parse_args()

    with open(args.json_report, encoding="utf-8") as f:
        report = json.load(f)
    cases = report["test_cases"]
    phases = {name: phase["status"] for name, phase in report["phases"].items()}

    explicit: collections.Counter[str] = collections.Counter()
    inferred = 0
    with open(args.ndjson_report, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished or finished.get("phase") != "stateful":
                continue
            for case in finished.get("recorder", {}).get("cases", {}).values():
                transition = case.get("transition")
                if not transition or not case.get("is_transition_applied", True):
                    continue
                if transition.get("is_inferred"):
                    inferred += 1
                else:
                    explicit[transition["id"]] += 1

    generated = cases["generated"]
    failed = cases["with_failures"] + cases["errored"]
    print(f"schemathesis: {generated} test cases generated, exit code {report['exit_code']}")
    print(
        "schemathesis: phases " + ", ".join(f"{name}={status}" for name, status in phases.items())
    )
    links = sum(explicit.values())
    print(
        f"schemathesis: stateful steps that followed a schema link: {links},"
        f" an inferred link: {inferred}"
    )
    for link, count in sorted(explicit.items()):
        print(f"  {count:5d}  {link}")
    problems = []
    if report["exit_code"] != 0:
        problems.append(f"schemathesis exited {report['exit_code']}")
    if phases.get("stateful") not in ("success", "failure"):
        problems.append(f"stateful phase did not run ({phases.get('stateful')})")
    if sum(explicit.values()) < args.min_link_steps:
        problems.append(f"fewer than {args.min_link_steps} stateful steps followed a schema link")
    for problem in problems:
        print(f"schemathesis: FAILED: {problem}", file=sys.stderr)
    print(f"{generated - failed} passed, {failed if failed or not problems else 1} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
