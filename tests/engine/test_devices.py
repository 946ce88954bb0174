"""GPUs per worker (privgame.engine.devices): slots claimed per process, round-robin GPUs, refusals in one line.

This machine has no GPU: the pinning is checked with torch.cuda's answers replaced, and a real run with --gpus is
refused before anything starts (docs/cluster.md says what a GPU machine does)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from privgame.engine import devices
from privgame.engine.cli import main
from privgame.engine.devices import WorkerDevices, check_gpus, claim_slot, parse_gpus


@pytest.mark.parametrize("value, gpus", [("all", None), ("0", (0,)), ("0,2", (0, 2)), (" 3 , 1", (3, 1))])
def test_gpus_parse(value, gpus):
    assert parse_gpus(value) == gpus


@pytest.mark.parametrize("value", ["", "0,0", "-1", "one", "0,,1", "1.5"])
def test_bad_gpus_are_refused_in_one_line(value):
    with pytest.raises(ValueError, match=r"^--gpus must be 'all' or (distinct )?GPU indices"):
        parse_gpus(value)


def test_each_process_holds_its_own_slot_and_a_dead_one_frees_it(tmp_path):
    folder = tmp_path / "slots"
    holder = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from privgame.engine.devices import claim_slot
        slot, handle = claim_slot(Path({str(folder)!r}))
        print(slot, flush=True)
        time.sleep(60)
        """
    )
    first = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    second = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        slots = {int(first.stdout.readline()), int(second.stdout.readline())}  # type: ignore[union-attr]
        assert slots == {0, 1}
        mine, handle = claim_slot(folder)
        assert mine == 2  # both others are alive
        handle.close()
        first.kill()
        first.wait()
        again, handle = claim_slot(folder)
        assert again in slots  # the killed process's slot, freed by the kernel
        handle.close()
    finally:
        for process in (first, second):
            process.kill()
            process.wait()


class _FakeCuda:
    """torch.cuda's answers on a machine with ``n`` GPUs of ``memory`` bytes, and the device each pin chose."""

    def __init__(self, n: int, memory: int = 80 << 30) -> None:
        self.n, self.memory, self.chosen = n, memory, []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(torch.cuda, "device_count", lambda: self.n)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: self.n > 0)
        monkeypatch.setattr(torch.cuda, "set_device", self.chosen.append)
        props = type("Properties", (), {"total_memory": self.memory})
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda g: props)


@pytest.fixture
def unpinned(monkeypatch, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the slots' folder
    devices.release_pin()
    yield
    devices.release_pin()


def test_processes_take_the_gpus_round_robin_by_slot(monkeypatch, unpinned):
    cuda = _FakeCuda(4)
    cuda.install(monkeypatch)
    run = WorkerDevices((1, 3), token="run-a")
    held = []
    for expected in (1, 3, 1):  # slots 0, 1, 2 (the earlier ones held by "other processes": the handles kept)
        assert run.pin() == expected
        held.append(devices._PINNED[1])  # type: ignore[index]
        devices._PINNED = None  # the next "process"
    assert cuda.chosen == [1, 3, 1]
    for handle in held:
        handle.close()
    # once pinned, a process keeps its GPU for the run; another run's token claims afresh
    assert run.pin() == 1 and run.pin() == 1 and cuda.chosen == [1, 3, 1, 1]
    assert WorkerDevices(None, token="run-b").pin() == 0  # every GPU seen: 0..3


def test_a_worker_that_sees_too_few_gpus_says_so(monkeypatch, unpinned):
    _FakeCuda(1).install(monkeypatch)
    with pytest.raises(RuntimeError, match="this worker sees 1 CUDA GPU, and the run asks for GPUs 0,2"):
        WorkerDevices((0, 2), token="run-c").pin()
    _FakeCuda(0).install(monkeypatch)
    with pytest.raises(RuntimeError, match="this worker sees 0 CUDA GPUs, and the run asks for every one"):
        WorkerDevices(None, token="run-d").pin()


def test_the_check_refuses_missing_gpus_and_workers_that_do_not_fit_in_memory(monkeypatch):
    _FakeCuda(2, memory=10 << 30).install(monkeypatch)
    check_gpus((0, 1), n_workers=3, trial_bytes=4 << 30)  # the parent and 3 workers: 2 per GPU, 8 of 10 GiB
    with pytest.raises(ValueError, match="--gpus names GPU 2, but this machine has 2"):
        check_gpus((0, 2), n_workers=1, trial_bytes=0)
    with pytest.raises(ValueError, match=r"--gpus: 3 workers would share GPU 0, each trial needing about 4\.0 GiB"):
        check_gpus(None, n_workers=4, trial_bytes=4 << 30)


def test_on_a_machine_without_gpus_a_run_with_gpus_is_refused_before_it_starts(write_config, tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "out"
    assert main(["run", str(write_config()), "--out", str(out), "--gpus", "all", "--no-progress"]) == 2
    assert "--gpus: this machine has no CUDA GPU PyTorch can use" in capsys.readouterr().err
    assert not out.exists()
    assert main(["run", str(write_config()), "--out", str(out), "--gpus", "0,0"]) == 2
    assert "--gpus must be 'all' or distinct GPU indices" in capsys.readouterr().err


def test_the_api_takes_gpus_as_the_command_does(write_config, tmp_path):
    import privgame

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="--gpus: this machine has no CUDA GPU PyTorch can use"):
        privgame.run(write_config(), tmp_path / "out", gpus=[0], progress=False)
    with pytest.raises(ValueError, match="--gpus must be 'all' or GPU indices"):
        privgame.run(write_config(), tmp_path / "out", gpus=[], progress=False)
    assert not (tmp_path / "out").exists()
