"""The device check's figures: tests put numbers in the session's `figures`
dict; they are written as JSON to $BINDTHEM_GPU_FIGURES (if set) at the end."""

import json
import os

import pytest

_FIGURES = {}


@pytest.fixture(scope="session")
def figures():
    return _FIGURES


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("BINDTHEM_GPU_FIGURES")
    if path:
        with open(path, "w") as f:
            json.dump(_FIGURES, f, indent=1, sort_keys=True)
