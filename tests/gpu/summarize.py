"""Summary of the device check: WORK/summary.json and summary.md (and in
$OUT when set), from pytest's JUnit XML, the tests' figures and the build
manifest. Prints the markdown.

    summarize.py WORK --pytest-status RC     after the tests ran: exits 0
                                             only when the check passed
    summarize.py WORK --failed "why"         a step before them failed
                                             (exits 0 once it is written)

Skips are allowed only for "CuPy not installed", "PyTorch not installed",
"ml_dtypes not installed" (NumPy's bfloat16) and bindthem features "not
built" (listed); any other skip (no build, no device) fails the check.
"""

import json
import os
import sys
import xml.etree.ElementTree as ET

ALLOWED = ("CuPy not installed", "PyTorch not installed", "ml_dtypes not installed", "not built")


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
    launch, bw = fig.get("launch"), fig.get("bandwidth")
    if launch:
        lines += ["| launch (host time per launch, median of bursts) | µs |", "|---|---|"]
        lines += ["| %s | %s |" % (k, "%.3f" % v if isinstance(v, float) else v)
                  for k, v in launch.items()]
        lines.append("")
    if bw:
        lines += ["| axpy float32 | GB/s |", "|---|---|"]
        lines += ["| %s | %s |" % (k, "%.1f" % v if isinstance(v, float) else v)
                  for k, v in bw.items()]
        lines.append("")
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
                            "" if any(a in c["why"] for a in ALLOWED) else " (FAILS the check)")
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
                     and not any(a in c["why"] for a in ALLOWED)]
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
