"""Why PANORAMIA, RM;RN and O(1) find nothing on the digits: how well a CNN's loss tells its members from held-out
digits, and how well gradient-boosted trees tell generated digits from real ones.

Run:    python experiments/panoramia_digits_gap.py [--epochs 10 50 200 1000] [--seeds 3]

For each seed s: a random 990 of the 1,797 digits train the CNN of ``experiments/panoramia_digits.toml`` (``cnn``,
the given epochs, its rng seeded s); the other 807 are held out.  Printed per epochs: the accuracy on members and on
held-out digits, and the AUC of minus the loss as a member score (members against held-out digits: what RM;RN's
and O(1)'s attacks can use at best from the loss alone, 0.5 = no signal).  Then the generator: the per-class
Gaussian-copula mixture trained on 390 of the members draws 600 digits, and 5-fold cross-validated gradient-boosted
trees tell them from 600 held-out real digits (AUC; 0.5 = indistinguishable): what the baseline's c_lb feeds on.
Ends with one JSON line of the means.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_score

from privgame.data.features import encode, model_arrays, population_table
from privgame.mechanisms.synth.mixture import GaussianMixtureGenerator
from privgame.mechanisms.training.cnn import CNNClassifier
from privgame.mechanisms.training.data import TrainingData

TRAIN, GENERATOR_ROWS, M = 990, 390, 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, nargs="+", default=[10, 50, 200, 1000])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    arrays, table = model_arrays("digits"), population_table("digits")
    n = arrays.y.shape[0]
    out: dict[str, float] = {}
    for epochs in args.epochs:
        aucs, acc_in, acc_out = [], [], []
        for seed in range(args.seeds):
            order = np.random.default_rng(seed).permutation(n)
            include = np.zeros(n, dtype=bool)
            include[order[:TRAIN]] = True
            pool = TrainingData(arrays.x, arrays.y, include, n_classes=arrays.n_classes)
            model = CNNClassifier(epochs=epochs).release(pool, rng=np.random.default_rng(seed))
            losses = model.losses(arrays.x, arrays.y)
            aucs.append(roc_auc_score(include, -losses))
            predicted = model.logits(arrays.x).argmax(axis=1) == arrays.y
            acc_in.append(predicted[include].mean())
            acc_out.append(predicted[~include].mean())
        print(
            f"CNN {epochs:>5} epochs: accuracy {np.mean(acc_in):.3f} on members, {np.mean(acc_out):.3f} held out; "
            f"member AUC of the loss {np.mean(aucs):.3f} (min {np.min(aucs):.3f}, max {np.max(aucs):.3f})"
        )
        out[f"loss_auc_{epochs}"] = round(float(np.mean(aucs)), 4)
        out[f"heldout_accuracy_{epochs}"] = round(float(np.mean(acc_out)), 4)
    detect = []
    for seed in range(args.seeds):
        order = np.random.default_rng(seed).permutation(n)
        known = table.iloc[order[:GENERATOR_ROWS]].reset_index(drop=True)
        generated = GaussianMixtureGenerator(n_rows=M).release(known, rng=np.random.default_rng(seed))
        real = arrays.x[order[TRAIN : TRAIN + M]]
        x = np.vstack([real, encode(generated, "digits").x])
        y = np.r_[np.ones(len(real)), np.zeros(M)]
        folds = StratifiedKFold(5, shuffle=True, random_state=seed)
        detect.append(cross_val_score(HistGradientBoostingClassifier(), x, y, cv=folds, scoring="roc_auc").mean())
    print(f"generated vs real digits: cross-validated AUC {np.mean(detect):.3f} (min {np.min(detect):.3f})")
    out["generated_vs_real_auc"] = round(float(np.mean(detect)), 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
