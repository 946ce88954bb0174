"""Which GPU each worker trains on: one GPU per worker, or several workers (their models) per GPU.

``privgame run --gpus all`` (or ``--gpus 0,2``) pins every process that plays trials — the parent, each loky
worker, each Dask worker — to one of the GPUs, round-robin: the process claims the lowest free *slot* (an
advisory lock on a file in a folder of the run's own, held for the process's life and freed by the kernel when
it dies, so a replacement worker takes its slot) and trains on GPU ``gpus[slot mod len(gpus)]``: with n workers
on g GPUs, each GPU serves ⌈n/g⌉ or ⌊n/g⌋ workers and their models (the memory check, :func:`check_gpus`, asks
that one trial's estimate times that fits the GPU).  Pinning is ``torch.cuda.set_device``: a mechanism whose
``device`` is ``"cuda"`` or ``"auto"`` trains on the worker's GPU; one whose ``device`` is ``"cpu"`` (every
mechanism's default) is unchanged.  On a Slurm job (``--slurm-gpus N``) the GPUs are the ones Slurm grants the job
(its ``CUDA_VISIBLE_DEVICES``), shared the same way by the job's workers; slots are per job.

Nothing here runs on a machine without GPUs unless ``--gpus`` is given, and then the run is refused in one line
before anything starts.  A trial's numbers do not depend on which GPU of one type it ran on; CPU and CUDA runs
differ (different generators and kernels, :func:`privgame.mechanisms.dpsgd.devices.make_generator`).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["WorkerDevices", "check_gpus", "parse_gpus", "run_devices"]

#: this process's pin: (the run's token, the slot's open lock file, the GPU), once pinned
_PINNED: tuple[str, Any, int] | None = None


@dataclass(frozen=True, slots=True)
class WorkerDevices:
    """The GPUs a run's workers are spread over.

    Parameters
    ----------
    gpus : tuple of int, or None
        CUDA device indices as the processes see them; ``None``: every GPU a process sees (a Slurm job's).
    token : str
        The run's own name for its slots (a random hex string), so that two runs on one machine do not share them.
    """

    gpus: tuple[int, ...] | None
    token: str

    def slot_folder(self) -> Path:
        """Where the slots' lock files live: per user, run and (on Slurm) job."""
        job = os.environ.get("SLURM_JOB_ID", "local")
        return Path(tempfile.gettempdir()) / f"privgame-gpu-slots-{os.getuid()}-{self.token}-{job}"

    def pin(self) -> int:
        """Pin this process to its GPU (once per process and run): the GPU's index."""
        global _PINNED
        if _PINNED is not None and _PINNED[0] == self.token:
            return _PINNED[2]
        import torch

        visible = torch.cuda.device_count()
        gpus = self.gpus if self.gpus is not None else tuple(range(visible))
        if not gpus or max(gpus) >= visible:
            raise RuntimeError(
                f"this worker sees {visible} CUDA GPU{'s' if visible != 1 else ''}, and the run asks for "
                f"{'every one' if self.gpus is None else 'GPUs ' + ','.join(map(str, gpus))}"
            )
        slot, handle = claim_slot(self.slot_folder())
        gpu = gpus[slot % len(gpus)]
        torch.cuda.set_device(gpu)
        _PINNED = (self.token, handle, gpu)
        return gpu


def claim_slot(folder: Path, limit: int = 4096) -> tuple[int, Any]:
    """The lowest slot no living process holds in ``folder``, and its open lock file (keep it open: closing it,
    or the process's end, frees the slot)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    for slot in range(limit):
        handle = open(folder / f"{slot}.lock", "a+b")  # held open for the process's life
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return slot, handle
    raise RuntimeError(f"no free GPU slot among {limit} in {folder}")


def parse_gpus(value: str) -> tuple[int, ...] | None:
    """``--gpus``: ``"all"`` (``None``: every GPU seen) or distinct non-negative indices ``"0,2"``."""
    if value.strip() == "all":
        return None
    try:
        gpus = tuple(int(part) for part in value.split(","))
    except ValueError:
        raise ValueError(f"--gpus must be 'all' or GPU indices such as 0,1, got {value!r}.") from None
    if not gpus or min(gpus) < 0 or len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus must be 'all' or distinct GPU indices (0 or more) such as 0,1, got {value!r}.")
    return gpus


def check_gpus(gpus: tuple[int, ...] | None, n_workers: int, trial_bytes: int) -> None:
    """Refuse, in one line, GPUs this machine does not have, or more workers' trials on one GPU than its memory
    holds (``trial_bytes``: the largest grid point's estimate of one trial, :meth:`Game.trial_bytes`)."""
    try:
        import torch
    except ImportError:
        raise ValueError("--gpus needs PyTorch (pip install torch), which is not installed.") from None
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if visible == 0:
        raise ValueError("--gpus: this machine has no CUDA GPU PyTorch can use (torch.cuda.is_available() is false).")
    chosen = tuple(range(visible)) if gpus is None else gpus
    missing = [g for g in chosen if g >= visible]
    if missing:
        raise ValueError(f"--gpus names GPU {missing[0]}, but this machine has {visible} (0 to {visible - 1}).")
    per_gpu = math.ceil((n_workers + 1) / len(chosen))  # the parent plays trials too, while the workers start
    for g in chosen:
        memory = int(torch.cuda.get_device_properties(g).total_memory)
        if per_gpu * trial_bytes > memory:
            raise ValueError(
                f"--gpus: {per_gpu} workers would share GPU {g}, each trial needing about "
                f"{trial_bytes / 2**30:.1f} GiB, more than its {memory / 2**30:.1f} GiB: use fewer --n-jobs or more "
                "GPUs."
            )


def run_devices(gpus: str | Sequence[int], *, n_jobs: int, config: Any, here: bool = True) -> WorkerDevices:
    """The :class:`WorkerDevices` of ``--gpus`` (or the API's ``gpus``) for a run of ``config`` on ``n_jobs`` local
    workers, checked against this machine's GPUs and their memory (:func:`check_gpus`) when the workers run
    ``here`` (not on a remote Dask cluster, whose machines check it as each worker pins itself)."""
    import uuid

    if isinstance(gpus, str):
        chosen = parse_gpus(gpus)
    else:
        chosen = parse_gpus(",".join(str(int(g)) for g in gpus)) if len(gpus) else parse_gpus("")
    if here:
        workers = max(n_jobs if n_jobs != -1 else (os.cpu_count() or 1), 1)
        largest = max((p.game.trial_bytes(p.mechanism, p.attack) for p in config.grid), default=0)
        check_gpus(chosen, workers, largest)
    return WorkerDevices(chosen, uuid.uuid4().hex[:12])


def release_pin() -> None:
    """Free this process's slot (tests; a worker's slot is freed when it ends)."""
    global _PINNED
    if _PINNED is not None:
        with contextlib.suppress(OSError):
            _PINNED[1].close()
    _PINNED = None
