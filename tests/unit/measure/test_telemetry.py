"""The telemetry sampler against a fake NVML (the binding replaced at telemetry.load_nvml), RAPL in a fake
sysfs tree, the "not measured" path of a machine without a GPU, and the energy arithmetic."""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from specsweep.measure import telemetry


class NotSupported(Exception):
    pass


class FakeNvml:
    """The calls telemetry makes of pynvml; power in mW, the energy counter in mJ following real time."""

    NVMLError = Exception
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    NVML_FI_DEV_POWER_INSTANT = 186

    def __init__(self, watts=(300.0, 200.0), energy_counter=True, reasons=0, processes=(), instant=None):
        self.watts, self.energy_counter, self.reasons, self.running = watts, energy_counter, reasons, processes
        self.instant = instant  # instantaneous watts per GPU; None: the GPU has no such field
        self.started = time.monotonic()
        self.threads: set[int] = set()

    def nvmlDeviceGetCount(self):
        return len(self.watts)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetPowerUsage(self, h):
        self.threads.add(threading.get_ident())
        return int(1000 * self.watts[h])

    def nvmlDeviceGetFieldValues(self, h, fields):
        assert fields == [self.NVML_FI_DEV_POWER_INSTANT]
        found = self.instant is not None
        value = SimpleNamespace(uiVal=int(1000 * self.instant[h]) if found else 0)
        return [SimpleNamespace(nvmlReturn=0 if found else 3, value=value)]

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy_counter:
            raise NotSupported("energy counter")
        return 10**9 + int(1000 * self.watts[h] * (time.monotonic() - self.started))

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1980 if which == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=70_000 * 2**20)

    def nvmlDeviceGetTemperature(self, h, which):
        return 55

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.reasons

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=pid, usedGpuMemory=2**30) for pid in self.running]


def _sampled(nvml, seconds=0.6, rate=20.0, env=None, powercap=Path("/nonexistent")):
    watch = telemetry.watch({"telemetry_hz": rate}, env or {}, powercap, load=lambda: nvml)
    with watch.sampled() as sampler:
        time.sleep(seconds)
    return json.loads(json.dumps(telemetry.sampled_record(sampler)))  # as the archive keeps it


def test_sampler_reads_every_gpu_quantity_in_its_own_thread_at_the_rate():
    nvml = FakeNvml(instant=(300.0, 200.0))
    record = _sampled(nvml)
    assert set(record["gpus"]) == {"0", "1"}
    gpu = record["gpus"]["0"]
    assert set(gpu) == {key for key, _ in telemetry._GPU_FIELDS}
    samples = len(record["t_ms"])
    # first and last sample taken on entry and exit, the rest at 20 Hz over 0.6 s (a loaded machine may skip)
    assert 5 <= samples <= 0.6 * 20 + 2
    assert all(len(values) == samples for values in gpu.values())
    assert gpu["sm_mhz"][0] == 1980 and gpu["mem_used_mib"][0] == 70_000
    assert threading.get_ident() in nvml.threads and len(nvml.threads) == 2  # entry/exit here, ticks in another
    assert record["duration_s"] == pytest.approx(sum(record["t_ms"]) / 1000, abs=0.002)


def test_energy_from_the_counter_agrees_with_integrated_power():
    record = _sampled(FakeNvml(watts=(300.0, 200.0), instant=(300.0, 200.0)))
    energy = telemetry.energy_of(record)
    assert energy.source == telemetry.NVML_COUNTER
    # the fake's counter follows real time between the first and last sample: 500 W over the sampled span
    assert energy.joules == pytest.approx(500 * record["duration_s"], rel=0.02)
    assert abs(telemetry.agreement(record)) < 0.02
    assert energy.watts == pytest.approx(500, rel=0.02)


def test_a_gpu_without_an_energy_counter_integrates_its_power():
    record = _sampled(FakeNvml(watts=(250.0,), energy_counter=False))
    assert "energy_mj" not in record["gpus"]["0"] and "power_instant_mw" not in record["gpus"]["0"]
    energy = telemetry.energy_of(record)
    assert energy.source == telemetry.NVML_INTEGRATED
    assert energy.joules == pytest.approx(250 * sum(record["t_ms"]) / 1000, rel=1e-6)  # power times sampled span
    assert telemetry.agreement(record) is None


def test_instantaneous_power_is_integrated_where_the_gpu_gives_it():
    """nvmlDeviceGetPowerUsage is a running average on GA100 and later: the instantaneous field is integrated."""
    record = _sampled(FakeNvml(watts=(250.0,), energy_counter=False, instant=(400.0,)))
    assert record["gpus"]["0"]["power_instant_mw"][0] == 400_000 and record["gpus"]["0"]["power_mw"][0] == 250_000
    assert telemetry.energy_of(record).joules == pytest.approx(400 * sum(record["t_ms"]) / 1000, rel=1e-6)


def test_only_the_gpus_of_cuda_visible_devices_are_sampled():
    record = _sampled(FakeNvml(watts=(100.0, 200.0, 300.0)), env={"CUDA_VISIBLE_DEVICES": "2"})
    assert list(record["gpus"]) == ["2"]


def test_clock_slowdowns_are_named_and_idle_is_not_one():
    assert telemetry.slowdowns(_sampled(FakeNvml(reasons=0x4 | 0x1), seconds=0.1)) == ["power cap"]
    assert telemetry.slowdowns(_sampled(FakeNvml(reasons=0x1 | 0x2), seconds=0.1)) == []


def test_another_process_on_the_engines_gpu_is_contention():
    record = _sampled(FakeNvml(watts=(100.0,), processes=(999_999,)), seconds=0.1)
    assert record["contention"]["gpu_other_processes"] == [{"gpu": 0, "pid": 999_999, "mib": 1024}]
    assert "other processes on the engine's GPUs (999999 on GPU 0)" in telemetry.contended(record["contention"])


def test_no_gpu_and_no_rapl_is_not_measured_in_words(tmp_path):
    """This machine: nvidia-ml-py is installed, no NVIDIA driver; and an empty powercap tree."""
    watch = telemetry.watch({}, {}, tmp_path)
    assert watch.gpus is None and watch.rapl is None
    assert watch.why_not.startswith("not measured: no GPU visible through NVML")
    assert "no RAPL energy counter" in watch.why_not
    with watch.sampled() as sampler:
        time.sleep(0.05)
    energy = telemetry.energy_of(sampler.record)
    assert energy.joules is None and energy.watts is None
    assert energy.source == watch.why_not
    assert sampler.record["contention"]["load_average_1m"]  # contention is measured without a GPU too


def _rapl_zone(root: Path, zone: str, name: str, energy: int | None, maximum: int = 2**32) -> Path:
    folder = root / zone
    folder.mkdir(parents=True)
    (folder / "name").write_text(f"{name}\n")
    (folder / "max_energy_range_uj").write_text(f"{maximum}\n")
    if energy is None:
        (folder / "energy_uj").mkdir()  # unreadable as root too
    else:
        (folder / "energy_uj").write_text(f"{energy}\n")
    return folder / "energy_uj"


def test_rapl_package_counters_in_a_fake_sysfs_give_the_energy_and_say_so(tmp_path):
    package = _rapl_zone(tmp_path, "intel-rapl:0", "package-0", 1_000_000)
    _rapl_zone(tmp_path, "intel-rapl:0:0", "core", 5)  # part of the package: never added to it
    watch = telemetry.watch({"telemetry_hz": 50}, {}, tmp_path, load=lambda: (_ for _ in ()).throw(ImportError("x")))
    assert watch.gpus is None and list(watch.rapl.zones) == ["package-0"]
    with watch.sampled() as sampler:
        time.sleep(0.05)
        package.write_text("13000000\n")  # 12 J later
        time.sleep(0.05)
    energy = telemetry.energy_of(sampler.record)
    assert energy.source == "rapl (package-0)"
    assert energy.joules == pytest.approx(12.0)


def test_a_wrapped_rapl_counter_still_counts_forward():
    assert telemetry.counter_difference([990, 995, 4], 1.0, wrap=999) == 14
    assert telemetry.counter_difference([5, None, 9], 1.0) is None  # a missed read: no energy, not a wrong one


def test_an_unreadable_rapl_counter_says_why(tmp_path):
    _rapl_zone(tmp_path, "intel-rapl:0", "package-0", None)
    rapl, why = telemetry.open_rapl(tmp_path)
    assert rapl is None and "not readable" in why and "intel-rapl:0/energy_uj" in why


def test_telemetry_off_samples_nothing():
    watch = telemetry.watch({"telemetry_hz": 0}, {})
    with watch.sampled() as sampler:
        pass
    assert sampler is None and telemetry.sampled_record(sampler) is None


def _synthetic(watts: list[float], counter_scale: float = 1.0, step_ms: int = 100) -> dict:
    """A record of one GPU sampled every ``step_ms`` at ``watts``, its counter ``counter_scale`` times the truth."""
    energy, counter = 0.0, [5_000_000]
    for w0, w1 in itertools.pairwise(watts):
        energy += (w0 + w1) / 2 * step_ms  # mJ
        counter.append(5_000_000 + round(counter_scale * energy))
    return {
        "format": telemetry.FORMAT,
        "duration_s": step_ms * (len(watts) - 1) / 1000,
        "t_ms": [0] + [step_ms] * (len(watts) - 1),
        "gpus": {"0": {"power_mw": [round(1000 * w) for w in watts], "energy_mj": counter}},
    }


def test_integration_of_a_power_ramp_is_the_trapezoid_area():
    record = _synthetic([100.0, 200.0, 300.0, 300.0])  # 0.3 s: 15 + 25 + 30 = 70 J
    assert telemetry.integrate(telemetry.sample_times_s(record), record["gpus"]["0"]["power_mw"], 1e-3) == (
        pytest.approx(70.0)
    )
    assert telemetry.energy_of(record).joules == pytest.approx(70.0)


def test_the_two_percent_check_tells_agreeing_sources_from_disagreeing_ones():
    watts = [300 + 50 * (i % 3) for i in range(101)]
    assert abs(telemetry.agreement(_synthetic(watts))) < 1e-6
    assert telemetry.agreement(_synthetic(watts, counter_scale=1.05)) == pytest.approx(1 / 1.05 - 1, rel=1e-3)


def test_the_session_says_when_a_run_was_contended_or_throttled():
    import io

    from specsweep.measure.progress import SessionProgress

    record = _sampled(FakeNvml(watts=(100.0,), reasons=0x40, processes=(424242,)), seconds=0.05)
    out = io.StringIO()
    SessionProgress("ngram", out).measured_under("run 2/5", record)
    assert out.getvalue().splitlines() == [
        "ngram: WARNING: run 2/5 was measured under contention: " + telemetry.contended(record["contention"]),
        "ngram: WARNING: GPU clocks slowed down during run 2/5: thermal (hardware)",
    ]
    quiet = io.StringIO()
    SessionProgress("ngram", quiet).measured_under("run 2/5", None)  # telemetry off
    assert quiet.getvalue() == ""


def _fake_proc(root: Path, busy: int, total: int, processes: dict[int, tuple[str, int, int, int]]) -> None:
    """A /proc with a `cpu` line (``busy`` user ticks of ``total``) and per pid (command, ppid, utime, starttime)."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {busy} 0 0 {total - busy} 0 0 0 0 0 0\ncpu0 0 0 0 0\n")
    for pid, (command, ppid, utime, started) in processes.items():
        (root / str(pid)).mkdir(exist_ok=True)
        fields = ["S", ppid, 0, 0, 0, 0, 0, 0, 0, 0, 0, utime, 0, 0, 0, 20, 0, 1, 0, started]
        (root / str(pid) / "stat").write_text(f"{pid} ({command}) {' '.join(map(str, fields))}\n")


def test_a_process_is_followed_by_pid_and_start_time_not_by_its_changing_name(tmp_path):
    """A kernel worker renames itself after its current work queue: still the same process, only its ticks
    since the start count; a pid reused by a new process counts all of the new one's time."""
    me = 4242
    _fake_proc(
        tmp_path, 0, 1000, {me: ("python", 1, 0, 5), 11: ("kworker/0:1-events", 2, 500, 7), 12: ("old", 1, 90, 8)}
    )
    probe = telemetry._Contention(me, None, tmp_path)
    probe.start()
    _fake_proc(
        tmp_path, 400, 2000, {me: ("python", 1, 100, 5), 11: ("kworker/0:1-vsock", 2, 530, 7), 12: ("new", 1, 40, 99)}
    )
    found = probe.stop()
    assert [(p["command"], p["cpu_s"]) for p in found["top_other"]] == [("new", 0.4), ("kworker/0:1-vsock", 0.3)]
    assert found["other_cpu_s"] == 3.0 and found["other_cpu_pct"] == 30.0  # 400 busy ticks, 100 of them ours
