"""Run ``mypy.stubtest`` on generated stubs against runtime Libraries.

stubtest imports the module it checks by name; a bindthem Library is made
at run time, not imported. This runner builds each Library the spec names
(see _libs.py), puts it into ``sys.modules`` under the stub's module name,
and runs stubtest in-process, with the stub directory as ``mypy_path`` and
no allowlist:

    python stubtest_runner.py SPEC.json

Exits with stubtest's status.
"""

import os
import sys
import tempfile

from mypy.stubtest import parse_options, test_stubs

from _libs import build_all, load_spec


def main(spec_path):
    spec = load_spec(spec_path)
    build_all(spec)
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "mypy.ini")
        with open(config, "w") as f:
            path = [spec["stubs"]] + spec.get("mypy_path", [])
            f.write("[mypy]\nmypy_path = %s\n" % ",".join(path))
        args = [m["name"] for m in spec["modules"]] + spec.get("check_also", [])
        args += ["--mypy-config-file", config]
        return test_stubs(parse_options(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
