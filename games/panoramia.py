"""PANORAMIA (Kazmi et al. 2024) as a game: generated non-members, an MIA against a helper-model baseline (SPEC §3).

A trial trains one target model and measures it three ways on the same target:

1. **PANORAMIA.**  The auditor knows D_f ⊂ D_train.  A generator (``generator``, a nested table generator) is
   trained on D_G ⊂ D_f; the other m known records are the audit's members D_in.  The generator draws m non-members
   D_out and, separately, ``helper_rows`` rows that train the helper model (``helper``) on the task: the helper
   never sees a real record nor an audit non-member.  Each audit index i shows D_in[i] or D_out[i] on a fair coin
   (Definition 2).  The audit set is split into a train and a test part; the attack (``classifier-mia``) is fitted
   twice on the train part — reading the target's loss (the MIA) and the helper's (the baseline) — and
   :func:`privgame.analysis.panoramia.measure` turns their test scores into c_lb, {c+ε}_lb and ε̃ = max(0, {c+ε}_lb −
   c_lb), a *measurement*, not a lower bound.
2. **O(1)** (Steinke et al.): ``o1_candidates`` further real records, each put in the target's training set on a
   fair coin before it trains; the loss-threshold attack guesses the ``o1_guesses`` lowest losses "member" and the
   ``o1_guesses`` highest "non-member": a sound lower bound on the target's ε (δ from ``[analysis]``).
3. **RM;RN**: the audit's members against ``m`` real records held out of training (never trained on), paired on
   fair coins, with the same learned MIA on the target and the same split; its members-only bound takes c = 0.

Randomness: every stream comes from (the experiment's root entropy, a role tag, the repetition, the sizes that
determine it), not from the grid point, so grid points that sweep the attack's classifier or m share the target
(the artefact cache holds it; its training set does not depend on m), the generator's training data and the O(1)
coins.  Records are the rows of the encoded population (:mod:`privgame.data.features`); the generator works on the raw
table and its rows are encoded with the same public encoding.

References
----------
.. [1] M. Kazmi et al. PANORAMIA: Privacy Auditing of Machine Learning Models without Retraining. NeurIPS 2024,
   arXiv:2402.09477.
.. [2] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run. NeurIPS 2023, arXiv:2305.08846.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int, check_real
from privgame.attacks._base import Attack
from privgame.data.features import population_table
from privgame.games._base import (
    AnalysisSettings,
    Game,
    TrialContext,
    TrialOutcome,
    keyed_seed,
    repetition_of,
    root_entropy,
)
from privgame.mechanisms._base import Mechanism

if TYPE_CHECKING:
    from privgame.attacks.classifier import ClassifierMIA

__all__ = ["PanoramiaGame"]

_TAG_SPLIT, _TAG_O1, _TAG_TARGET, _TAG_GENERATOR, _TAG_HELPER, _TAG_AUDIT, _TAG_MIA, _TAG_ANALYSIS = (
    0x9A01,
    0x9A02,
    0x9A03,
    0x9A04,
    0x9A05,
    0x9A06,
    0x9A07,
    0x9A08,
)
#: fewest examples of each class a classifier may be trained or measured on
MIN_CLASS_EXAMPLES = 10


def _default_generator() -> Mechanism:
    from privgame.mechanisms.synth.synthpop import Synthpop

    return Synthpop()


def _default_helper() -> Mechanism:
    from privgame.mechanisms.training.models import MLPClassifier

    return MLPClassifier(hidden=(64,), epochs=20)


@lru_cache(maxsize=64)
def _generator_problem(generator: Mechanism, data: Any) -> str | None:
    """Why ``generator`` cannot synthesise the ``data`` table (tried on its first 40 rows), or ``None``; asked once
    per generator and data (every grid point of a sweep asks)."""
    try:
        sample = population_table(data).iloc[:40].reset_index(drop=True)
        out = generator.release(sample, rng=np.random.default_rng(0))
    except (TypeError, ValueError) as exc:
        return f"generator '{generator.name}' cannot synthesise the {data.name} table: {exc}"
    if not isinstance(out, pd.DataFrame) or list(out.columns) != list(sample.columns):
        return f"generator '{generator.name}' must return a table with the {data.name} table's columns"
    return None


def _stream(entropy: int, tag: int, *extra: int) -> np.random.Generator:
    return np.random.default_rng(keyed_seed(entropy, tag, *extra))


@dataclass(frozen=True, slots=True)
class PanoramiaGame(Game):
    """PANORAMIA: real members vs generated non-members, an MIA vs a helper-model baseline; ε̃ beside O(1) and RM;RN.

    Parameters
    ----------
    data : str, default="adult"
        The population, a data set that serves tables and features (:func:`privgame.data.check_data`), encoded by
        :mod:`privgame.data.features` for the models: Adult or COMPAS records, scikit-learn's 8×8 digits as 64
        pixel columns and the digit (images; generator ``gaussian-mixture``, target ``cnn``), or one a plugin
        registered.
    train_size : int, default=10000
        Records the target trains on besides the O(1) candidates it includes (D_train's fixed part).
    generator_rows : int, default=3000
        |D_G|: the known records the generator trains on.
    m : int, default=2000
        The audit's size: m known members D_in (after D_G, within ``train_size``) and m generated non-members, of
        which each audit index shows one on a fair coin.
    helper_rows : int, default=3000
        Generated rows, drawn apart from the audit's non-members, that train the helper model.
    test_fraction : float, default=0.5
        The share of the audit set the classifiers are measured on (the rest trains them).
    thresholds : int, default=100
        Bonferroni candidates of each classifier's members-only bound (label-free quantiles of its test scores).
    o1_candidates : int, default=2000
        Real records for the O(1) audit, each in the target's training set on a fair coin (0: no O(1)).
    o1_guesses : int, default=200
        O(1)'s guesses on each side (the lowest losses "member", the highest "non-member").
    generator : Mechanism, default=synthpop
        The table generator, a nested table ``[game.generator]`` (synthpop, baynet, privbayes; gaussian-mixture
        for the digits).
    helper : Mechanism, default=mlp (64 hidden, 20 epochs)
        The helper model of the baseline, a nested table ``[game.helper]`` (a trained-model mechanism).

    Notes
    -----
    Threat model: the auditor knows the m + ``generator_rows`` records of D_f, the task, and the target model as a
    black box (its losses); it has no real non-members and no control over training (PANORAMIA).  O(1) and RM;RN
    need both and are computed here because the simulation has them.  The MIA and the baseline are the game's
    attack, ``classifier-mia``, fitted on the target and on the helper.
    """

    name: ClassVar[str] = "panoramia"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"dataset"})
    knowledge: ClassVar[frozenset[str]] = frozenset({"labelled"})
    headline: ClassVar[str] = "eps_tilde_median"
    headline_band: ClassVar[tuple[str, str] | None] = ("eps_tilde_min", "eps_tilde_max")
    side_by_side: ClassVar[tuple[tuple[str, str], ...] | None] = (
        ("c_lb (baseline)", "c_lb"),
        ("{c+ε}_lb (MIA)", "c_plus_eps_lb"),
        ("ε̃ (a measurement)", "eps_tilde"),
        ("RM;RN", "rmrn_epsilon_lb"),
        ("O(1)", "o1_epsilon_lb"),
    )

    data: str = "adult"
    train_size: int = 10_000
    generator_rows: int = 3000
    m: int = 2000
    helper_rows: int = 3000
    test_fraction: float = 0.5
    thresholds: int = 100
    o1_candidates: int = 2000
    o1_guesses: int = 200
    generator: Mechanism = field(default_factory=_default_generator)
    helper: Mechanism = field(default_factory=_default_helper)

    def __post_init__(self) -> None:
        from privgame.data.catalogue import check_data

        size = check_data(self.data, ("table", "features")).size
        train = check_int("train_size", self.train_size, low=2, high=size)
        generator_rows = check_int("generator_rows", self.generator_rows, low=2, high=train)
        m = check_int("m", self.m, low=2, high=size)
        if generator_rows + m > train:
            raise ValueError(
                f"m must be at most train_size − generator_rows = {train - generator_rows} (the known records D_f "
                f"of the training set hold D_G and the audit's members), got m = {m}."
            )
        check_int("helper_rows", self.helper_rows, low=2)
        fraction = check_real("test_fraction", self.test_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
        smaller = min(fraction, 1.0 - fraction) * m / 2  # expected examples of a class in the smaller part
        if smaller < 2 * MIN_CLASS_EXAMPLES:
            raise ValueError(
                f"m = {m} with test_fraction = {fraction:g} leaves about {smaller:.0f} examples of a class in the "
                f"smaller part of the audit's split; a classifier needs at least {MIN_CLASS_EXAMPLES} (raise m or "
                "bring test_fraction nearer 1/2)."
            )
        check_int("thresholds", self.thresholds, low=1, high=100_000)
        o1 = check_int("o1_candidates", self.o1_candidates, low=0, high=size)
        # checked without O(1) too (o1_candidates = 0), so that a mistyped value never passes unnoticed
        check_int("o1_guesses", self.o1_guesses, low=1, high=o1 // 2 if o1 else None)
        if train + o1 + m > size:
            raise ValueError(
                f"the {self.data} population has {size:,} records: train_size + o1_candidates + m (the real "
                f"non-members of O(1) and RM;RN, held out of training) = {train + o1 + m:,} is more; lower them."
            )
        for name, kind in (("generator", "table"), ("helper", "dataset")):
            component = getattr(self, name)
            if not isinstance(component, Mechanism) or component.input_kind != kind:
                what = (
                    "a table generator (synthpop, baynet, privbayes, gaussian-mixture)"
                    if kind == "table"
                    else "a trained model"
                )
                raise ValueError(f"{name} must be {what}, got {getattr(component, 'name', component)!r}.")
        if self.generator.release_kind != "table":
            raise ValueError(f"generator must release a table, got {self.generator.name!r}.")
        if self.helper.release_kind != "model":
            raise ValueError(f"helper must release a model, got {self.helper.name!r}.")
        object.__setattr__(self, "test_fraction", fraction)

    # -- compatibility and sizes --------------------------------------------------------------------------------
    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        from privgame.attacks.classifier import ClassifierMIA

        if mechanism.input_kind not in self.input_kinds or mechanism.release_kind != "model":
            return (
                f"game 'panoramia' audits a trained model (input 'dataset', release 'model'), but mechanism "
                f"'{mechanism.name}' takes '{mechanism.input_kind}'"
            )
        if not isinstance(attack, ClassifierMIA):
            return (
                f"game 'panoramia' fits the learned classifier 'classifier-mia' as MIA and baseline, got "
                f"'{attack.name}'"
            )
        from privgame.data.features import model_problem

        return (
            model_problem(mechanism, self.data)
            or model_problem(self.helper, self.data)
            or self.classifier_problem(attack)
            or self.generator_problem()
        )

    def classifier_problem(self, attack: ClassifierMIA) -> str | None:
        """Why the attack's classifier cannot read what it is trained on (each example and a model's signal, or
        the examples alone with ``signal = "none"``), or ``None``."""
        from privgame.data.catalogue import get_dataset
        from privgame.data.features import feature_count, model_problem

        classifier = attack.classifier
        if attack.signal == "none":  # the examples alone: the classifier reads the data's records
            problem = model_problem(classifier, self.data)
        else:
            dataset = get_dataset(self.data)
            width = attack.input_width(feature_count(dataset), dataset.n_classes)
            if callable(getattr(classifier, "image_problem", None)):
                inputs = "each example with" if attack.use_input else "only"
                problem = (
                    f"mechanism '{classifier.name}' reads images, but with signal = '{attack.signal}' it is trained "
                    f"on {inputs} the model's {attack.signal} ({width} features), which is no image; use a classifier "
                    f"of vectors (gradient-boosted-trees, mlp) or signal = 'none'"
                )
            else:
                check = getattr(classifier, "feature_problem", None)
                found = check(width) if callable(check) else None
                problem = None if found is None else f"mechanism '{classifier.name}': {found}"
        return None if problem is None else f"the classifier of attack '{attack.name}': {problem}"

    def generator_problem(self) -> str | None:
        """Why the generator cannot synthesise this data's table (tried on 40 rows), or ``None``."""
        from privgame.data.catalogue import get_dataset

        return _generator_problem(self.generator, get_dataset(self.data))

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        n = self.train_size + self.o1_candidates + self.m
        return mechanism.memory_bytes(n) + self.helper.memory_bytes(self.helper_rows) + 600 * (n + self.helper_rows)

    # -- play ----------------------------------------------------------------------------------------------------
    def _split(self, entropy: int, repetition: int) -> dict[str, np.ndarray]:
        """The records of each role, as population row numbers (independent of m except D_in and the held-out)."""
        from privgame.data.catalogue import get_dataset

        n = get_dataset(self.data).size
        order = _stream(entropy, _TAG_SPLIT, repetition).permutation(n)
        train, o1 = self.train_size, self.o1_candidates
        base = np.sort(order[:train])
        shuffled = order[:train]  # D_G, then D_in, in the permutation's order (not sorted: a random pick)
        return {
            "base": base,
            "generator": shuffled[: self.generator_rows],
            "members": shuffled[self.generator_rows : self.generator_rows + self.m],
            "o1": order[train : train + o1],
            "held_out": order[train + o1 : train + o1 + self.m],
        }

    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        from privgame.attacks.classifier import ClassifierMIA, LabelledExamples
        from privgame.data.features import encode, model_arrays, raw_columns
        from privgame.mechanisms.cached import cached_release
        from privgame.mechanisms.training.data import TrainingData

        if not isinstance(attack, ClassifierMIA):
            raise TypeError(f"game 'panoramia' fits 'classifier-mia', got {type(attack).__name__}.")
        entropy = root_entropy(seed, "the PANORAMIA game")
        rep = repetition_of(seed)
        cache = None if context is None else context.cache
        population = model_arrays(self.data)
        table = population_table(self.data)
        roles = self._split(entropy, rep)
        members, held = roles["members"], roles["held_out"]

        # phase 1: the generator on D_G, m audit non-members and the helper's rows, drawn apart (before the target
        # trains: the target is queried on the non-members, which a model released on given records must know)
        d_g = table.iloc[roles["generator"]].reset_index(drop=True)
        generator = self.generator
        wanted = self.m + self.helper_rows
        if any(f.name == "n_rows" for f in dataclasses.fields(generator)):  # type: ignore[arg-type]
            generator = dataclasses.replace(generator, n_rows=wanted)  # type: ignore[type-var]
        generator_seed = keyed_seed(entropy, _TAG_GENERATOR, rep, self.generator_rows, wanted)
        synthetic = cached_release(generator, d_g, seed=generator_seed, cache=cache)
        if len(synthetic) < wanted:
            raise ValueError(f"generator '{generator.name}' gave {len(synthetic)} rows, {wanted} were asked.")
        synthetic = synthetic.iloc[:wanted].reset_index(drop=True)
        generated = encode(synthetic, self.data)
        x_out, y_out = generated.x[: self.m], generated.y[: self.m]
        raw_out = raw_columns(synthetic.iloc[: self.m], self.data)

        # the target: the fixed part and the O(1) candidates drawn in on fair coins, before it trains; besides its
        # pool it is queried on the generated non-members and the real held-out records (RM;RN, its accuracy)
        o1_in = _stream(entropy, _TAG_O1, rep, self.train_size, self.o1_candidates).random(roles["o1"].size) < 0.5
        pool_ids = np.sort(np.concatenate([roles["base"], roles["o1"]]))  # not m's records: sweeping m keeps it
        position = np.full(population.y.shape[0], -1, dtype=np.int64)
        position[pool_ids] = np.arange(pool_ids.size)
        include = np.zeros(pool_ids.size, dtype=bool)
        include[position[roles["base"]]] = True
        include[position[roles["o1"][o1_in]]] = True
        raw_held = raw_columns(table.iloc[held], self.data)
        pool = TrainingData(
            population.x[pool_ids],
            population.y[pool_ids],
            include,
            n_classes=population.n_classes,
            queries=np.concatenate([x_out, population.x[held]]),
            frame=raw_columns(table.iloc[pool_ids], self.data),
            query_frame=pd.concat([raw_out, raw_held], ignore_index=True),
        )
        target_seed = keyed_seed(entropy, _TAG_TARGET, rep, self.train_size, self.o1_candidates)
        target = cached_release(mechanism, pool, seed=target_seed, cache=cache)
        if context is not None:
            context.advance(1)

        # the helper, on the generated rows alone; queried on the audit records (members or non-members) and the
        # held-out records
        raw_members = raw_columns(table.iloc[members], self.data)
        helper_data = TrainingData(
            generated.x[self.m :],
            generated.y[self.m :],
            np.ones(self.helper_rows, dtype=bool),
            n_classes=generated.n_classes,
            queries=np.concatenate([population.x[members], x_out, population.x[held]]),
            frame=raw_columns(synthetic.iloc[self.m :], self.data),
            query_frame=pd.concat([raw_members, raw_out, raw_held], ignore_index=True),
        )
        helper_seed = keyed_seed(entropy, _TAG_HELPER, rep, self.generator_rows, wanted)
        helper = cached_release(self.helper, helper_data, seed=helper_seed, cache=cache)

        # phase 2: the audit set (Definition 2), its split, and the two classifiers
        audit_rng = _stream(entropy, _TAG_AUDIT, rep, self.m)
        coins = audit_rng.random(self.m) < 0.5
        x = np.where(coins[:, None], population.x[members], x_out).astype(np.float32)
        y = np.where(coins, population.y[members], y_out)
        train_idx, test_idx = self._halves(audit_rng, coins)
        mia_rng, base_rng, rmrn_rng = (np.random.default_rng(s) for s in keyed_seed(entropy, _TAG_MIA, rep).spawn(3))
        mia = attack.fit(LabelledExamples(x, y, coins, train_idx, target), rng=mia_rng).score(target, test_idx)
        baseline = attack.fit(LabelledExamples(x, y, coins, train_idx, helper), rng=base_rng).score(helper, test_idx)

        # RM;RN: the same members against real held-out records, the same split, the same MIA on the target
        x_rn = np.where(coins[:, None], population.x[members], population.x[held]).astype(np.float32)
        y_rn = np.where(coins, population.y[members], population.y[held])
        rmrn = attack.fit(LabelledExamples(x_rn, y_rn, coins, train_idx, target), rng=rmrn_rng).score(target, test_idx)

        # O(1): the target's losses on its candidates
        o1_x, o1_y = population.x[roles["o1"]], population.y[roles["o1"]]
        o1_scores = -np.asarray(target.losses(o1_x, o1_y), dtype=np.float64) if o1_x.shape[0] else np.zeros(0)

        # how well each model fits: the target on its fixed part and on the held-out records, the helper on real data
        accuracy = np.array(
            [
                _accuracy(target, population.x[members], population.y[members]),
                _accuracy(target, population.x[held], population.y[held]),
                _accuracy(helper, population.x[held], population.y[held]),
            ]
        )
        return TrialOutcome(
            scores=mia,
            membership=coins[test_idx],
            arrays={
                "baseline": baseline,
                "rmrn": rmrn,
                "o1_scores": o1_scores,
                "o1_membership": o1_in,
                "accuracy": accuracy,
            },
        )

    def _halves(self, rng: np.random.Generator, member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The audit's train and test indices (a random split), each with at least 10 examples of each class."""
        order = rng.permutation(self.m)
        n_test = round(self.test_fraction * self.m)
        test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
        for name, part in (("train", train), ("test", test)):
            k = int(member[part].sum())
            if min(k, part.size - k) < MIN_CLASS_EXAMPLES:
                raise ValueError(
                    f"the audit's {name} part has {k} members and {part.size - k} non-members; each classifier needs "
                    f"at least {MIN_CLASS_EXAMPLES} of each (raise m)."
                )
        return train, test

    # -- analysis ------------------------------------------------------------------------------------------------
    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        from privgame.analysis.one_run import audit_top_k
        from privgame.analysis.panoramia import members_only_bound
        from privgame.analysis.thresholds import Bonferroni

        strategy = Bonferroni(self.thresholds)
        result = self._measure(outcome, settings)
        rmrn = members_only_bound(
            outcome.arrays["rmrn"], outcome.membership, confidence=settings.confidence, thresholds=strategy
        )
        o1 = float("nan")
        o1_scores = np.asarray(outcome.arrays["o1_scores"])
        if o1_scores.size:
            entropy = root_entropy(seed, "the PANORAMIA game")
            rep = repetition_of(seed)
            audit = audit_top_k(
                o1_scores,
                np.asarray(outcome.arrays["o1_membership"], dtype=bool),
                k_pos=self.o1_guesses,
                k_neg=self.o1_guesses,
                rng=_stream(entropy, _TAG_ANALYSIS, rep),
                delta=settings.delta,
                confidence=settings.confidence,
            )
            o1 = float(audit.epsilon)
        accuracy = np.asarray(outcome.arrays["accuracy"], dtype=np.float64)
        return {
            "c_lb": result.c_lb,
            "c_plus_eps_lb": result.c_plus_eps_lb,
            "eps_tilde": result.eps_tilde,
            "rmrn_epsilon_lb": rmrn,
            "o1_epsilon_lb": o1,
            "m": self.m,
            "n_test": result.n,
            "target_member_accuracy": float(accuracy[0]),
            "target_heldout_accuracy": float(accuracy[1]),
            "helper_accuracy": float(accuracy[2]),
        }

    def _measure(self, outcome: TrialOutcome, settings: AnalysisSettings) -> Any:
        """:func:`privgame.analysis.panoramia.measure` of the trial's stored test scores, with the game's thresholds."""
        from privgame.analysis.panoramia import measure
        from privgame.analysis.thresholds import Bonferroni

        return measure(
            outcome.arrays["baseline"],
            outcome.scores,
            outcome.membership,
            confidence=settings.confidence,
            thresholds=Bonferroni(self.thresholds),
        )

    def plot_trial(self, outcome: TrialOutcome, settings: AnalysisSettings, path: Path, *, title: str) -> Path:
        """The bound–recall and precision–recall curves of the MIA and the baseline on the trial's test part
        (:func:`privgame.analysis.panoramia.plot_curves`; the paper's Figures 3-4)."""
        from privgame.analysis.panoramia import plot_curves

        return plot_curves(self._measure(outcome, settings), path, title=title)

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, float | int]:
        out: dict[str, float | int] = {"epsilon_analytic": float(rows["epsilon_analytic"].iloc[0])}
        for column in ("c_lb", "c_plus_eps_lb", "eps_tilde", "rmrn_epsilon_lb", "o1_epsilon_lb"):
            values = rows[column].to_numpy(dtype=float)
            finite = values[np.isfinite(values)]
            for name, fn in (("median", np.median), ("min", np.min), ("max", np.max)):
                out[f"{column}_{name}"] = float(fn(finite)) if finite.size else float("nan")
        for column in ("target_member_accuracy", "target_heldout_accuracy", "helper_accuracy"):
            out[f"{column}_mean"] = float(rows[column].mean())
        out["m"] = self.m
        out["n_trials"] = len(rows)
        return out

    def brief_columns(self) -> tuple[str, ...]:
        return (
            "epsilon_analytic",
            "c_lb_median",
            "c_plus_eps_lb_median",
            "eps_tilde_median",
            "eps_tilde_min",
            "eps_tilde_max",
            "rmrn_epsilon_lb_median",
            "o1_epsilon_lb_median",
            "target_member_accuracy_mean",
            "target_heldout_accuracy_mean",
            "m",
            "n_trials",
        )


def _accuracy(model: Any, x: np.ndarray, y: np.ndarray) -> float:
    return float((np.asarray(model.logits(x)).argmax(axis=1) == y).mean()) if y.size else float("nan")
