"""Time one epoch of DP-SGD against non-private SGD: ``python -m mechanisms.dpsgd._benchmark``.

The reference task of the DP-SGD issue: an MLP 108 → 256 → 256 → 2 on N = 30,000 rows, expected batch 256
(q = 256/N), one epoch = round(1/q) steps, float32.  Non-private SGD uses shuffled fixed batches of 256, the mean
cross-entropy and ``torch.optim.SGD``.  Prints the median seconds per epoch over ``--repeats`` runs (after one
warm-up run) and, with ``--ensemble K ...``, the seconds per epoch of :func:`train_ensemble` for K models.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from mechanisms.dpsgd.devices import make_generator, resolve_device
from mechanisms.dpsgd.models import mlp
from mechanisms.dpsgd.train import DPSGDConfig, train, train_ensemble

SIZES = (108, 256, 256, 2)


def _median_time(run: Callable[[int], object], repeats: int, device: torch.device) -> float:
    run(10_000)  # warm-up
    times = []
    for r in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run(r)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--ensemble", type=int, nargs="*", default=[])
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    data_gen = make_generator(0, device)
    x = torch.randn(args.n, SIZES[0], generator=data_gen, device=device)
    y = torch.randint(0, SIZES[-1], (args.n,), generator=data_gen, device=device)
    steps = round(args.n / args.batch)
    config = DPSGDConfig(
        sampling_rate=args.batch / args.n,
        noise_multiplier=1.0,
        clip_norm=1.0,
        steps=steps,
        learning_rate=0.1,
        device=str(device),
    )

    def non_private(seed: int) -> None:
        gen = make_generator(seed, device)
        model = mlp(SIZES, generator=gen)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        perm = torch.randperm(args.n, generator=gen, device=device)
        for i in range(0, args.n, args.batch):
            idx = perm[i : i + args.batch]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()

    def private(seed: int) -> None:
        gen = make_generator(seed, device)
        train(mlp(SIZES, generator=gen), x, y, config, generator=gen)

    print(f"device {device}, torch threads {torch.get_num_threads()}, N = {args.n}, q = {args.batch}/{args.n}, "
          f"{steps} steps per epoch")  # fmt: skip
    base = _median_time(non_private, args.repeats, device)
    dp = _median_time(private, args.repeats, device)
    print(f"non-private SGD: {base:.3f} s/epoch")
    print(f"DP-SGD (train):  {dp:.3f} s/epoch ({dp / base:.2f}x non-private)")
    for k in args.ensemble:

        def ensemble(seed: int, k: int = k) -> None:
            gens = [make_generator(seed * 1000 + i, device) for i in range(k)]
            train_ensemble(lambda g: mlp(SIZES, generator=g), x, y, config, generators=gens)

        t = _median_time(ensemble, max(1, args.repeats // 2), device)
        print(f"DP-SGD (train_ensemble, K = {k}): {t:.3f} s/epoch, {t / k:.3f} s per model")


if __name__ == "__main__":
    main()
