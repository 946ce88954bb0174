"""Benchmark of DP-SGD: privgame's ``train`` and ``train_ensemble`` against non-private SGD, Opacus and naive vmap.

Run: ``python benchmarks/bench_dpsgd.py [--device auto|cpu|cuda] [--quick]`` (after ``pip install -e .[torch]``).
Opacus is an optional, benchmark-only dependency (``pip install opacus``); without it its two rows are skipped
with a message and their ratios are ``null``.

Task (the DP-SGD issue): an MLP 108 → 256 → 256 → 2 on N = 30,000 rows shaped like one-hot-encoded Adult (6
continuous columns and 8 one-hot categorical groups, 102 columns; synthetic random data), expected batch 256
(q = 256/N), one epoch = round(N/256) = 117 steps, float32, σ = 1, C = 1, plain SGD (lr 0.1).  Five ways, every one
with Poisson sampling:

* ``plain``: non-private SGD, ``torch.optim.SGD`` on the summed loss divided by qN;
* ``privgame``: :func:`privgame.mechanisms.dpsgd.sgd.train` (ghost norms, one forward and one backward pass);
* ``opacus``: Opacus ``PrivacyEngine.make_private(..., poisson_sampling=True)`` with its default hooks
  (``grad_sample_mode="hooks"``: per-sample gradients materialised);
* ``opacus_ghost``: the same with ``grad_sample_mode="ghost"`` and its ``DPLossFastGradientClipping`` criterion
  (two backward passes);
* ``vmap``: a naive loop, per-example gradients by ``torch.func.vmap(grad(...))``, clip, sum, noise, SGD.

Opacus reads its batches through a ``DPDataLoader``; the dataset here serves a whole batch by tensor indexing
(``__getitems__``), so Opacus is not charged for Python-level per-row collation.  Its loader takes
q = 1/ceil(N/256) (expected batch 254.2 instead of 256); every method runs exactly the same number of steps.

Ensembles: K = 32 models at once (:func:`privgame.mechanisms.dpsgd.train_ensemble`) against 32 sequential :func:`train`
runs, on the MLP above (compute-bound on a CPU: ``ensemble_speedup_large``) and on a shadow-model-sized MLP
64 → 32 → 10 on sklearn's digits (N = 1,797, batch 64, 28 steps: per-step overhead dominates:
``ensemble_speedup``).

White-box audits of a user's model (the issue "Audit your own PyTorch training"): one release of
``dpsgd-whitebox`` with the factory of ``experiments/own_models.py`` (d → 512 → 2, tanh, float64) and m = 1,000
Dirac canaries on reserved coordinates (``engine``), against plain SGD on the same model, rows, dtype, Poisson
batches and steps (``plain_user``: ``torch.optim.SGD``, no clipping, no noise, no canaries), and against the same
release trained by Opacus's ``PrivacyEngine`` (``opacus_whitebox``, when Opacus is installed): d = 30 synthetic
features, q = 0.1, T = 100 (``--quick``: T = 10), at N = 10,000 rows (batches of about 1,000:
``user_model_over_plain``, target ≤ 1.2, and ``opacus_whitebox_over_engine``) and at the quick own-model config's
N = 1,000 (batches of about 100: ``whitebox_over_plain_batch100``, target ≤ 1.3, ``opacus_whitebox_over_engine_small``).
The engine's fixed cost per step is the noise: d = 16,898 float64 standard normals, 0.30 ms on this CPU (torch draws
float64 normals about 5× slower than float32 ones), about 38 % of a plain step on 100 rows (0.78 ms) and 6 % on
1,000; the rest of the audit's cost on 100 rows is the dispatch of about 120 small tensor operations a step (hooks,
norms, clipping factors, canaries, the flat noisy step), about 0.3 ms.  With the noise alone the batch-100 ratio
could not go below about 1.4, so its target of 1.3 is out of reach of an eager float64 step on this CPU.

Timing: every method is warmed up once, then the methods of a group run in turn, ``--repeats`` rounds; the
figure of a method is its median seconds per epoch, the ratios are ratios of medians.  torch's thread count is
left at its default.  Prints readable lines and ends with ONE JSON line with ``dp_over_plain``, ``opacus_over_dp``,
``opacus_ghost_over_dp``, ``vmap_over_dp``, ``ensemble_speedup``, ``ensemble_speedup_large``,
``whitebox_over_plain_batch100``, ``user_model_over_plain``, ``opacus_whitebox_over_engine``,
``opacus_whitebox_over_engine_small``, ``device``, ``devices`` (the device of each figure) and the seconds behind
them.  Targets on a 2-core CPU: ``dp_over_plain`` ≤ 2.5, ``opacus_over_dp`` ≥ 10, ``opacus_ghost_over_dp`` ≥ 1.5,
``ensemble_speedup`` ≥ 5, ``whitebox_over_plain_batch100`` ≤ 1.3, ``user_model_over_plain`` ≤ 1.2.
``benchmarks/gpu_check.sh`` runs it on a CUDA GPU.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Opacus's notices (secure RNG off; full backward hooks on modules whose inputs need no gradient) are expected here.
warnings.filterwarnings("ignore", message="Secure RNG turned off")
warnings.filterwarnings("ignore", message="Full backward hook is firing")

from privgame.mechanisms.dpsgd import DPSGDConfig, make_generator, mlp, resolve_device, train, train_ensemble  # noqa: E402

LARGE = (108, 256, 256, 2)
SMALL = (64, 32, 10)
ADULT_N = 30_000
QUICK_N = 2_560  # --quick: 10 steps per epoch (a smoke test that the benchmark runs, in seconds)
QUICK_K = 4  # --quick: ensembles of 4 models
ADULT_CATEGORIES = (9, 16, 7, 15, 6, 5, 2, 42)  # workclass, education, …, native-country: 102 one-hot columns
ADULT_CONTINUOUS = 6
SIGMA, CLIP, LR = 1.0, 1.0, 0.1
K = 32
TARGETS = {
    "dp_over_plain": ("<=", 2.5),
    "opacus_over_dp": (">=", 10.0),
    "opacus_ghost_over_dp": (">=", 1.5),
    "ensemble_speedup": (">=", 5.0),
    "whitebox_over_plain_batch100": ("<=", 1.3),
    "user_model_over_plain": ("<=", 1.2),
}
USER_MODEL = "own_models:two_layer_mlp"  # experiments/own_models.py, the quick own-model config's factory
USER_D, USER_M, USER_Q, USER_T = 30, 1_000, 0.1, 100
# rows: the target's N (batches of about 1,000) and the quick configs' N (batches of about 100, where the float64
# noise draw of the model's d = 16,898 coordinates, 0.33 ms a step, is 40 % of a plain step)
USER_N, USER_N_SMALL = 10_000, 1_000

Run = Callable[[int], object]


# ---------------------------------------------------------------------------------------------- data


def adult_like(n: int, device: torch.device, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Synthetic rows shaped like one-hot-encoded Adult: 6 standardised columns, then 8 one-hot groups (108 in all)."""
    gen = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, ADULT_CONTINUOUS, generator=gen)]
    for size in ADULT_CATEGORIES:
        parts.append(F.one_hot(torch.randint(0, size, (n,), generator=gen), size).float())
    x = torch.cat(parts, dim=1)
    w = torch.randn(x.shape[1], generator=gen)
    y = (torch.rand(n, generator=gen) < torch.sigmoid(x @ w - 1.0)).long()
    assert x.shape[1] == LARGE[0]
    return x.to(device), y.to(device)


def digits(device: torch.device) -> tuple[Tensor, Tensor]:
    """sklearn's 8×8 digits (1,797 rows, bundled with scikit-learn), pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.as_tensor(data.target, dtype=torch.long)
    return x.to(device), y.to(device)


class _BatchDataset(torch.utils.data.Dataset):
    """(x, y) served a batch at a time by tensor indexing (``__getitems__``), with an identity collate function."""

    def __init__(self, x: Tensor, y: Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return self.x.shape[0]

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor]:
        return self.x[i], self.y[i]

    def __getitems__(self, indices: list[int]) -> tuple[Tensor, Tensor]:
        index = torch.as_tensor(indices, dtype=torch.long, device=self.x.device)
        return self.x.index_select(0, index), self.y.index_select(0, index)


def _identity(batch: Any) -> Any:
    return batch


# ---------------------------------------------------------------------------------------------- methods


class Task:
    """One training task: data, model sizes, DP-SGD configuration."""

    def __init__(self, x: Tensor, y: Tensor, sizes: Sequence[int], batch: int, device: torch.device) -> None:
        self.x, self.y, self.sizes, self.device = x, y, tuple(sizes), device
        self.n = x.shape[0]
        self.batch = batch
        self.steps = round(self.n / batch)
        self.config = DPSGDConfig(
            sampling_rate=batch / self.n,
            noise_multiplier=SIGMA,
            clip_norm=CLIP,
            steps=self.steps,
            learning_rate=LR,
            device=str(device),
        )

    def model(self, gen: torch.Generator) -> nn.Module:
        return mlp(self.sizes, generator=gen)

    def poisson_index(self, gen: torch.Generator) -> Tensor:
        mask = torch.rand(self.n, generator=gen, device=self.device, dtype=torch.float64) < self.config.sampling_rate
        return mask.nonzero().squeeze(1)

    # -------------------------------------------------------------------------- the five ways
    def plain(self, seed: int) -> None:
        gen = make_generator(seed, self.device)
        model = self.model(gen)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        denom = self.config.sampling_rate * self.n
        for _ in range(self.steps):
            index = self.poisson_index(gen)
            opt.zero_grad()
            loss = F.cross_entropy(model(self.x[index]), self.y[index], reduction="sum") / denom
            loss.backward()
            opt.step()

    def privgame(self, seed: int) -> None:
        gen = make_generator(seed, self.device)
        train(self.model(gen), self.x, self.y, self.config, generator=gen)

    def vmap(self, seed: int) -> None:
        gen = make_generator(seed, self.device)
        model = self.model(gen)
        params = {name: p.detach() for name, p in model.named_parameters()}
        denom = self.config.sampling_rate * self.n

        def loss_one(p: dict[str, Tensor], xi: Tensor, yi: Tensor) -> Tensor:
            return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

        per_example_grads = vmap(grad(loss_one), in_dims=(None, 0, 0))
        for _ in range(self.steps):
            index = self.poisson_index(gen)
            if index.numel() > 0:
                per = per_example_grads(params, self.x[index], self.y[index])
                norms = torch.stack([g.flatten(1).square().sum(1) for g in per.values()]).sum(0).sqrt()
                scale = CLIP / norms.clamp(min=CLIP)
                sums = {name: torch.tensordot(scale, g, dims=1) for name, g in per.items()}
            else:
                sums = {name: torch.zeros_like(p) for name, p in params.items()}
            with torch.no_grad():
                for name, p in params.items():
                    noise = torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype)
                    p.sub_((sums[name] + SIGMA * CLIP * noise) / denom, alpha=LR)

    def opacus_setup(self, seed: int, mode: str) -> Callable[[], None]:
        """Build an Opacus-private model, optimiser and Poisson loader; return the epoch (not timed: setup)."""
        from opacus import PrivacyEngine

        gen = make_generator(seed, self.device)
        model = self.model(gen)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        loader = torch.utils.data.DataLoader(
            _BatchDataset(self.x, self.y),
            batch_size=self.batch,
            collate_fn=_identity,
            generator=torch.Generator().manual_seed(seed),
        )
        engine = PrivacyEngine()
        common = {
            "module": model,
            "optimizer": opt,
            "data_loader": loader,
            "noise_multiplier": SIGMA,
            "max_grad_norm": CLIP,
            "poisson_sampling": True,
            "noise_generator": make_generator(seed + 1, self.device),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # secure-RNG and hook-registration notices
            if mode == "ghost":
                model, opt, criterion, loader = engine.make_private(
                    **common, criterion=nn.CrossEntropyLoss(), grad_sample_mode="ghost"
                )
            else:
                model, opt, loader = engine.make_private(**common, grad_sample_mode="hooks")
                criterion = nn.CrossEntropyLoss()

        def epoch() -> None:
            for xb, yb in itertools.islice(loader, self.steps):
                opt.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                opt.step()

        return epoch

    # -------------------------------------------------------------------------- ensembles
    def ensemble(self, seed: int, k: int) -> None:
        gens = [make_generator(seed * 1000 + i, self.device) for i in range(k)]
        train_ensemble(self.model, self.x, self.y, self.config, generators=gens)

    def sequential(self, seed: int, k: int) -> None:
        for i in range(k):
            gen = make_generator(seed * 1000 + i, self.device)
            train(self.model(gen), self.x, self.y, self.config, generator=gen)


# ---------------------------------------------------------------------------------------------- timing


class WhiteBoxTask:
    """One white-box audit release on a user's model (engine, Opacus) and plain SGD on the same model and rows."""

    def __init__(self, steps: int, n: int, device: torch.device) -> None:
        import numpy as np

        from privgame.mechanisms.training.canaries import CanaryData
        from privgame.mechanisms.training.data import TrainingData

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
        rng = np.random.default_rng(0)
        self.n = n
        x = rng.standard_normal((n, USER_D))
        y = (x[:, 0] + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
        rows = TrainingData(x, y, np.ones(n, dtype=bool), n_classes=2)
        self.data = CanaryData(rng.random(USER_M) < 0.5, rows)
        self.steps = steps
        self.device = device
        self.x, self.y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
        self.kw: dict[str, Any] = dict(
            noise_multiplier=1.0,
            sampling_rate=USER_Q,
            steps=steps,
            clip_norm=1.0,
            learning_rate=0.5,
            model=USER_MODEL,
            device=str(device),
        )

    def engine(self, seed: int) -> None:
        import numpy as np

        from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox

        DPSGDWhiteBox(**self.kw, canary_layout="reserved").release(self.data, rng=np.random.default_rng(seed))

    def opacus_whitebox(self, seed: int) -> None:
        import numpy as np

        from privgame.mechanisms.dpsgd.opacus_engine import OpacusWhiteBox

        OpacusWhiteBox(**self.kw).release(self.data, rng=np.random.default_rng(seed))

    def plain(self, seed: int) -> None:
        from privgame.mechanisms.dpsgd.sgd import poisson_mask
        from privgame.mechanisms.dpsgd.user_model import ModelFactory

        gen = make_generator(seed, self.device)
        model = ModelFactory(USER_MODEL).build((USER_D,), 2, generator=make_generator(seed), dtype=torch.float64)
        model.to(self.device)
        opt = torch.optim.SGD(model.parameters(), lr=self.kw["learning_rate"])
        expected = USER_Q * self.n
        for _ in range(self.steps):
            batch = poisson_mask(self.n, USER_Q, gen)
            opt.zero_grad()
            (F.cross_entropy(model(self.x[batch]), self.y[batch], reduction="sum") / expected).backward()
            opt.step()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_side_by_side(
    runs: dict[str, Run], repeats: int, device: torch.device, setup: dict[str, Callable[[int], Callable[[], None]]]
) -> dict[str, float]:
    """Median seconds of each run over ``repeats`` interleaved rounds, after one warm-up each.

    ``runs[name](seed)`` is timed whole; for ``setup[name]``, ``setup[name](seed)`` (not timed) returns the callable
    that is timed.
    """
    names = list(runs) + list(setup)

    def once(name: str, seed: int) -> float:
        if name in setup:
            body = setup[name](seed)
        else:

            def body() -> None:
                runs[name](seed)

        _sync(device)
        start = time.perf_counter()
        body()
        _sync(device)
        return time.perf_counter() - start

    for name in names:
        once(name, 10_000)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names:
            times[name].append(once(name, r))
    return {name: statistics.median(t) for name, t in times.items()}


class CpuMonitor:
    """CPU time used by other processes while the benchmark runs (Linux ``/proc/stat``), to flag contention."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # all but idle and iowait
        return busy / os.sysconf("SC_CLK_TCK"), time.process_time(), time.perf_counter()

    def others_share(self) -> float | None:
        """Share of the machine's CPU capacity used by other processes since construction."""
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy, own, wall = (b - a for a, b in zip(self.start, end, strict=True))
        capacity = wall * (os.cpu_count() or 1)
        return max(0.0, busy - own) / capacity if capacity > 0 else None


def _device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({platform.machine()}, {torch.get_num_threads()} torch threads)"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a / b, 3)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a smoke run: 1 repetition per group, N = {QUICK_N} rows for the large MLP, K = {QUICK_K} (its ratios "
        "are not the targets')",
    )
    parser.add_argument("--repeats", type=int, default=None, help="rounds per group (default 5, ensembles 3)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available to torch")
    device = resolve_device(args.device)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 5)
    ens_repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    try:
        import opacus

        opacus_version: str | None = opacus.__version__
    except ImportError:
        opacus_version = None

    monitor = CpuMonitor()
    large = Task(*adult_like(QUICK_N if args.quick else ADULT_N, device), LARGE, 256, device)
    small = Task(*digits(device), SMALL, 64, device)
    print(f"device {_device_label(device)}, torch {torch.__version__}, opacus {opacus_version or 'absent'}")
    print(
        f"MLP {' → '.join(map(str, LARGE))}: N = {large.n}, q = 256/{large.n}, {large.steps} steps per epoch; "
        f"σ = {SIGMA}, C = {CLIP}, lr = {LR}, float32, Poisson sampling everywhere; median of {repeats}"
    )

    runs: dict[str, Run] = {"plain": large.plain, "privgame": large.privgame, "vmap": large.vmap}
    setup: dict[str, Callable[[int], Callable[[], None]]] = {}
    if opacus_version is not None:
        setup["opacus"] = lambda seed: large.opacus_setup(seed, "hooks")
        setup["opacus_ghost"] = lambda seed: large.opacus_setup(seed, "ghost")
    else:
        print("opacus is not installed: skipping the two Opacus rows (pip install opacus to include them)")
    t = time_side_by_side(runs, repeats, device, setup)
    dp = t["privgame"]
    labels = {
        "plain": "non-private SGD",
        "privgame": "privgame DP-SGD (train)",
        "opacus": "Opacus, default hooks",
        "opacus_ghost": "Opacus, ghost clipping",
        "vmap": "naive vmap(grad) DP-SGD",
    }
    for name, label in labels.items():
        if name in t:
            print(f"  {label:<26} {t[name]:8.3f} s/epoch  ({t[name] / dp:6.2f}x privgame)")

    k = QUICK_K if args.quick else K
    ens: dict[str, dict[str, float]] = {}
    for key, task in (("small", small), ("large", large)):
        sizes = " → ".join(map(str, task.sizes))
        print(
            f"ensemble, MLP {sizes}: N = {task.n}, batch {task.batch}, {task.steps} steps, K = {k}; "
            f"median of {ens_repeats}"
        )
        e = time_side_by_side(
            {
                "ensemble": functools.partial(task.ensemble, k=k),
                "sequential": functools.partial(task.sequential, k=k),
            },
            ens_repeats,
            device,
            {},
        )
        ens[key] = e
        print(
            f"  train_ensemble (K = {k}) {e['ensemble']:8.3f} s ({e['ensemble'] / k * 1e3:7.2f} ms per model); "
            f"{k} x train {e['sequential']:8.3f} s ({e['sequential'] / k * 1e3:7.2f} ms per model); "
            f"speed-up {e['sequential'] / e['ensemble']:.2f}x"
        )

    user_steps = 10 if args.quick else USER_T
    w: dict[str, dict[str, float]] = {}
    for size, n in (("large", USER_N), ("small", USER_N_SMALL)):
        user = WhiteBoxTask(user_steps, n, device)
        print(
            f"white-box audit of a user model ({USER_MODEL}, d = {USER_D} → 512 → 2, float64): N = {n} (batches of "
            f"about {USER_Q * n:.0f}), m = {USER_M} reserved canaries, q = {USER_Q}, T = {user.steps}, {device}; "
            f"median of {repeats}"
        )
        user_runs: dict[str, Run] = {"plain_user": user.plain, "engine": user.engine}
        if opacus_version is not None:
            user_runs["opacus_whitebox"] = user.opacus_whitebox
        w[size] = time_side_by_side(user_runs, repeats, device, {})
        for name, label in (
            ("plain_user", "plain SGD, same model"),
            ("engine", "privgame white-box release"),
            ("opacus_whitebox", "Opacus white-box release"),
        ):
            if name in w[size]:
                print(f"  {label:<28} {w[size][name]:8.3f} s  ({w[size][name] / w[size]['plain_user']:6.2f}x plain)")

    result: dict[str, Any] = {
        "dp_over_plain": _ratio(dp, t["plain"]),
        "opacus_over_dp": _ratio(t.get("opacus"), dp),
        "opacus_ghost_over_dp": _ratio(t.get("opacus_ghost"), dp),
        "vmap_over_dp": _ratio(t["vmap"], dp),
        "ensemble_speedup": _ratio(ens["small"]["sequential"], ens["small"]["ensemble"]),
        "ensemble_speedup_large": _ratio(ens["large"]["sequential"], ens["large"]["ensemble"]),
        "whitebox_over_plain_batch100": _ratio(w["small"]["engine"], w["small"]["plain_user"]),
        "user_model_over_plain": _ratio(w["large"]["engine"], w["large"]["plain_user"]),
        "opacus_whitebox_over_engine": _ratio(w["large"].get("opacus_whitebox"), w["large"]["engine"]),
        "opacus_whitebox_over_engine_small": _ratio(w["small"].get("opacus_whitebox"), w["small"]["engine"]),
        "device": _device_label(device),
        # every figure above was measured on this one device (Opacus's white-box release too: its rows and model
        # are moved there); the per-figure labels say so explicitly
        "devices": {
            name: device.type
            for name in (
                "dp_over_plain",
                "ensemble_speedup",
                "whitebox_over_plain_batch100",
                "user_model_over_plain",
                "opacus_whitebox_over_engine",
            )
        },
        "torch": torch.__version__,
        "opacus": opacus_version,
        "quick": args.quick,
        "repeats": repeats,
        "ensemble_repeats": ens_repeats,
        "seconds": {name: round(v, 4) for name, v in t.items()}
        | {f"{kind}_{key}": round(v, 4) for key, e in ens.items() for kind, v in e.items()}
        | {f"{name}_{size}": round(v, 4) for size, times in w.items() for name, v in times.items()},
    }
    others = monitor.others_share()
    result["cpu_used_by_others"] = None if others is None else round(others, 3)
    if others is not None and others > 0.05:
        print(
            f"WARNING: other processes used {others:.0%} of the CPUs during the benchmark: the timings (above all "
            "of multi-threaded torch ops) are distorted; rerun on an idle machine"
        )
    met = []
    for key, (op, bound) in TARGETS.items():
        value = result[key]
        if value is None:
            met.append(f"{key} skipped")
        else:
            ok = value <= bound if op == "<=" else value >= bound
            met.append(f"{key} {value:.2f} {op} {bound}: {'met' if ok else 'MISSED'}")
    print("targets (2-core CPU): " + "; ".join(met))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
