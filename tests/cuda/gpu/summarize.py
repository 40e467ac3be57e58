"""Summary of the device check: WORK/summary.json and summary.md (and in
$OUT when set), from pytest's JUnit XML, the list of tests collected
(isolation.py's expected.json), the hang probe's hangs.json, the tests'
figures and the build manifest. Prints the markdown.

    summarize.py WORK --pytest-status RC --probe-status RC [--test-dir DIR]
                               (run from the repository root)
                               after the tests and the probe ran: exits 0
                               only when the check passed
    summarize.py WORK --failed "why"
                               a step before them failed (exits 0 once it
                               is written)

The check passes only when nothing is wrong; each of these is, and the
summary's "Why it failed" names it: pytest's status not 0 (124, 137:
killed at its limit); no JUnit XML; no list of the tests collected, or no
test at all; a test collected that has no result (not run); a test failed,
hung, crashed or not started for want of budget; a skip for any reason but
an optional library (CuPy, PyTorch, ml_dtypes: NumPy's bfloat16) or
optional hardware (a second GPU) "not installed"; a test_*.py file of
--test-dir with no test collected; no hang-probe results, or a counted
probe case (DRIVER_ONLY cases of probe_hangs.py are shown, not counted)
that did not pass.
"""

import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED = re.compile(r"^(CuPy|PyTorch|ml_dtypes)\b[^:]*\bnot installed\b"
                     r"|\(optional hardware not installed\)")
KILLED = (124, 137)


def allowed_skip(why):
    """Whether a skip reason (pytest's message, 'path:line: reason' or the
    reason alone) is an optional library or hardware not installed."""
    reason = re.sub(r"^\S+:\d+: ", "", why.strip())
    return bool(ALLOWED.search(reason))


def junit_key(nodeid):
    """(classname, name) of a node id, as pytest's junitxml writes them."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _cases(junit):
    out = []
    for tc in ET.parse(junit).getroot().iter("testcase"):
        state, why = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                state, why = tag, (el.get("message") or "").strip()
                break
        why = why[len("Failed: "):] if why.startswith("Failed: ") else why  # pytest.fail's
        if state in ("failure", "error") and why.startswith(("HUNG", "CRASHED", "not run")):
            state = why.split(":")[0].split()[0].lower()
            state = "budget" if state == "not" else state
        out.append({"test": tc.get("name"), "classname": tc.get("classname"), "state": state,
                    "why": why, "time": float(tc.get("time", 0))})
    return out


def _test_problems(s, expected, test_dir):
    problems, tests = [], s["tests"]
    if expected is None:
        problems.append("no list of the tests collected (expected.json): pytest did not "
                        "collect, or ran without tests/cuda/gpu/isolation.py")
        expected = []
    elif not expected:
        problems.append("no test was collected")
    have = {(c["classname"], c["test"]) for c in tests}
    s["not_run"] = [t for t in expected if junit_key(t) not in have]
    if s["not_run"]:
        problems.append("%d tests collected but never run (no result): %s"
                        % (len(s["not_run"]), ", ".join(s["not_run"][:20])))
    for state, what in (("hung", "hung (killed past their limit)"), ("crashed", "crashed"),
                        ("budget", "not started: the budget was spent"),
                        ("failure", "failed"), ("error", "errored")):
        bad = [c["test"] for c in tests if c["state"] == state]
        if bad:
            problems.append("%d %s: %s" % (len(bad), what, ", ".join(bad[:20])))
    bad_skips = [c["test"] for c in tests if c["state"] == "skipped"
                 and not allowed_skip(c["why"])]
    if bad_skips:
        problems.append("%d skipped for a reason that is not an optional library or GPU "
                        "missing: %s" % (len(bad_skips), ", ".join(bad_skips)))
    if test_dir:
        files = {t.split("::")[0] for t in expected}
        for path in sorted(glob.glob(os.path.join(test_dir, "test_*.py"))):
            rel = os.path.relpath(path)  # node ids are the repository root's, the cwd
            if rel not in files:
                problems.append("%s: no test collected from it" % rel)
    return problems


def _probe_problems(s):
    if s["probe"] is None:
        return ["no hang-probe results (hangs.json): the probe did not run or did not finish"]
    bad = [r["case"] for r in s["probe"] if r["counts"] and r["verdict"] != "passed"]
    return ["hang probe: %d cases did not pass: %s" % (len(bad), "; ".join(bad))] if bad else []


def verdict(s, rc, probe_rc, expected, test_dir):
    problems = []
    if rc in KILLED:
        problems.append("pytest was killed at its limit (status %d): the tests ran past their "
                        "share of the budget" % rc)
    elif rc != 0:
        problems.append("pytest exited with status %d" % rc)
    if not s["junit"]:
        problems.append("no JUnit XML: pytest did not finish")
    problems += _test_problems(s, expected, test_dir)
    if probe_rc in KILLED:
        problems.append("the hang probe was killed at its limit (status %d)" % probe_rc)
    problems += _probe_problems(s)
    return problems


def _figures_md(s):
    lines = []
    fig = s.get("figures") or {}
    launch, bw = fig.get("launch") or {}, fig.get("bandwidth") or {}
    if launch.get("host_us"):
        lines += ["| launch, per launch (median of interleaved bursts) | host µs | event µs |",
                  "|---|---|---|"]
        lines += ["| %s | %.3f | %.3f |" % (k, v, launch["event_us"].get(k, float("nan")))
                  for k, v in launch["host_us"].items()]
        lines.append("")
    else:
        how = [c["state"] + (": " + c["why"][:200] if c["why"] else "") for c in s["tests"]
               if c["test"] == "test_launch_overhead"]
        lines += ["Launch overhead against a direct cuLaunchKernel: NOT MEASURED (%s)"
                  % (how[0] if how else "test_launch_overhead has no result"), ""]
    if bw.get("GBps"):
        lines += ["| axpy float32 (CUDA events) | GB/s |", "|---|---|"]
        lines += ["| %s | %.1f |" % (k, v) for k, v in bw["GBps"].items()]
        lines.append("")
    targets = launch.get("targets", []) + bw.get("targets", [])
    if targets:
        lines += ["Targets (printed, not asserted):"] + ["- " + t for t in targets] + [""]
    for key in ("launch_errors_name_the_kernel", "launch_errors", "driver"):
        if key in fig:
            lines.append("- %s: %s" % (key, fig[key]))
    return lines


def _markdown(s):
    lines = ["# bindthem device check: %s" % ("PASSED" if s["ok"] else "FAILED"), ""]
    if s["problems"]:
        lines += ["## Why it failed"] + ["- " + p for p in s["problems"]] + [""]
    if s.get("build"):
        lines += ["Kernels built by: %s" % s["build"].get("compiler"), ""]
    counts = {}
    for c in s["tests"]:
        counts[c["state"]] = counts.get(c["state"], 0) + 1
    if counts:
        lines += ["Tests: " + ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())), ""]
    lines += _figures_md(s)
    bad = [c for c in s["tests"] if c["state"] not in ("passed", "skipped")]
    if bad:
        lines += ["", "## Failed"] + ["- %s [%s]: %s" % (c["test"], c["state"], c["why"][:300])
                                      for c in bad]
    skipped = [c for c in s["tests"] if c["state"] == "skipped"]
    if skipped:
        lines += ["", "## Skipped"] + [
            "- %s: %s%s" % (c["test"], c["why"],
                            "" if allowed_skip(c["why"]) else " (FAILS the check)")
            for c in skipped]
    if s["probe"]:
        lines += ["", "## Hang probe (probe_hangs.py; hangs.log has the output and stacks)"] + [
            "- %s: %s in %s s, last step: %s%s" % (
                r["case"], r["verdict"], r["took"], r["last_step"] or "(none)",
                "" if r["counts"] else " (the driver's own calls: shown, not counted)")
            for r in s["probe"]]
    return "\n".join(lines) + "\n"


def _arg(argv, name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv):
    work = argv[1]
    junit = os.path.join(work, "junit.xml")
    summary = {"build": _load(os.path.join(work, "manifest.json")),
               "figures": _load(os.path.join(work, "figures.json")),
               "junit": os.path.exists(junit),
               "tests": _cases(junit) if os.path.exists(junit) else [],
               "probe": _load(os.path.join(work, "hangs.json"))}
    if "--failed" in argv:
        summary["failed_step"] = _arg(argv, "--failed")
        summary["problems"] = ["a step before the tests failed: " + summary["failed_step"]]
    else:
        summary["pytest_status"] = int(_arg(argv, "--pytest-status"))
        summary["probe_status"] = int(_arg(argv, "--probe-status", "0"))
        summary["problems"] = verdict(summary, summary["pytest_status"],
                                      summary["probe_status"],
                                      _load(os.path.join(work, "expected.json")),
                                      _arg(argv, "--test-dir"))
    summary["ok"] = not summary["problems"]
    md = _markdown(summary)
    for d in filter(None, [work, os.environ.get("OUT")]):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        with open(os.path.join(d, "summary.md"), "w") as f:
            f.write(md)
    print(md)
    return 0 if summary["ok"] or "failed_step" in summary else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
