"""The default ``jobs`` of a cold build (bindthem/_services/compile/cores.py):
the usable cores that other work leaves idle now. A machine is faked (its
clock, each CPU's busy share, this process's own CPU time) under the real
/proc/stat arithmetic; a build then splits only where cores are idle, and an
explicit jobs= is kept whatever the machine does."""

import importlib
import os

import pytest
from test_build_jobs import write

import bindthem
from bindthem._services import status as _status

cores = importlib.import_module("bindthem._services.compile.cores")


class Machine:
    """Two CPUs (0 and 1) busy at shares ``busy`` (of each CPU, by others),
    this process using ``own`` cores spread over both; ``sleep`` and
    ``monotonic`` run its clock, ``ticks`` says what /proc/stat would (100
    ticks a second)."""

    def __init__(self, busy=(0.0, 0.0), own=0.0):
        self.t, self.busy, self.own = 1000.0, list(busy), own
        self.idle, self.total, self.own_s = [0.0, 0.0], [0.0, 0.0], 0.0
        self.slept = []

    def run(self, seconds):
        for c in (0, 1):
            self.total[c] += 100 * seconds
            self.idle[c] += 100 * seconds * max(0.0, 1 - self.busy[c] - self.own / 2)
        self.own_s += self.own * seconds
        self.t += seconds

    def sleep(self, seconds):
        self.slept.append(seconds)
        own, self.own = self.own, 0.0  # a probe's sleep uses no CPU
        self.run(seconds)
        self.own = own

    def monotonic(self):
        return self.t

    def ticks(self, cpus):
        return {c: (round(self.idle[c]), round(self.total[c])) for c in cpus}


@pytest.fixture
def machine(monkeypatch):
    m = Machine()
    monkeypatch.setattr(cores, "_last", None)
    monkeypatch.setattr(cores, "_ticks", m.ticks)
    monkeypatch.setattr(cores, "_affinity", lambda: frozenset({0, 1}))
    monkeypatch.setattr(cores, "_quota", lambda: None)
    monkeypatch.setattr(cores, "_own_seconds", lambda: m.own_s)
    monkeypatch.setattr(cores, "monotonic", m.monotonic)
    monkeypatch.setattr(cores, "sleep", m.sleep)
    return m


def test_proc_stat_is_read_per_cpu(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text("cpu  9 9 9 9 9 0 0 0 0 0\n"
                    "cpu0 100 20 30 400 50 6 7 8 9 0\n"  # guest (9) is in user already
                    "cpu1 1 2 3 4 5 6 7 8 0 0\n"
                    "intr 1 2 3\nctxt 4\n")
    monkeypatch.setattr(cores, "STAT", str(stat))
    assert cores._ticks(frozenset({0, 1})) == {0: (450, 621), 1: (9, 36)}
    assert cores._ticks(frozenset({1})) == {1: (9, 36)}
    assert cores._ticks(frozenset({0, 2})) is None  # a usable CPU it does not list
    monkeypatch.setattr(cores, "STAT", str(tmp_path / "none"))
    assert cores._ticks(frozenset({0})) is None


def test_an_idle_machine_takes_every_core(machine):
    assert cores.default_jobs() == 2
    assert machine.slept == [cores.PROBE]  # the first window is slept


def test_a_busy_other_core_makes_one_job(machine):
    machine.busy = [0.0, 1.0]
    assert cores.default_jobs() == 1
    machine.busy = [0.5, 0.5]  # one core's worth, spread over both
    assert cores.default_jobs() == 1


def test_a_core_counts_when_mostly_idle(machine):
    machine.busy = [0.0, 1 - cores.IDLE_SHARE - 0.15]
    assert cores.default_jobs() == 2
    machine.busy = [0.0, 1 - cores.IDLE_SHARE + 0.15]
    assert cores.default_jobs() == 1


def test_the_window_since_the_last_build_and_our_own_work_not_counted(machine):
    assert cores.default_jobs() == 2
    machine.own = 2.0  # the previous build's two units took both cores
    machine.run(3.0)
    assert cores.default_jobs() == 2
    assert machine.slept == [cores.PROBE]  # the previous build's window: nothing slept
    machine.own, machine.busy = 1.0, [0.0, 0.5]  # one unit, and others on half a core
    machine.run(3.0)
    assert cores.default_jobs() == 1
    machine.run(cores.WINDOW_MAX + 1)  # too old to say what is idle now: measured again
    machine.busy = [0.0, 0.0]
    assert cores.default_jobs() == 2
    assert len(machine.slept) == 2


def test_without_proc_stat_the_load_average_stands_for_the_busy_cores(machine, monkeypatch):
    monkeypatch.setattr(cores, "_ticks", lambda cpus: None)
    monkeypatch.setattr(cores.os, "getloadavg", lambda: (1.0, 0.0, 0.0))
    assert cores.default_jobs() == 1
    monkeypatch.setattr(cores.os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    assert cores.default_jobs() == 2

    def no_loadavg():
        raise OSError
    monkeypatch.setattr(cores.os, "getloadavg", no_loadavg)
    assert cores.default_jobs() == 2


def test_one_usable_core_is_one_job_without_a_probe(machine, monkeypatch):
    monkeypatch.setattr(cores, "_affinity", lambda: frozenset({0}))
    assert cores.default_jobs() == 1
    assert machine.slept == []


@pytest.mark.parametrize("lines, files, quota", [
    ("0::/box\n", {"box/cpu.max": "150000 100000\n"}, 1.5),
    ("0::/box\n", {"box/cpu.max": "max 100000\n"}, None),
    ("0::/\n", {}, None),
    ("4:memory:/x\n1:cpu,cpuacct:/box\n0::/\n",
     {"cpu,cpuacct/box/cpu.cfs_quota_us": "50000\n",
      "cpu,cpuacct/box/cpu.cfs_period_us": "100000\n"}, 0.5),
    ("1:cpu,cpuacct:/box\n", {"cpu,cpuacct/box/cpu.cfs_quota_us": "-1\n",
                              "cpu,cpuacct/box/cpu.cfs_period_us": "100000\n"}, None),
])
def test_a_cgroup_quota_caps_the_usable_cores(tmp_path, monkeypatch, lines, files, quota):
    (tmp_path / "cgroup").write_text(lines)
    for name, text in files.items():
        os.makedirs(os.path.dirname(tmp_path / "fs" / name), exist_ok=True)
        (tmp_path / "fs" / name).write_text(text)
    assert cores._quota(str(tmp_path / "fs"), str(tmp_path / "cgroup")) == quota
    monkeypatch.setattr(cores, "_affinity", lambda: frozenset(range(4)))
    monkeypatch.setattr(cores, "_quota", lambda: quota)
    assert cores.usable_cores() == (4 if quota is None else 1 if quota < 1 else 2)


def test_the_real_proc_stat_reads(monkeypatch):
    if not os.path.exists(cores.STAT):
        pytest.skip("no /proc/stat")
    ticks = cores._ticks(cores._affinity())
    assert ticks and all(0 <= idle <= total for idle, total in ticks.values())
    assert 1 <= cores.default_jobs() <= cores.usable_cores()


@pytest.fixture
def units(monkeypatch):
    """How many units each compile of a header ran (the prelude's aside)."""
    seen = []
    run_all = _status.run_all

    def counting(cmds, *a, **k):
        if not any(c[-1].endswith(".gch") for c in cmds):
            seen.append(len(cmds))
        return run_all(cmds, *a, **k)
    monkeypatch.setattr(_status, "run_all", counting)
    return seen


def test_a_build_splits_only_onto_idle_cores(tmp_path, machine, units):
    h, y = write(tmp_path)
    machine.busy = [0.0, 1.0]
    bindthem.build(h, y, cache_dir=str(tmp_path / "busy"))
    assert units == [1]
    machine.busy = [0.0, 0.0]
    units.clear()
    bindthem.build(h, y, cache_dir=str(tmp_path / "idle"))
    assert units[0] == 2  # two units, then their link
    units.clear()
    machine.busy = [0.0, 1.0]
    bindthem.build(h, y, cache_dir=str(tmp_path / "explicit"), jobs=2)  # as given
    assert units[0] == 2


def test_a_warm_build_does_not_probe(tmp_path, monkeypatch):
    h, y = write(tmp_path)
    bindthem.build(h, y, cache_dir=str(tmp_path / "c"), jobs=1)

    def probe():
        raise AssertionError("probed")
    monkeypatch.setattr(cores, "default_jobs", probe)
    bindthem.build(h, y, cache_dir=str(tmp_path / "c"))
