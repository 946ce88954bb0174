"""Efficient LiRA: 256 shadow MLPs on Adult trained in one batched pass, side by side with scikit-learn, and scoring.

1. Shadows: 256 MLPs (the LiRA experiments' architecture: 108 → 64 → 2, ReLU, Adam 1e-3, batch 64, 30 epochs),
   each on a random half of a 5,000-record Adult pool, trained by ``MLPClassifier.release_runs`` (one batched pass
   per ``--batch`` models); target ≤ 10 minutes on 2 cores.
2. The same architecture, optimiser, batch size and epochs with scikit-learn's ``MLPClassifier`` trained one by one
   on the same halves (``--sklearn-models`` of them; the throughput is models per second, so a subset measures it);
   target ≥ 10× its throughput.
3. Scoring: every model's logit-scaled confidence on the N₊ pool records, then the leave-one-out LiRA scores of
   all 256 × N₊ (model, record) pairs (``LiRA.leave_one_out``).
4. DP-SGD over plain: ``--dpsgd-models`` of the same MLPs trained with DP-SGD (``dpsgd-mlp``, ε = 8, δ = 1e-5,
   q = 64/N, the same 30 epochs = 30/q steps) in one batched pass, per model against the plain batched training.

Parts 1 and 2 are each timed ``--repeats`` times (default 3) and their fastest run counts, alike for both: on a
shared machine other processes only ever slow a run down (the batched training's two threads most, when another
process holds a core and each parallel step waits for it), so the fastest run is the least disturbed one; every
run's time is printed and kept in the JSON line.

``--device cuda`` trains on a GPU (``benchmarks/gpu_check.sh`` runs it so).  Ends with one JSON line:
``shadows``, ``shadows_seconds``, ``seconds_per_shadow``, ``shadows_per_second``, ``sklearn_seconds_per_model``,
``speedup_vs_sklearn``, ``scoring_seconds``, ``loo_statistics_seconds`` (the calibration's leave-one-out statistics
of M × 2N₊ pairs; target < 1 s), ``rmia_k4_seconds``, ``lira_k4_seconds`` (4 references per sample),
``dpsgd_over_plain``, the sizes and the runs (``shadows_seconds_runs``, ``sklearn_seconds_per_model_runs``).
``--quick`` shrinks everything
(a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

from privgame.attacks.lira import LiRA
from privgame.data.features import model_arrays
from privgame.games.lira import lira_masks
from privgame.mechanisms.training import MLPClassifier, TrainingData


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=256)
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=256, help="models per batched call")
    parser.add_argument("--sklearn-models", type=int, default=12)
    parser.add_argument("--dpsgd-models", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:<index> or auto")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of parts 1 and 2 (the fastest counts)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.models, args.pool, args.epochs, args.sklearn_models, args.batch = 16, 1000, 3, 2, 16
        args.dpsgd_models, args.repeats = 4, 1
    print(f"cores: {os.cpu_count()}; pool N+ = {args.pool} Adult records, each model on N = {args.pool // 2}")

    population = model_arrays("adult")
    rng = np.random.default_rng(0)
    pool = np.sort(rng.choice(population.y.shape[0], args.pool, replace=False))
    x, y = population.x[pool], population.y[pool]
    masks = lira_masks(args.models, args.pool, 0, 0)
    mechanism = MLPClassifier(hidden=(64,), epochs=args.epochs, batch_size=64, learning_rate=1e-3, device=args.device)
    base = TrainingData(x, y, masks[0])

    # warm-up (torch's first kernels and thread pool), not timed
    MLPClassifier(hidden=(64,), epochs=1, device=args.device).release_runs(
        [base.with_include(masks[k]) for k in range(2)], rngs=[np.random.default_rng(k) for k in range(2)]
    )
    shadows_runs = []
    for _ in range(max(args.repeats, 1)):  # the same models every run (the same seeds)
        start = time.perf_counter()
        releases = []
        for first in range(0, args.models, args.batch):
            part = range(first, min(first + args.batch, args.models))
            releases += mechanism.release_runs(
                [base.with_include(masks[k]) for k in part], rngs=[np.random.default_rng(k) for k in part]
            )
        shadows_runs.append(time.perf_counter() - start)
    shadows_seconds = min(shadows_runs)
    per_shadow = shadows_seconds / args.models
    print(
        f"batched: {args.models} MLPs x {args.epochs} epochs in {shadows_seconds:.1f} s "
        f"({per_shadow * 1000:.0f} ms a model; target <= 600 s for 256; runs: "
        f"{', '.join(f'{t:.1f}' for t in shadows_runs)} s)"
    )

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier as SklearnMLP

    sklearn_runs = []
    for _ in range(max(args.repeats, 1)):
        start = time.perf_counter()
        for k in range(args.sklearn_models):
            model = SklearnMLP(
                hidden_layer_sizes=(64,),
                solver="adam",
                learning_rate_init=1e-3,
                batch_size=64,
                max_iter=args.epochs,
                alpha=0.0,
                tol=0.0,
                n_iter_no_change=args.epochs + 1,
                shuffle=True,
                random_state=k,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter is the epoch count, on purpose
                model.fit(x[masks[k]], y[masks[k]])
        sklearn_runs.append((time.perf_counter() - start) / args.sklearn_models)
    sklearn_per_model = min(sklearn_runs)
    speedup = sklearn_per_model / per_shadow
    print(
        f"scikit-learn MLPClassifier one by one: {sklearn_per_model * 1000:.0f} ms a model "
        f"({args.sklearn_models} trained; {sklearn_per_model * args.models:.0f} s for {args.models}; runs: "
        f"{', '.join(f'{t * 1000:.0f}' for t in sklearn_runs)} ms); batched is {speedup:.1f}x its throughput "
        "(target >= 10x)"
    )

    start = time.perf_counter()
    logits = [r.logits(x) for r in releases]
    confidence = np.stack([r.confidence_from_logits(z, y) for r, z in zip(releases, logits, strict=True)])
    scores, fits = LiRA().leave_one_out(confidence, masks)
    scoring_seconds = time.perf_counter() - start
    assert np.isfinite(scores).all() and bool(np.all(fits.valid))
    correct = np.stack([z.argmax(axis=1) == y for z in logits])
    train_acc, test_acc = float(correct[masks].mean()), float(correct[~masks].mean())
    print(
        f"scoring: confidences and leave-one-out LiRA scores of {args.models} x {args.pool} pairs in "
        f"{scoring_seconds:.2f} s; models' train / test accuracy {train_acc:.3f} / {test_acc:.3f}"
    )
    # the calibration's leave-one-out statistics (M = 256, N = 10,000 at full size; target well under 1 s) and the
    # attacks at 4 reference models per sample, on the same confidences
    from privgame.analysis.calibration import loo_statistics
    from privgame.attacks.rmia import RMIA

    wide = np.random.default_rng(3)
    loo_m = wide.random((args.models, 2 * args.pool)) < 0.5
    loo_s = wide.standard_normal(loo_m.shape) + loo_m
    loo_statistics(loo_s, loo_m)  # the first call pays for fresh pages
    start = time.perf_counter()
    loo_statistics(loo_s, loo_m)
    loo_seconds = time.perf_counter() - start
    timed = {}
    for label, attack in (("rmia_k4", RMIA(references=4)), ("lira_k4", LiRA(online=False, references=4))):
        start = time.perf_counter()
        attack.efficient_scores(confidence, masks, fpc=0.5)
        timed[label] = time.perf_counter() - start
    print(
        f"leave-one-out statistics of {args.models} x {2 * args.pool}: {loo_seconds:.3f} s; 4 references per "
        f"sample, {args.models} x {args.pool} pairs: RMIA {timed['rmia_k4']:.2f} s, "
        f"offline LiRA {timed['lira_k4']:.2f} s"
    )
    from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier

    n_train = args.pool // 2
    q = 64 / n_train
    private = DPSGDClassifier(
        epsilon=8.0,
        delta=1e-5,
        hidden=(64,),
        sampling_rate=q,
        steps=round(args.epochs / q),
        learning_rate=0.5,
        device=args.device,
    )
    sigma = private.sigma  # calibrated before the clock starts
    k = min(args.dpsgd_models, args.models)
    start = time.perf_counter()
    private.release_runs(
        [base.with_include(masks[i]) for i in range(k)], rngs=[np.random.default_rng(i) for i in range(k)]
    )
    dpsgd_per_model = (time.perf_counter() - start) / k
    print(
        f"DP-SGD (eps = 8, q = {q:.4f}, {private.steps} steps, sigma = {sigma:.3f}): {k} MLPs batched, "
        f"{dpsgd_per_model * 1000:.0f} ms a model, {dpsgd_per_model / per_shadow:.1f}x the plain batched training"
    )
    print(
        json.dumps(
            {
                "device": args.device,
                "shadows": args.models,
                "shadows_seconds": round(shadows_seconds, 2),
                "seconds_per_shadow": round(per_shadow, 4),
                "shadows_per_second": round(1.0 / per_shadow, 2),
                "dpsgd_seconds_per_model": round(dpsgd_per_model, 4),
                "dpsgd_over_plain": round(dpsgd_per_model / per_shadow, 2),
                "sklearn_seconds_per_model": round(sklearn_per_model, 4),
                "speedup_vs_sklearn": round(speedup, 2),
                "scoring_seconds": round(scoring_seconds, 3),
                "loo_statistics_seconds": round(loo_seconds, 3),
                "rmia_k4_seconds": round(timed["rmia_k4"], 3),
                "lira_k4_seconds": round(timed["lira_k4"], 3),
                "pool": args.pool,
                "epochs": args.epochs,
                "sklearn_models": args.sklearn_models,
                "repeats": max(args.repeats, 1),
                "shadows_seconds_runs": [round(t, 2) for t in shadows_runs],
                "sklearn_seconds_per_model_runs": [round(t, 4) for t in sklearn_runs],
                "train_accuracy": round(train_acc, 4),
                "test_accuracy": round(test_acc, 4),
                "cores": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
