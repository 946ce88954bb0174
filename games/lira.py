"""The efficient LiRA evaluation (Carlini et al. 2022) with per-sample FPR calibration and the FPC (SPEC §5).

A trial draws a pool of N₊ records from the population and trains M models, each on a random half of the pool:
models 2i and 2i + 1 train on complementary halves, so every record is IN exactly M/2 models and OUT of M/2, and
every model trains on N = N₊/2 records.  Each model in turn is the target and the other M − 1 its shadows
(leave-one-out): the attack (:class:`privgame.attacks.lira.LiRA`) scores every (model, record) pair from the others'
logit-scaled confidences.  The analysis (:func:`privgame.analysis.calibration.calibration_report`) gives, at each FPR,
the three aggregate numbers side by side — naive concatenated TPR, post-processed concatenated TPR (with the
N(0, 1) and the Student-t threshold) and the mean per-sample TPR — each with its realised FPR and a bootstrap
interval, plus the pooled AUC and a normality diagnostic of the OUT scores.

Randomness: every stream is derived from (the experiment's root entropy, a role tag, N₊, the repetition, the
model index), not from the grid point, so model k of repetition r is the same model in every grid point that
sweeps M: sweeping M = 16 → 64 → 256 trains only the new models (the artefact cache holds the others), and the
pairs' balance holds over the whole set because it holds for each pair.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int, check_real
from privgame.attacks._base import Attack
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
from privgame.mechanisms.cached import cached_release_many, release_key

__all__ = ["LiRAGame", "lira_masks", "record_aucs"]

_TAG_POOL, _TAG_MASK, _TAG_MODEL, _TAG_ANALYSIS = (0x9001, 0x3A5C, 0x30DE, 0xA7A1)
MAX_MODELS = 4096
#: the fewest models the analysis can calibrate with, whatever the attack (:meth:`LiRAGame.incompatibility`)
MIN_MODELS = 6


def record_aucs(scores: np.ndarray, member: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each record's (column's) Mann–Whitney AUC of its valid scores, members against non-members (ties 1/2);
    NaN where a side has no valid score."""
    from scipy import stats

    keyed = np.where(valid, scores, np.inf)  # unscored pairs rank last, and are not counted below
    ranks = stats.rankdata(keyed, axis=0)  # average ranks: a tie counts 1/2
    n_in = (valid & member).sum(axis=0)
    n_out = (valid & ~member).sum(axis=0)
    rank_in = np.where(valid & member, ranks, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_in - n_in * (n_in + 1) / 2.0) / (n_in * n_out)
    return np.where((n_in > 0) & (n_out > 0), auc, np.nan)


def _online_per_example(attack: Attack) -> bool:
    """Whether ``attack`` is online LiRA with each record's own IN and OUT variances (not ``fix_variance``)."""
    return (
        attack.name == "lira" and bool(getattr(attack, "online", False)) and not getattr(attack, "fix_variance", True)
    )


def lira_masks(n_models: int, pool_size: int, entropy: int, repetition: int) -> np.ndarray:
    """The (M, N₊) include-masks: models 2i and 2i + 1 train on complementary random halves (pair i's own stream)."""
    masks = np.zeros((n_models, pool_size), dtype=bool)
    for i in range(n_models // 2):
        rng = np.random.default_rng(keyed_seed(entropy, _TAG_MASK, pool_size, repetition, i))
        masks[2 * i, rng.permutation(pool_size)[: pool_size // 2]] = True
        masks[2 * i + 1] = ~masks[2 * i]
    return masks


@dataclass(frozen=True, slots=True)
class _Models:
    """One trial's models before training: the pool's ids, its data, the include-masks and each model's seed."""

    pool: np.ndarray
    base: Any  # TrainingData on the pool
    masks: np.ndarray
    seeds: list[np.random.SeedSequence]

    def answers(self, mechanism: Mechanism, part: range, *, cache: Any, progress: Any) -> list[_Answers]:
        """Models ``part``'s answers on the pool, each read from ``cache`` or computed from its model (read from
        ``cache`` or trained, the misses in one batched call) and stored there.

        The trial needs only these, so a run task that trains models leaves their answers too: the M forward
        passes then run on every worker, not in the trial (a sixth of its serial time at M = 64 on Adult).  An
        answer depends on the model's release (its key) and on the code that computes it (this module and the
        release protocol's), not on where it was computed: every trial runs with one BLAS thread.
        """
        data = [self.base.with_include(self.masks[k], size=self.base.size) for k in part]
        seeds = [self.seeds[k] for k in part]
        keys = [None if cache is None else _answers_key(mechanism, d, s) for d, s in zip(data, seeds, strict=True)]
        n = self.pool.shape[0]
        found: list[_Answers | None] = [
            None if key is None else cache.get_arrays(key, decode=lambda arrays: _Answers.decode(arrays, n))
            for key in keys
        ]
        missing = [i for i, answer in enumerate(found) if answer is None]
        if progress is not None and len(missing) < len(found):
            progress(len(found) - len(missing))
        if missing:
            releases = cached_release_many(
                mechanism, [data[i] for i in missing], seeds=[seeds[i] for i in missing], cache=cache, progress=progress
            )
            for i, release in zip(missing, releases, strict=True):
                found[i] = answer = _Answers.of(release, self.base.x, self.base.y)
                if keys[i] is not None:
                    cache.put_arrays(keys[i], answer.arrays(), compress=False)
        return [answer for answer in found if answer is not None]


@dataclass(frozen=True, slots=True)
class _Answers:
    """A model's answers on the pool: its confidence on each record's label (the logit-scaled statistic's input)
    and whether it labels the record right."""

    confidence: np.ndarray  # float64 (N₊,)
    correct: np.ndarray  # bool (N₊,)

    @classmethod
    def of(cls, release: Any, x: Any, y: np.ndarray) -> _Answers:
        logits = release.logits(x)  # one forward pass for the confidence and the accuracy
        confidence = np.asarray(release.confidence_from_logits(logits, y), dtype=np.float64)
        return cls(confidence, np.asarray(logits.argmax(axis=1) == y, dtype=bool))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"confidence": self.confidence, "correct": self.correct}

    @classmethod
    def decode(cls, arrays: dict[str, np.ndarray], n: int) -> _Answers:
        """From a cache entry: exactly the two vectors, of the pool's length ``n`` (anything else is a damaged
        entry)."""
        confidence, correct = arrays.get("confidence"), arrays.get("correct")
        if (
            set(arrays) != {"confidence", "correct"}
            or confidence is None
            or correct is None
            or confidence.dtype != np.float64
            or correct.dtype != np.bool_
            or confidence.shape != (n,)
            or correct.shape != (n,)
        ):
            raise ValueError("not a model's answers on a LiRA pool")
        return cls(confidence, correct)


def _answers_key(mechanism: Mechanism, data: Any, seed: np.random.SeedSequence) -> str | None:
    """The cache key of a model's :class:`_Answers` on its pool (whose hash the release key holds), or ``None``
    where the model is not cached."""
    from privgame.core.cache import code_fingerprint, make_key

    release = release_key(mechanism, data, seed)
    if release is None:
        return None
    code = [code_fingerprint(__name__), code_fingerprint("privgame.mechanisms.training.release")]
    return make_key(artefact="lira answers", release=release, code=code)


@dataclass(frozen=True, slots=True)
class LiRAGame(Game):
    """Efficient LiRA: M models on random halves of a pool, each the target of the others; three calibrated TPRs.

    Parameters
    ----------
    data : str, default="adult"
        The population: a data set that serves features (:func:`privgame.data.check_data`; Adult, COMPAS, the
        digits or one a plugin registered), encoded by :mod:`privgame.data.features`.
    pool_size : int, default=5000
        N₊, the pool the halves are drawn from (even; at most the population); each model trains on N₊/2.
    n_models : int, default=64
        M, even; at least 6 (the calibrated TPRs standardise each OUT pair by the σ of its record's M/2 − 1 other
        OUT models) and at least the attack's minimum (more with ``references``).
    batch : int, default=64
        Models trained per batched call (and stored to the cache together): a kill loses at most one batch.
    fprs : tuple of float, default=(0.001, 0.01, 0.1)
        The nominal FPRs of the report, each in (0, 1).
    n_boot : int, default=1000
        Bootstrap replicates of the intervals (resampling records).

    Notes
    -----
    Threat model: LiRA's adversary knows the pool, the training procedure and which records each shadow trained on;
    the secret of a pair (j, x) is whether model j trained on x.  Random per repetition: the pool, the halves and
    every model's training; the M models are shared by all grid points with the same N₊ (see the module
    docstring).  The FPC of this design is 1 − N/N₊ = 1/2; the attack applies it when its ``fpc`` is set, and the
    analysis then standardises with the corrected variances too.

    References
    ----------
    .. [1] N. Carlini et al. Membership Inference Attacks From First Principles. arXiv:2112.03570.
    .. [2] The LiRA calibration and finite-population-correction paper (SPEC §5).
    """

    name: ClassVar[str] = "lira"
    input_kinds: ClassVar[frozenset[str]] = frozenset({"dataset"})
    knowledge: ClassVar[frozenset[str]] = frozenset({"nothing", "auxiliary", "models"})
    headline: ClassVar[str] = "tpr_pp_t_0.001"
    headline_band: ClassVar[tuple[str, str] | None] = None

    data: str = "adult"
    pool_size: int = 5000
    n_models: int = 64
    batch: int = 64
    fprs: tuple[float, ...] = (0.001, 0.01, 0.1)
    n_boot: int = 1000

    def __post_init__(self) -> None:
        from privgame.data.catalogue import check_data

        size = check_data(self.data, "features").size
        n = check_int("pool_size", self.pool_size, low=4, high=size)
        if n % 2:
            raise ValueError(f"pool_size must be even (the models train on complementary halves), got {n}.")
        m = check_int("n_models", self.n_models, low=4, high=MAX_MODELS)
        if m % 2:
            raise ValueError(f"n_models must be even (models come in pairs on complementary halves), got {m}.")
        object.__setattr__(self, "batch", check_int("batch", self.batch, low=1, high=MAX_MODELS))
        if not isinstance(self.fprs, tuple | list) or len(self.fprs) == 0:
            shown: Any = list(self.fprs) if isinstance(self.fprs, tuple) else self.fprs  # a config's [] is frozen to ()
            raise TypeError(f"fprs must be a non-empty list of false-positive rates, got {shown!r}.")
        fprs = tuple(
            check_real(f"fprs[{i}]", f, low=0.0, high=1.0, low_open=True, high_open=True)
            for i, f in enumerate(self.fprs)
        )
        if len(set(fprs)) != len(fprs):
            raise ValueError(f"fprs must be distinct, got {list(fprs)!r}.")
        object.__setattr__(self, "fprs", fprs)
        object.__setattr__(self, "n_boot", check_int("n_boot", self.n_boot, low=0, high=100_000))
        object.__setattr__(self, "pool_size", n)
        object.__setattr__(self, "n_models", m)

    # -- compatibility and sizes --------------------------------------------------------------------------------
    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        from privgame.attacks._base import LeaveOneOutAttack

        if mechanism.input_kind not in self.input_kinds:
            return (
                f"game 'lira' needs a trained-model mechanism (input 'dataset'), but mechanism '{mechanism.name}' "
                f"takes '{mechanism.input_kind}'"
            )
        if not isinstance(attack, LeaveOneOutAttack):
            return (
                f"game 'lira' plays an attack with an efficient leave-one-out evaluation (lira, rmia) on its M models, "
                f"got attack '{attack.name}'"
            )
        from privgame.data.features import model_problem

        problem = model_problem(mechanism, self.data)
        if problem is not None:
            return problem
        if self.n_models < attack.min_models():
            return (
                f"n_models must be at least {attack.min_models()} for this {attack.name} attack (each target model's "
                f"M − 1 others must give every record enough IN and OUT scores), got {self.n_models}"
            )
        if self.n_models < MIN_MODELS:
            # whatever the attack reads, the analysis standardises every OUT pair by its record's other OUT
            # models (M/2 − 1 of them), and a standard deviation needs two
            return (
                f"n_models must be at least {MIN_MODELS} for the game's calibrated TPRs (each OUT pair is standardised "
                f"by the σ of its record's M/2 − 1 other OUT models, which needs two), got {self.n_models}"
            )
        return None

    def mechanism_runs(self, attack: Attack) -> int:
        return self.n_models

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """The (M, N₊) confidences, scores and masks with their working copies (about 20 float64 per pair), the
        pool, and the models of one batch (trained in one call: each further one adds its ``model_bytes``)."""
        from privgame.mechanisms.training.models import TrainedModel

        per_model = mechanism.model_bytes() if isinstance(mechanism, TrainedModel) else 0
        together = min(self.batch, self.n_models)
        return 160 * self.n_models * self.pool_size + mechanism.memory_bytes(self.pool_size) * 2 + per_model * together

    # -- the models: one trial's, or some of them as a task of their own ----------------------------------------
    def _models(self, seed: np.random.SeedSequence) -> _Models:
        """The trial's pool, include-masks and model seeds (everything a model depends on, from ``seed``)."""
        from privgame.data.features import model_arrays, population_table, raw_columns
        from privgame.mechanisms.training.data import TrainingData

        entropy = root_entropy(seed, "the LiRA game")
        repetition = repetition_of(seed)
        population = model_arrays(self.data)
        pool_rng = np.random.default_rng(keyed_seed(entropy, _TAG_POOL, self.pool_size, repetition))
        pool = np.sort(pool_rng.choice(population.y.shape[0], self.pool_size, replace=False))
        masks = lira_masks(self.n_models, self.pool_size, entropy, repetition)
        seeds = [keyed_seed(entropy, _TAG_MODEL, self.pool_size, repetition, k) for k in range(self.n_models)]
        # hashed once: every model's key shares its pool hash.  The models are queried on the pool only; its
        # records' own columns go along for a model that reads them (sklearn's features = "raw")
        frame = raw_columns(population_table(self.data).iloc[pool], self.data)
        x, y = population.x[pool], population.y[pool]
        base = TrainingData(x, y, masks[0], n_classes=population.n_classes, size=self.pool_size // 2, frame=frame)
        return _Models(pool, base, masks, seeds)

    def separate_runs(self, mechanism: Mechanism, attack: Attack) -> int:
        """Every one of the M models may be trained apart (:meth:`make_runs`)."""
        return self.n_models

    def run_batch(self, mechanism: Mechanism, attack: Attack) -> int:
        """``batch``: the most models trained (and held in memory) together."""
        return self.batch

    def make_runs(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        runs: range,
        context: TrialContext,
    ) -> None:
        """Train the models ``runs`` into the artefact cache, in one batched call, with their answers on the pool
        (:meth:`_Models.answers`: the trial reads those).

        Also imports ``scipy.stats``, which the trial's analysis needs (the calibrated thresholds, the normality
        diagnostic): a worker that makes runs then plays the trial after them without that import (0.7 s) in the
        run's serial tail, when the other workers have nothing left to do."""
        if not runs or runs.start < 0 or runs.stop > self.n_models or runs.step != 1:
            raise ValueError(f"runs must be a non-empty range of model indices in [0, {self.n_models}), got {runs!r}.")
        self._models(seed).answers(mechanism, runs, cache=context.cache, progress=context.progress)
        import scipy.stats  # noqa: F401

    # -- play ----------------------------------------------------------------------------------------------------
    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        from privgame.attacks._base import LeaveOneOutAttack

        if not isinstance(attack, LeaveOneOutAttack):
            raise TypeError(f"game 'lira' plays an attack with an efficient evaluation, got {type(attack).__name__}.")
        models = self._models(seed)
        pool, base, masks = models.pool, models.base, models.masks
        cache = None if context is None else context.cache
        progress = None if context is None else context.progress
        confidence = np.empty((self.n_models, self.pool_size))
        accuracy = np.empty((2, self.n_models))
        for start in range(0, self.n_models, self.batch):
            part = range(start, min(start + self.batch, self.n_models))
            for k, answer in zip(part, models.answers(mechanism, part, cache=cache, progress=progress), strict=True):
                confidence[k] = answer.confidence
                accuracy[:, k] = answer.correct[masks[k]].mean(), answer.correct[~masks[k]].mean()
        started = time.perf_counter()
        fpc = 1.0 - base.public_size / self.pool_size
        scores, valid, fpc = attack.efficient_scores(confidence, masks, fpc=fpc)
        if context is not None:
            context.timings["attack"] = time.perf_counter() - started
        return TrialOutcome(
            scores=scores.ravel(),
            membership=masks.ravel(),
            arrays={
                "shape": np.array([self.n_models, self.pool_size], dtype=np.int64),
                "confidence": confidence,
                "valid": valid.ravel(),
                "pool": pool.astype(np.int64),
                "train_accuracy": accuracy[0],
                "test_accuracy": accuracy[1],
                "fpc": np.array([fpc]),
                # online LiRA with each record's own IN and OUT variances: unreliable on few models (summary_notes)
                "online_per_example_variance": np.array([_online_per_example(attack)], dtype=bool),
            },
        )

    # -- analysis ------------------------------------------------------------------------------------------------
    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        from privgame.analysis.calibration import calibration_report, out_normality, pooled_auc

        m, n = (int(v) for v in outcome.arrays["shape"])
        scores = outcome.scores.reshape(m, n)
        member = outcome.membership.reshape(m, n)
        repetition = repetition_of(seed)
        stream = keyed_seed(root_entropy(seed, "the LiRA game"), _TAG_ANALYSIS, repetition)
        fpc = float(outcome.arrays["fpc"][0])

        def report(values: np.ndarray, require_pp: bool) -> Any:  # the same resampled records in both
            return calibration_report(
                values,
                member,
                fprs=self.fprs,
                fpc=fpc,
                confidence=settings.confidence,
                n_boot=self.n_boot,
                rng=np.random.default_rng(stream),
                require_pp=require_pp,
            )

        # naive: the attack's scores pooled under one threshold (what concatenated evaluations do; only its naive
        # numbers are read, so scores that are constant per record, which cannot be standardised, are reported
        # too); post-processed and per sample: the statistic LiRA models as Gaussian, the logit-scaled confidence.
        # The two reports are independent (each its own generator on the same stream), and numpy releases the GIL
        # in most of their work: the second is computed on a thread beside the first and the rest of the row.  A
        # trial (the serial tail of a run whose models are tasks) took 0.75 s instead of 1.06 s on two cores with
        # M = 64 models of 5,000 records and 1,000 replicates; on one core it takes what it took; the numbers are
        # the same either way
        with ThreadPoolExecutor(1, thread_name_prefix="privgame-lira-report") as beside:
            later = beside.submit(report, outcome.arrays["confidence"], True)
            naive = report(scores, False)
            normality = out_normality(outcome.arrays["confidence"], member)
            auc = pooled_auc(scores, member)
            own = self._own_per_record(scores, member, outcome.arrays["valid"].astype(bool).reshape(m, n))
            calibrated = later.result()
        flat = {**naive.flat(("naive",)), **calibrated.flat(("pp", "pp_t", "per_sample"))}
        row: dict[str, float | int] = {
            "n_models": m,
            "n_samples": n,
            "auc": auc,
            **flat,
            "train_accuracy": float(np.mean(outcome.arrays["train_accuracy"])),
            "test_accuracy": float(np.mean(outcome.arrays["test_accuracy"])),
            "unscored_pairs": int((~outcome.arrays["valid"].astype(bool)).sum()),
            "dropped_pairs_pp": calibrated.n_dropped_pairs,
            "normality_median_p": normality.median_p,
            "normality_share_p_below_0.05": normality.share_below_0_05,
        }
        for f, needed, spread in zip(
            naive.table["fpr"], naive.table["models_needed"], naive.table["naive_sample_fpr_p90"], strict=True
        ):
            row[f"models_needed_{float(f):g}"] = int(needed)
            row[f"naive_sample_fpr_p90_{float(f):g}"] = float(spread)
        row.update(own)
        if "online_per_example_variance" in outcome.arrays:  # outcomes stored before it was recorded have none
            row["online_per_example_variance"] = int(bool(outcome.arrays["online_per_example_variance"][0]))
        return row

    def _own_per_record(self, scores: np.ndarray, member: np.ndarray, valid: np.ndarray) -> dict[str, float]:
        """The attack's OWN per-sample numbers (its scores, not the confidences): at each FPR f the mean over
        records of the largest TPR whose realised FPR on the record's OUT models is at most f
        (``tpr_per_record_<f>``), and the mean realised FPR (``fpr_per_record_<f>``); records without an IN or an
        OUT score are left out."""
        from privgame.analysis.record_risk import column_tpr_at_fpr

        tpr, realised = column_tpr_at_fpr(scores, member, self.fprs, valid=valid)
        out: dict[str, float] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a pool where no record has both sides: NaN
            for k, f in enumerate(self.fprs):
                out[f"tpr_per_record_{f:g}"] = float(np.nanmean(tpr[k]))
                out[f"fpr_per_record_{f:g}"] = float(np.nanmean(realised[k]))
        return out

    def record_rows(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> list[dict[str, Any]]:
        """One row per pool record: its id in the population and its risk across the M target models (M/2 trained
        on it, M/2 not; unscored pairs left out): the AUC of the attack's scores on it (what ``privgame report
        --compare`` compares attacks by), and at each of the game's ``fprs`` f the largest TPR whose realised FPR
        on the record's own OUT models is at most f, ``tpr_at_fpr_<f>``, with that realised FPR,
        ``fpr_realised_<f>`` (:func:`privgame.analysis.record_risk.column_tpr_at_fpr`, as the record games'
        columns of those names; NaN where the record has no IN or no OUT score).  The realised FPR is a multiple
        of 1/n_out (n_out = M/2 OUT models): below 1/n_out no false positive is allowed, so with 32 OUT models
        ``tpr_at_fpr_0.001`` is the share of the record's IN scores above all of its OUT scores."""
        from privgame.analysis.record_risk import column_tpr_at_fpr

        m, n = (int(v) for v in outcome.arrays["shape"])
        scores = outcome.scores.reshape(m, n)
        member = outcome.membership.reshape(m, n)
        valid = outcome.arrays["valid"].astype(bool).reshape(m, n)
        auc = record_aucs(scores, member, valid)
        tpr, realised = column_tpr_at_fpr(scores, member, self.fprs, valid=valid)
        pool = outcome.arrays["pool"]
        n_in, n_out = (valid & member).sum(axis=0), (valid & ~member).sum(axis=0)
        rows: list[dict[str, Any]] = []
        for i in range(n):
            row: dict[str, Any] = {
                "record": int(pool[i]),
                "game": "lira",
                "rounds": int(n_in[i] + n_out[i]),
                "auc": float(auc[i]),
            }
            for k, f in enumerate(self.fprs):
                row[f"tpr_at_fpr_{f:g}"] = float(tpr[k, i])
                row[f"fpr_realised_{f:g}"] = float(realised[k, i])
            rows.append(row)
        return rows

    def brief_columns(self) -> tuple[str, ...]:
        """Each attack's own numbers: M, the AUC, and at each FPR the naive TPR and the mean per-record TPR of its
        scores with their realised FPRs; then the calibration of the models' confidences (:meth:`shared_columns`,
        which a report shows once per set of models) and the models' accuracies."""
        own = tuple(
            column
            for f in self.fprs
            for method in ("naive", "per_record")
            for column in (f"tpr_{method}_{f:g}", f"fpr_{method}_{f:g}")
        )
        return ("n_models", "auc", *own, *self.shared_columns(), "train_accuracy", "test_accuracy")

    shared_title: ClassVar[str] = (
        "calibration of the models' logit-scaled confidences under LiRA's Gaussian model (post-processed, "
        "Student-t and per-sample TPRs with their realised FPRs): statistics of the models, not of any attack's "
        "scores, the same for every attack on them but LiRA with fpc = true (it standardises with its corrected "
        "variances: then a row per attack)"
    )

    def shared_columns(self) -> tuple[str, ...]:
        """The summary columns that describe the set of models, not the attack: the post-processed (N(0, 1) and
        Student-t) and per-sample TPRs of the confidences, with their realised and expected FPRs."""
        return tuple(
            column
            for f in self.fprs
            for method in ("pp", "pp_t", "per_sample")
            for column in (
                (f"tpr_{method}_{f:g}", f"fpr_{method}_{f:g}")
                + ((f"fpr_per_sample_expected_{f:g}",) if method == "per_sample" else ())
            )
        )

    def summary_notes(self, summary: pd.DataFrame) -> list[str]:
        """Where a LiRA figure is not what it seems: the per-sample TPR of the confidences equal at every FPR
        (with M/2 OUT models per record, FPRs below about 2/M cannot be told apart), and online LiRA with
        per-example variances on fewer than 64 models (Carlini et al. fix the variance there: each record's two
        variances rest on M/2 models each, and the AUC can fall below 0.5 on models that do not leak)."""
        notes: list[str] = []
        columns = [f"tpr_per_sample_{f:g}" for f in self.fprs]
        if len(self.fprs) > 1 and all(c in summary for c in columns):
            for _, row in summary.iterrows():
                values = [float(row[c]) for c in columns]
                if np.all(np.isfinite(values)) and max(values) - min(values) < 1e-12:
                    m = int(row.get("n_models", 0) or 0)
                    notes.append(
                        f"the per-sample TPR is {values[0]:.3f} at every FPR ({', '.join(f'{f:g}' for f in self.fprs)})"
                        f" with M = {m} models: each record has {m // 2} OUT models, so its threshold cannot realise "
                        f"an FPR below 1/{m // 2} and the smaller FPRs are not told apart (more models are)"
                    )
                    break
        if {"online_per_example_variance", "n_models"} <= set(summary.columns):
            small = summary[(summary["online_per_example_variance"] == 1) & (summary["n_models"].astype(float) < 64)]
            if len(small):
                m = int(small["n_models"].min())
                auc = float(small["auc"].min()) if "auc" in small else float("nan")
                notes.append(
                    f"online LiRA with per-example variances at M = {m} models (AUC {auc:.3f}): each record's IN and "
                    f"OUT variances rest on {m // 2} models each, too few to estimate (Carlini et al. use one global "
                    "variance below 64 models); its AUC can fall below 0.5 on models that do not leak: set "
                    "fix_variance = true"
                )
        return notes

    def roc_curves(self, outcome: TrialOutcome) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The pooled log–log ROC (TPR against the realised FPR) of the attack's scores (naive) and of the
        standardised confidences (post-processed, the pairs that can be standardised)."""
        from privgame.analysis.calibration import loo_statistics, pooled_roc, standardise

        m, n = (int(v) for v in outcome.arrays["shape"])
        member = outcome.membership.reshape(m, n)
        confidence = outcome.arrays["confidence"]
        stats = loo_statistics(confidence, member, fpc=float(outcome.arrays["fpc"][0]))
        z = standardise(confidence, stats.mu_out, stats.sigma_out, valid=stats.valid)  # known direction: IN is higher
        _, naive_tpr, naive_fpr = pooled_roc(outcome.scores, outcome.membership)
        _, pp_tpr, pp_fpr = pooled_roc(z[stats.valid], member[stats.valid])
        return {
            "naive: the attack's scores pooled": (naive_fpr, naive_tpr),
            "post-processed: standardised confidences pooled": (pp_fpr, pp_tpr),
        }

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, float | int]:
        """The mean over repetitions (pools) of every per-trial number of the game, and how many there are."""
        bookkeeping = {
            "trial",
            "grid_point",
            "repetition",
            "spawn_key",
            "seconds",
            "epsilon_analytic",
            "mechanism_runs",
        }
        out: dict[str, Any] = {}
        if "epsilon_analytic" in rows:
            out["epsilon_analytic"] = float(rows["epsilon_analytic"].iloc[0])
        for column in rows.columns:
            # the swept parameters ("section.name") and the store's own columns are not the game's numbers
            if column in bookkeeping or column.startswith(("game.", "mechanism.", "attack.", "sha256", "seconds_")):
                continue
            values = rows[column]
            if not pd.api.types.is_numeric_dtype(values):
                continue
            constant_int = pd.api.types.is_integer_dtype(values) and values.nunique() == 1
            out[column] = int(values.iloc[0]) if constant_int else float(values.mean())
        out["n_trials"] = len(rows)
        return out
