"""Summary of the device check: WORK/summary.json and summary.md (and in
$OUT when set), from pytest's JUnit XML, the tests' figures and the build
manifest. Prints the markdown.

    summarize.py WORK --pytest-status RC     after the tests ran: exits 0
                                             only when the check passed
    summarize.py WORK --failed "why"         a step before them failed
                                             (exits 0 once it is written)

The one skip reason allowed is an optional library (CuPy, PyTorch,
ml_dtypes: NumPy's bfloat16) or optional hardware (a second GPU) "not
installed"; any other skip ("no build", "no CUDA device", a feature "not
built", ...) fails the check, as does a run with no test at all.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED = re.compile(r"^(CuPy|PyTorch|ml_dtypes)\b[^:]*\bnot installed\b"
                     r"|\(optional hardware not installed\)")


def allowed_skip(why):
    """Whether a skip reason (pytest's message, 'path:line: reason' or the
    reason alone) is an optional library or hardware not installed."""
    reason = re.sub(r"^\S+:\d+: ", "", why.strip())
    return bool(ALLOWED.search(reason))


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _cases(junit):
    out = []
    if not os.path.exists(junit):
        return out
    for tc in ET.parse(junit).getroot().iter("testcase"):
        name = tc.get("name")
        state, why = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                state, why = tag, (el.get("message") or "").strip()
                break
        out.append({"test": name, "state": state, "why": why, "time": float(tc.get("time", 0))})
    return out


def _markdown(s):
    lines = ["# bindthem device check: %s" % ("PASSED" if s["ok"] else "FAILED"), ""]
    if s.get("failed_step"):
        lines += ["Failed before the tests: %s" % s["failed_step"], ""]
    if s.get("build"):
        lines += ["Kernels built by: %s" % s["build"].get("compiler"), ""]
    counts = {}
    for c in s["tests"]:
        counts[c["state"]] = counts.get(c["state"], 0) + 1
    if counts:
        lines += ["Tests: " + ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())), ""]
    fig = s.get("figures") or {}
    launch, bw = fig.get("launch") or {}, fig.get("bandwidth") or {}
    if launch.get("host_us"):
        lines += ["| launch, per launch (median of interleaved bursts) | host µs | event µs |",
                  "|---|---|---|"]
        lines += ["| %s | %.3f | %.3f |" % (k, v, launch["event_us"].get(k, float("nan")))
                  for k, v in launch["host_us"].items()]
        lines.append("")
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
    bad = [c for c in s["tests"] if c["state"] in ("failure", "error")]
    if bad:
        lines += ["", "## Failed"] + ["- %s: %s" % (c["test"], c["why"][:300]) for c in bad]
    skipped = [c for c in s["tests"] if c["state"] == "skipped"]
    if skipped:
        lines += ["", "## Skipped"] + [
            "- %s: %s%s" % (c["test"], c["why"],
                            "" if allowed_skip(c["why"]) else " (FAILS the check)")
            for c in skipped]
    return "\n".join(lines) + "\n"


def main(argv):
    work = argv[1]
    summary = {"build": _load(os.path.join(work, "manifest.json")),
               "figures": _load(os.path.join(work, "figures.json")),
               "tests": _cases(os.path.join(work, "junit.xml"))}
    if "--failed" in argv:
        summary["failed_step"] = argv[argv.index("--failed") + 1]
        summary["ok"] = False
    else:
        rc = int(argv[argv.index("--pytest-status") + 1])
        bad_skips = [c for c in summary["tests"] if c["state"] == "skipped"
                     and not allowed_skip(c["why"])]
        summary["pytest_status"] = rc
        summary["ok"] = rc == 0 and not bad_skips and bool(summary["tests"])
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
