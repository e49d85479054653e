#!/usr/bin/env python3
"""The closing line of scripts/test.sh, and its verdict.

    test-summary.py BUILD_DIR [--rdma-skipped REASON] [--meson-failed WHAT]...

Reads this run's meson logs in BUILD_DIR/meson-logs: testlog.json (one line
per test) and testlog.junit.xml (the cases of each GoogleTest binary, which
meson keeps for test()s with protocol 'gtest'), and the same two of the
'rdma' setup when the RDMA suites ran. Counts GoogleTest cases one by one, and
any other test (netfault_test.sh, a binary that crashed before its report) as
one. Meson 1.0 reports a binary whose cases called GTEST_SKIP as OK; the
junit report still marks each such case <skipped>, so it is counted here.

Prints each failure and each skip with its reason, then
    tests: P passed, F failed, S skipped
and exits 1 iff something failed, a meson run failed (--meson-failed), or a
skip is not in ALLOWED_SKIPS below. --rdma-skipped REASON: the RDMA suites did
not run, for REASON (a limit of this host); they count as skipped, allowed.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

# Skips that are limits of the machine, not of the build or the code. Each is
# (a regular expression searched in "test case: message", the reason it is
# allowed). Anything else that skips fails the run: a case that cannot run on
# the CI machine is a case CI does not test.
ALLOWED_SKIPS = [
    (r"FUSE_DIRECT_IO_ALLOW_MMAP needs Linux >= 6\.6",
     "the kernel is older than 6.6, which added FUSE_DIRECT_IO_ALLOW_MMAP"),
    (r"Units\.VerifyCleanly: (?s:.*)systemd-analyze not found",
     "no systemd on this machine (a container without the systemd package)"),
]


def read_json_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def junit_cases(path):
    """{test name: [(case name, "pass"|"fail"|"skip", message)]} from meson's junit report."""
    cases = {}
    if not os.path.exists(path):
        return cases
    for suite in ET.parse(path).getroot().iter("testsuite"):
        # Meson names a gtest binary's suites "<project>.<test>.<gtest suite>".
        parts = suite.get("name", "").split(".", 2)
        if len(parts) != 3:
            continue
        test, gsuite = parts[1], parts[2]
        short = test.rsplit(" / ", 1)[-1]  # "stripefs:unit / oss_test" -> "oss_test"
        for case in suite.iter("testcase"):
            name = f"{short} {gsuite}.{case.get('name')}"
            fail = case.find("failure") if case.find("failure") is not None else case.find("error")
            skip = case.find("skipped")
            if fail is not None:
                cases.setdefault(test, []).append((name, "fail", fail.get("message", "")))
            elif skip is not None:
                cases.setdefault(test, []).append((name, "skip", skip.get("message", "")))
            elif case.get("status") == "notrun":
                cases.setdefault(test, []).append((name, "skip", "disabled"))
            else:
                cases.setdefault(test, []).append((name, "pass", ""))
    return cases


def skip_lines(stdout):
    """A non-gtest test's reasons for skipping: its output lines that say SKIP."""
    lines = [l.strip() for l in (stdout or "").splitlines() if "SKIP" in l]
    return "; ".join(lines) or "exit status 77"


def tally(logs, base):
    """[(name, outcome, message)] for one meson run's logs (base: testlog or testlog-rdma)."""
    cases = junit_cases(os.path.join(logs, base + ".junit.xml"))
    out = []
    for t in read_json_lines(os.path.join(logs, base + ".json")):
        result, mine = t["result"], cases.get(t["name"], [])
        name = t["name"].rsplit(" / ", 1)[-1]
        out += mine
        if result in ("OK", "EXPECTEDFAIL"):
            if not mine:
                out.append((name, "pass", ""))
        elif result == "SKIP":
            out.append((name, "skip", skip_lines(t.get("stdout"))))
        elif not any(o == "fail" for _, o, _ in mine):
            # Crashed, timed out, or failed after its cases passed (a leak check, a teardown).
            out.append((name, "fail", f"{result} (exit status {t.get('returncode')})"))
    return out


def one_line(message, limit=240):
    text = " ".join(message.split())
    return text if len(text) <= limit else text[:limit] + "..."


def allowed(name, message):
    for pattern, reason in ALLOWED_SKIPS:
        if re.search(pattern, f"{name}: {message}"):
            return reason
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--rdma-skipped", metavar="REASON")
    ap.add_argument("--rdma-tests", default="", help="space-separated names of the RDMA tests")
    ap.add_argument("--meson-failed", action="append", default=[], metavar="WHAT")
    args = ap.parse_args()
    logs = os.path.join(args.build_dir, "meson-logs")

    results = tally(logs, "testlog")
    bad = list(args.meson_failed)
    if not results:
        bad.append("no test results in " + os.path.join(logs, "testlog.json"))
    if args.rdma_skipped:
        for t in args.rdma_tests.split():
            results.append((t, "skip", args.rdma_skipped))
    else:
        rdma = tally(logs, "testlog-rdma")
        if not rdma:
            bad.append("the RDMA run left no results in " + os.path.join(logs, "testlog-rdma.json"))
        results += rdma

    passed = sum(o == "pass" for _, o, _ in results)
    failed = [(n, m) for n, o, m in results if o == "fail"]
    skipped = [(n, m) for n, o, m in results if o == "skip"]
    for n, m in failed:
        print(f"test.sh: FAILED: {n}: {one_line(m)}")
    unexpected = 0
    for n, m in skipped:
        if args.rdma_skipped and m == args.rdma_skipped:
            why = "an environment limit"
        else:
            why = allowed(n, m)
        if why:
            print(f"test.sh: skipped (allowed: {why}): {n}: {one_line(m)}")
        else:
            print(f"test.sh: SKIPPED, NOT ALLOWED (fix the machine or the test): {n}: {one_line(m)}")
            unexpected += 1
    if unexpected:
        bad.append(f"{unexpected} skipped that must run here")
    for b in bad:
        print(f"test.sh: FAILED: {b}")
    print(f"tests: {passed} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
