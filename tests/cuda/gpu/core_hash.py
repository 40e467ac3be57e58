"""The source hash of bindthem._core: every file under csrc/ and setup.py.

    python tests/cuda/gpu/core_hash.py            prints it
    python tests/cuda/gpu/core_hash.py --check    exits 0 when bindthem/_libs/core.sha256
                                                  (written by prepare_device.sh beside the
                                                  _core it built) holds this tree's hash

run_gpu_check.sh uses a carried _core only when it imports and --check
passes; a _core built from other sources is rebuilt there.
"""

import hashlib
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
STAMP = os.path.join(REPO, "bindthem", "_libs", "core.sha256")


def core_hash():
    h = hashlib.sha256()
    paths = [os.path.join(REPO, "setup.py")]
    for top, dirs, files in os.walk(os.path.join(REPO, "csrc")):
        dirs.sort()
        paths += [os.path.join(top, f) for f in sorted(files)]
    for path in paths:
        h.update(os.path.relpath(path, REPO).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        try:
            stamp = open(STAMP).read().split()[0]
        except (OSError, IndexError):
            sys.exit("no %s: a _core of unknown sources" % STAMP)
        if stamp != core_hash():
            sys.exit("the carried _core was built from other sources (%s, this tree %s)"
                     % (stamp[:12], core_hash()[:12]))
        print("the carried _core's sources are this tree's (%s)" % stamp[:12])
    else:
        print(core_hash())
