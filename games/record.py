"""Record-level membership games (Krčo et al. 2025): the traditional and the model-seeded game, on the same targets.

For a target record x of a released dataset D, a mechanism A (a synthetic-data generator, later a trained model)
and a fitted attack φ:

- **Traditional game** (Krčo et al., Def. 2): each round draws a FRESH D̄ of n − 1 records from the evaluation
  pool, flips b, and releases A(D̄ ∪ {x}) (b = 1) or A(D̄ ∪ {r}) (b = 0, r a random record of the pool outside D̄).
  Its success converges to x's risk averaged over datasets.
- **Model-seeded game** (Def. 3): D̄ = D \\ {x}, FIXED for every round; only A's seed changes.  b = 0 releases
  A(D̄ ∪ {r}) (``neighbours = "replace"``, the paper's code) or A(D̄) (``"add-remove"``).  Its success converges
  to x's risk in the dataset actually released; its rounds are independent runs on two neighbouring datasets, so
  their Clopper–Pearson bound is a sound per-record DP audit under that neighbouring relation.

The attack for a target is trained ONCE (shadow modelling on the auxiliary data) and plays every game of the
trial.  A trial is one target; the grid point's trials are its targets, chosen from D by the Achilles
vulnerability score (the most vulnerable) and uniformly at random, or given by id.

The population is split once per experiment seed into three disjoint parts: the released dataset D (n records,
holding the targets), the adversary's auxiliary data, and the challenger's evaluation pool (fresh D̄ and reference
records).  The reference implementation of the paper has two bugs we test against: its "out" world still holds
the target, and its evaluation pool overlaps D.

Randomness: every stream of a target is derived from (the experiment's root entropy, a role tag, the record id),
not from the trial's position in the grid, so the same record gets the same attack, the same shadows and the
same rounds in every grid point and every experiment with that seed — this is what lets two games (or two
experiments) on one target share their shadows through the artefact cache, and makes the two games' rounds
comparable.  The runner's trial seed still decides which target a trial plays (its last spawn-key entry).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from dp_accounting import NeighboringRelation
from scipy import stats

from privgame.analysis._checks import check_int
from privgame.analysis.multi_run import audit_scores
from privgame.analysis.record_risk import (
    MISS_RATE_THRESHOLDS,
    accuracy_interval,
    auc_interval,
    miss_rate_table,
    rmsd,
    tpr_at_fpr,
)
from privgame.analysis.thresholds import Split
from privgame.analysis.vulnerability import achilles_scores, select_targets
from privgame.attacks._base import Attack
from privgame.attacks.knowledge import BlackBox, Knowledge
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
from privgame.mechanisms.cached import cached_release_many

__all__ = [
    "GAMES_PLAYED",
    "NEIGHBOURS",
    "ModelSeededRecordGame",
    "RecordGames",
    "RecordSetup",
    "TraditionalRecordGame",
    "record_setup",
]

GAMES_PLAYED = ("traditional", "model-seeded")
NEIGHBOURS = ("replace", "add-remove")
SELECTIONS = ("achilles", "random", "given")
TPR_FPRS = (0.01, 0.1)
_TAG_SETUP, _TAG_ATTACK, _TAG_TRADITIONAL, _TAG_MODEL_SEEDED, _TAG_ANALYSIS = (0x5E7, 0xA7, 0x7D, 0x35, 0xA1)
_TAG_FAMILY = 0xFA
_CHUNK = 25
MAX_ROUNDS = 100_000  # a hundred thousand generator runs per target and game is days of work: a typo, not a plan
MAX_BOOT = 100_000
ACHILLES_NEIGHBOURS = 5  # Meeus et al.'s k, which the targets' ranking uses: D needs that many records
_RELATION = {"replace": NeighboringRelation.REPLACE_ONE, "add-remove": NeighboringRelation.ADD_OR_REMOVE_ONE}


def _check_columns(data: str, columns: tuple[str, ...] | None) -> tuple[str, ...]:
    """The game's columns (all of the data set's when ``columns`` is None), checked against its public domain."""
    from privgame.data.catalogue import get_dataset

    known = get_dataset(data).columns
    if columns is None:
        return known
    missing = [c for c in columns if c not in known]
    if missing:
        raise ValueError(f"columns must name columns of the {data!r} data ({', '.join(known)}), got {missing[0]!r}.")
    return columns


def _population(data: Any, columns: tuple[str, ...] | None) -> pd.DataFrame:
    """The population of ``data`` (a name or a Dataset) on ``columns``; cached per data set OBJECT, not per name,
    so that a data set registered again under its name (an edited file, a re-run notebook cell) is read anew."""
    from privgame.data.catalogue import get_dataset

    return _population_of(get_dataset(data), columns)


@lru_cache(maxsize=4)
def _population_of(dataset: Any, columns: tuple[str, ...] | None) -> pd.DataFrame:
    table = dataset.table()
    if columns is not None:
        table = table[list(_check_columns(dataset.name, columns))]
    return table.reset_index(drop=True)


def _model_pool(data: str, setup: RecordSetup) -> tuple[Any, np.ndarray]:
    """The pool every round's training set is a mask of, for a trained model: the released dataset and the
    evaluation pool (every record a round can draw), encoded (:mod:`privgame.data.features`), in increasing id
    order; and the position of each population id in it (−1: not in the pool).  Built once per setup, so its content
    hash is computed once; a pool smaller than the population keeps DP-SGD's per-row Poisson draws to what a round can
    use."""
    if setup.model_pool is None:
        from privgame.data.features import model_arrays, raw_columns
        from privgame.mechanisms.training.data import TrainingData

        arrays = model_arrays(data)
        ids = np.union1d(setup.released, setup.evaluation)
        position = np.full(arrays.y.shape[0], -1, dtype=np.int64)
        position[ids] = np.arange(ids.size)
        # a round's model is queried on its target, a record of D: in the pool (sklearn's release answers on it);
        # the records' own columns go along for a model that reads them (features = "raw")
        frame = raw_columns(setup.population.iloc[ids], data)
        pool = TrainingData(
            arrays.x[ids], arrays.y[ids], np.ones(ids.size, dtype=bool), n_classes=arrays.n_classes, frame=frame
        )
        object.__setattr__(setup, "model_pool", (pool, position))
    return setup.model_pool


@dataclass(frozen=True)
class _Encoder:
    """The public encoding of ``data``'s records as model inputs (picklable, unlike a closure)."""

    data: str

    def __call__(self, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        from privgame.data.features import encode

        arrays = encode(table, self.data)
        return arrays.x, arrays.y

    @property
    def n_classes(self) -> int:
        """The classes of the label's public domain: every model of the game has this many outputs."""
        from privgame.data.catalogue import get_dataset

        return get_dataset(self.data).n_classes


@dataclass(frozen=True)
class _RawColumns:
    """``data``'s records as the columns a model with its own preprocessing reads, the label left out."""

    data: str

    def __call__(self, table: pd.DataFrame) -> pd.DataFrame:
        from privgame.data.features import raw_columns

        return raw_columns(table, self.data)


def _public_ranges(data: Any, columns: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    from privgame.data.catalogue import get_dataset

    return {c: (float(lo), float(hi)) for c, lo, hi in get_dataset(data).domain.ranges if c in columns}


@dataclass(frozen=True, eq=False)
class RecordSetup:
    """The split of the population for one experiment seed, and the targets.

    Attributes
    ----------
    population : DataFrame
        The whole data set; a record's id is its row number here (load order).
    released, auxiliary, evaluation : ndarray of int
        Disjoint record ids: the released dataset D (n), the adversary's auxiliary data, the evaluation pool.
    targets : ndarray of int
        The target ids, in trial order (all in ``released``).
    selection : ndarray of str
        How each target was chosen: "achilles", "random" or "given".
    vulnerability : ndarray of float
        Each target's Achilles score within D.
    model_pool : tuple or None
        For trained models, the encoded pool of the rounds and the position of each id in it (built on first use).
    """

    population: pd.DataFrame
    released: np.ndarray
    auxiliary: np.ndarray
    evaluation: np.ndarray
    targets: np.ndarray
    selection: np.ndarray
    vulnerability: np.ndarray
    model_pool: Any = None


def _setup_key(game: _RecordGameBase) -> tuple[Any, ...]:
    from privgame.data.catalogue import get_dataset

    return (
        get_dataset(game.data),  # the data set object: one registered again under its name is another key
        game.columns,
        game.dataset_size,
        game.auxiliary_size,
        game.evaluation_size,
        game.vulnerable_targets,
        game.random_targets,
        game.targets,
    )


@lru_cache(maxsize=8)
def _setup_cached(key: tuple[Any, ...], entropy: int) -> RecordSetup:
    data, columns, n, n_aux, n_eval, n_vulnerable, n_random, given = key
    population = _population(data, columns)
    rng = np.random.default_rng(keyed_seed(entropy, _TAG_SETUP))
    fixed = np.array(given if given is not None else (), dtype=np.int64)
    others = rng.permutation(np.setdiff1d(np.arange(len(population)), fixed))
    released = np.concatenate([fixed, others[: n - fixed.size]])
    rest = others[n - fixed.size :]
    auxiliary, evaluation = rest[:n_aux], rest[n_aux : n_aux + n_eval]
    d_table = population.iloc[released]
    scores = achilles_scores(
        d_table, k=ACHILLES_NEIGHBOURS, ranges=_public_ranges(data, tuple(population.columns)) or None
    )
    if given is not None:
        positions = np.arange(fixed.size)
        selection = np.array(["given"] * fixed.size)
    else:
        positions, selection = select_targets(scores, n_vulnerable=n_vulnerable, n_random=n_random, rng=rng)
    return RecordSetup(
        population=population,
        released=released,
        auxiliary=auxiliary,
        evaluation=evaluation,
        targets=released[positions],
        selection=np.asarray(selection, dtype=str),
        vulnerability=scores[positions],
    )


def record_setup(game: _RecordGameBase, seed: int | np.random.SeedSequence) -> RecordSetup:
    """The population split and targets of ``game`` for an experiment seed (the same in every trial)."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return _setup_cached(_setup_key(game), _entropy(ss))


def _entropy(seed: np.random.SeedSequence) -> int:
    return root_entropy(seed, "a record game")


def _opaque_rng(seed: np.random.SeedSequence) -> np.random.Generator:
    """A generator with the stream of ``seed`` that does not reveal ``seed``: its ``seed_seq`` is a one-way hash.

    The attack gets its generator from the game; through ``rng.bit_generator.seed_seq`` it could otherwise read the
    experiment's entropy and rebuild the rounds' secret bits.  The draws are those of ``default_rng(seed)``.
    """
    visible = np.random.PCG64(seed)
    hidden = np.random.PCG64(np.random.SeedSequence(seed.generate_state(4)))
    hidden.state = visible.state
    return np.random.Generator(hidden)


def _split_seed(record: int, code: int) -> int:
    """The seed of the threshold split of ``record``'s rounds in game ``code``: one split per (record, game), used
    by its per-record bound at β and by the summary's bound at β/M alike, so that the summary (the largest
    per-record bound at β/M) never exceeds the largest per-record bound."""
    return int(np.random.default_rng(keyed_seed(0, _TAG_FAMILY, record, code)).integers(2**62))


def _record_bound(scores: np.ndarray, labels: np.ndarray, confidence: float, delta: float, split_seed: int) -> float:
    """The rounds' Clopper–Pearson ε lower bound, threshold chosen on a random half (``split_seed``) and bounded on
    the rest; 0 (always a valid lower bound) when the random half leaves nothing to choose on."""
    try:
        audit = audit_scores(
            scores[labels],
            scores[~labels],
            confidence=confidence,
            delta=delta,
            threshold=Split(seed=split_seed),
        )
    except ValueError:  # the split left no rounds on one side (probability 2^-rounds)
        return 0.0
    return float(audit.epsilon)


def _balanced_labels(rounds: int, rng: np.random.Generator) -> np.ndarray:
    labels = np.zeros(rounds, dtype=bool)
    labels[: (rounds + 1) // 2] = True
    rng.shuffle(labels)
    return labels


@dataclass(frozen=True, slots=True)
class _RecordGameBase(Game):
    """Shared parameters of the record-level games (documented on each game)."""

    input_kinds: ClassVar[frozenset[str]] = frozenset({"table", "dataset"})
    knowledge: ClassVar[frozenset[str]] = frozenset({"nothing", "auxiliary"})

    data: str = "adult"
    columns: tuple[str, ...] | None = None
    dataset_size: int = 1000
    auxiliary_size: int = 10_000
    evaluation_size: int = 10_000
    rounds: int = 200
    vulnerable_targets: int = 15
    random_targets: int = 15
    targets: tuple[int, ...] | None = None
    n_boot: int = 1000

    def __post_init__(self) -> None:
        from privgame.data.catalogue import check_data

        size = check_data(self.data, "table").size
        if self.columns is not None:
            if not isinstance(self.columns, tuple | list) or not all(isinstance(c, str) for c in self.columns):
                raise TypeError(f"columns must be a list of column names, got {self.columns!r}.")
            if len(self.columns) == 0 or len(set(self.columns)) != len(self.columns):
                raise ValueError(f"columns must be distinct and at least one, got {list(self.columns)!r}.")
            object.__setattr__(self, "columns", tuple(self.columns))
        _check_columns(self.data, self.columns)
        n = check_int("dataset_size", self.dataset_size, low=2, high=size)
        if n < ACHILLES_NEIGHBOURS:
            raise ValueError(
                f"dataset_size must be at least {ACHILLES_NEIGHBOURS} (each record's Achilles score, which ranks the "
                f"targets, averages its distances to its {ACHILLES_NEIGHBOURS} nearest records in D, itself "
                f"included), got {n}."
            )
        n_aux = check_int("auxiliary_size", self.auxiliary_size, low=n)
        n_eval = check_int("evaluation_size", self.evaluation_size, low=n)
        if n + n_aux + n_eval > size:
            raise ValueError(
                f"dataset_size + auxiliary_size + evaluation_size must be at most the {size:,} records of "
                f"{self.data!r} (the three parts are disjoint), got {n} + {n_aux} + {n_eval} = {n + n_aux + n_eval}."
            )
        object.__setattr__(self, "rounds", check_int("rounds", self.rounds, low=2, high=MAX_ROUNDS))
        object.__setattr__(self, "n_boot", check_int("n_boot", self.n_boot, low=10, high=MAX_BOOT))
        if self.targets is not None:
            if not isinstance(self.targets, tuple | list):
                raise TypeError(f"targets must be a list of record ids, got {self.targets!r}.")
            if len(self.targets) == 0:
                raise ValueError("targets must name at least one record id, got [].")
            ids = tuple(check_int(f"targets[{k}]", t, low=0) for k, t in enumerate(self.targets))
            bad = [t for t in ids if t >= size]
            if bad:
                raise ValueError(f"targets must be record ids of {self.data!r} (0 to {size - 1}), got {bad[0]}.")
            repeated = sorted({t for t in ids if ids.count(t) > 1})
            if repeated:
                raise ValueError(f"targets must be distinct record ids, got {repeated[0]} more than once.")
            if len(ids) > n:
                raise ValueError(f"targets must be at most dataset_size = {n} records, got {len(ids)}.")
            object.__setattr__(self, "targets", ids)
        else:
            nv = check_int("vulnerable_targets", self.vulnerable_targets, low=0)
            nr = check_int("random_targets", self.random_targets, low=0)
            if not 1 <= nv + nr <= n:
                raise ValueError(
                    f"vulnerable_targets + random_targets must be between 1 and dataset_size = {n}, got {nv} + {nr}."
                )
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "auxiliary_size", n_aux)
        object.__setattr__(self, "evaluation_size", n_eval)

    # -- what the subclasses choose ------------------------------------------------------------------------
    def played(self) -> tuple[str, ...]:
        """The games a trial plays, in order."""
        raise NotImplementedError

    def neighbours_of(self, game: str) -> str:
        """The neighbouring relation of ``game``'s two worlds (the traditional game's is always replace-one)."""
        return "replace"

    # -- Game interface --------------------------------------------------------------------------------------
    def trials_per_point(self) -> int:
        return len(self.targets) if self.targets is not None else self.vulnerable_targets + self.random_targets

    def mechanism_runs(self, attack: Attack) -> int:
        return int(getattr(attack, "n_shadows", 0)) + self.rounds * len(self.played())

    def separate_runs(self, mechanism: Mechanism, attack: Attack) -> int:
        """The attack's shadow tables (where it builds them the shared way, :attr:`Attack.shadow_tables`; tables
        only), then each played game's rounds, in the order :meth:`play` makes them."""
        shadows = attack.shadow_runs() if mechanism.input_kind == "table" else 0
        return shadows + self.rounds * len(self.played())

    def run_batch(self, mechanism: Mechanism, attack: Attack) -> int:
        """As many runs as :meth:`play` makes in one call (a chunk of rounds)."""
        return _CHUNK

    def make_runs(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        runs: range,
        context: TrialContext,
    ) -> None:
        """Make the runs ``runs`` into the artefact cache: run i < S is the attack's shadow i (S =
        :meth:`Attack.shadow_runs`; the fit builds it from its stream 0 as
        :func:`privgame.attacks.shadow.shadow_dataset` i), and the others the rounds of each played game in turn,
        with the inputs and seeds :meth:`play` gives them."""
        from privgame.attacks.shadow import attack_streams, shadow_dataset

        total = self.separate_runs(mechanism, attack)
        if not runs or runs.start < 0 or runs.stop > total or runs.step != 1:
            raise ValueError(f"runs must be a non-empty range of run indices in [0, {total}), got {runs!r}.")
        setup = self.setup(seed)
        target = int(setup.targets[repetition_of(seed)])
        entropy = _entropy(seed)
        shadows = total - self.rounds * len(self.played())
        inputs: list[Any] = []
        seeds: list[np.random.SeedSequence] = []
        if runs.start < shadows:
            knowledge = self.knowledge_for(setup, target, mechanism, context)
            # the first draw of the generator the game hands the attack's fit: its shadows' stream
            (stream,) = attack_streams(_opaque_rng(keyed_seed(entropy, _TAG_ATTACK, target)), 1)
            for i in range(runs.start, min(runs.stop, shadows)):
                data, _, release = shadow_dataset(knowledge, i, seed=stream)
                inputs.append(data)
                seeds.append(release)
        first = shadows
        for game in (g for g in GAMES_PLAYED if g in self.played()):
            low, high = max(runs.start - first, 0), min(runs.stop - first, self.rounds)
            if low < high:
                _, plans = self._worlds(game, setup, target, entropy)
                for ids, release_seed, _ in itertools.islice(plans, low, high):
                    inputs.append(self._input(mechanism, setup, ids))
                    seeds.append(release_seed)
            first += self.rounds
        cached_release_many(mechanism, inputs, seeds=seeds, cache=context.cache, progress=context.progress)

    def trial_bytes(self, mechanism: Mechanism, attack: Attack) -> int:
        """The attack's features of every shadow and round table, plus one generator run on the released rows;
        for a trained model, the models of one call too (a chunk of rounds, or a target's shadows)."""
        from privgame.mechanisms.training.models import TrainedModel

        d = len(_check_columns(self.data, self.columns))
        together = max(min(_CHUNK, self.rounds), int(getattr(attack, "n_shadows", 0)))
        per_model = mechanism.model_bytes() if isinstance(mechanism, TrainedModel) else 0
        return (
            attack.memory_bytes(self.mechanism_runs(attack), d)
            + mechanism.memory_bytes(self.dataset_size * d)
            + per_model * together
        )

    def incompatibility(self, mechanism: Mechanism, attack: Attack) -> str | None:
        reason = Game.incompatibility(self, mechanism, attack)
        if reason is None and mechanism.input_kind == "dataset" and self.columns is not None:
            return (
                f"columns must be left out for a trained model (it trains on every column, encoded by "
                f"privgame/data/features.py), got {list(self.columns)!r}"
            )
        if reason is None and mechanism.input_kind == "dataset":
            from privgame.data.features import model_problem

            reason = model_problem(mechanism, self.data)
        check = getattr(attack, "table_incompatibility", None)
        if reason is None and callable(check):
            reason = check(_population(self.data, self.columns).iloc[:1])
        generator_check = getattr(mechanism, "table_problem", None)  # a generator that reads the schema first
        if reason is None and mechanism.input_kind == "table" and callable(generator_check):
            problem = generator_check(_population(self.data, self.columns).iloc[:1])
            if problem is not None:
                reason = f"mechanism '{mechanism.name}' cannot synthesise the {self.data!r} table: {problem}"
        return reason

    def setup(self, seed: np.random.SeedSequence) -> RecordSetup:
        """The experiment's split and targets (:func:`record_setup`)."""
        return record_setup(self, seed)

    def knowledge_for(
        self, setup: RecordSetup, target: int, mechanism: Mechanism, context: TrialContext | None
    ) -> Knowledge:
        """What the adversary knows about ``target``: auxiliary data, the record, n, black-box access."""
        pop = setup.population
        return Knowledge(
            auxiliary=pop.iloc[setup.auxiliary].reset_index(drop=True),
            targets=pop.iloc[[target]].reset_index(drop=True),
            dataset_size=self.dataset_size,
            neighbours=self.neighbours_of(self.played()[-1]),
            encoder=_Encoder(self.data) if mechanism.input_kind == "dataset" else None,
            raw_columns=_RawColumns(self.data) if mechanism.input_kind == "dataset" else None,
            oracle=BlackBox(
                mechanism,
                cache=None if context is None else context.cache,
                progress=None if context is None else context.progress,
            ),
        )

    def _worlds(
        self, game: str, setup: RecordSetup, target: int, entropy: int
    ) -> tuple[np.ndarray, Iterator[tuple[np.ndarray, np.random.SeedSequence, int]]]:
        """The b of each round, and the rounds' (input ids, release seed, reference id) made one at a time.

        The reference id is −1 where b = 1 and −2 where b = 0 releases D̄ alone (add/remove).
        """
        tag = _TAG_TRADITIONAL if game == "traditional" else _TAG_MODEL_SEEDED
        relation = self.neighbours_of(game)
        root = keyed_seed(entropy, tag, target, NEIGHBOURS.index(relation))
        label_seed, *round_seeds = root.spawn(self.rounds + 1)
        labels = _balanced_labels(self.rounds, np.random.default_rng(label_seed))
        n = self.dataset_size
        fixed = setup.released[setup.released != target]

        def rounds() -> Iterator[tuple[np.ndarray, np.random.SeedSequence, int]]:
            for b, seed in zip(labels, round_seeds, strict=True):
                data_seed, release_seed = seed.spawn(2)
                rng = np.random.default_rng(data_seed)
                if game == "traditional":
                    drawn = setup.evaluation[rng.choice(setup.evaluation.size, size=n, replace=False)]
                    base, reference = drawn[:-1], drawn[-1]
                else:
                    base, reference = fixed, setup.evaluation[rng.integers(setup.evaluation.size)]
                if b:
                    yield np.append(base, target), release_seed, -1
                elif relation == "replace":
                    yield np.append(base, reference), release_seed, int(reference)
                else:
                    yield base, release_seed, -2

        return labels, rounds()

    def _input(self, mechanism: Mechanism, setup: RecordSetup, ids: np.ndarray) -> Any:
        """The mechanism's input for the records ``ids``: their table, or (a trained model) the encoded population
        with those records included, of public size n."""
        if mechanism.input_kind == "table":
            return setup.population.iloc[ids].reset_index(drop=True)
        pool, position = _model_pool(self.data, setup)
        include = np.zeros(len(pool), dtype=bool)
        include[position[ids]] = True
        return pool.with_include(include, size=self.dataset_size)

    def play(
        self,
        mechanism: Mechanism,
        attack: Attack,
        *,
        seed: np.random.SeedSequence,
        context: TrialContext | None = None,
    ) -> TrialOutcome:
        setup = self.setup(seed)
        index = repetition_of(seed)
        if not 0 <= index < setup.targets.size:
            raise ValueError(f"trial {index} has no target: the game has {setup.targets.size} targets.")
        target = int(setup.targets[index])
        entropy = _entropy(seed)
        knowledge = self.knowledge_for(setup, target, mechanism, context)
        fitted = attack.fit(knowledge, rng=_opaque_rng(keyed_seed(entropy, _TAG_ATTACK, target)))
        threshold = float(fitted.threshold)
        cache = None if context is None else context.cache
        progress = None if context is None else context.progress
        claim = mechanism.privacy_claim()
        scores: list[float] = []
        labels: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        references: list[np.ndarray] = []
        claim_applies: list[bool] = []
        for code, game in enumerate(GAMES_PLAYED):
            if game not in self.played():
                continue
            b, plans = self._worlds(game, setup, target, entropy)
            refs: list[int] = []
            while chunk := list(itertools.islice(plans, _CHUNK)):
                inputs = [self._input(mechanism, setup, ids) for ids, _, _ in chunk]
                releases = cached_release_many(
                    mechanism, inputs, seeds=[s for _, s, _ in chunk], cache=cache, progress=progress
                )
                scores.extend(float(fitted.score(r, np.zeros(1, dtype=np.intp))[0]) for r in releases)
                refs.extend(ref for _, _, ref in chunk)
            labels.append(b)
            codes.append(np.full(self.rounds, code, dtype=np.int8))
            references.append(np.array(refs, dtype=np.int64))
            claim_applies.append(claim is not None and claim.neighbouring == _RELATION[self.neighbours_of(game)])
        score_arr = np.asarray(scores, dtype=np.float64)
        return TrialOutcome(
            scores=score_arr,
            membership=np.concatenate(labels),
            arrays={
                "game": np.concatenate(codes),
                "reference": np.concatenate(references),
                "guess": score_arr >= threshold,
                "record": np.array([target], dtype=np.int64),
                "selection": np.array([SELECTIONS.index(str(setup.selection[index]))], dtype=np.int8),
                "vulnerability": np.array([setup.vulnerability[index]], dtype=np.float64),
                "claim_applies": np.array(claim_applies, dtype=bool),
            },
        )

    # -- analysis ----------------------------------------------------------------------------------------------
    def record_rows(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> list[dict[str, Any]]:
        entropy = _entropy(seed)
        record = int(outcome.arrays["record"][0])
        rows = []
        for k, code in enumerate(np.unique(outcome.arrays["game"])):
            game = GAMES_PLAYED[int(code)]
            part = outcome.arrays["game"] == code
            s, b = outcome.scores[part], outcome.membership[part]
            rng = np.random.default_rng(keyed_seed(entropy, _TAG_ANALYSIS, record, int(code)))
            auc, auc_low, auc_high = auc_interval(s, b, confidence=settings.confidence, n_boot=self.n_boot, rng=rng)
            acc, acc_low, acc_high = accuracy_interval(outcome.arrays["guess"][part], b, confidence=settings.confidence)
            row: dict[str, Any] = {
                "record": record,
                "game": game,
                "selection": SELECTIONS[int(outcome.arrays["selection"][0])],
                "vulnerability": float(outcome.arrays["vulnerability"][0]),
                "neighbouring": self.neighbours_of(game),
                "rounds": int(part.sum()),
                "auc": auc,
                "auc_low": auc_low,
                "auc_high": auc_high,
                "accuracy": acc,
                "accuracy_low": acc_low,
                "accuracy_high": acc_high,
            }
            for fpr in TPR_FPRS:
                tpr, realised = tpr_at_fpr(s, b, fpr)
                row[f"tpr_at_fpr_{fpr:g}"] = tpr
                row[f"fpr_realised_{fpr:g}"] = realised
            row["epsilon_lb"] = _record_bound(s, b, settings.confidence, settings.delta, _split_seed(record, int(code)))
            row["claim_applies"] = bool(outcome.arrays["claim_applies"][k])
            rows.append(row)
        return rows

    def analyse(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> tuple[dict[str, float | int], list[dict[str, Any]]]:
        rows = self.record_rows(outcome, settings, seed=seed)
        out: dict[str, Any] = {
            "record": rows[0]["record"],
            "selection": rows[0]["selection"],
            "vulnerability": rows[0]["vulnerability"],
        }
        for row in rows:
            suffix = row["game"].replace("-", "_")
            for key in ("auc", "auc_low", "auc_high", "accuracy", "epsilon_lb"):
                out[f"{key}_{suffix}"] = row[key]
        return out, rows

    def analyse_trial(
        self, outcome: TrialOutcome, settings: AnalysisSettings, *, seed: np.random.SeedSequence
    ) -> dict[str, float | int]:
        return self.analyse(outcome, settings, seed=seed)[0]

    def summarise(
        self,
        rows: pd.DataFrame,
        settings: AnalysisSettings,
        load_outcome: Callable[[int], TrialOutcome],
    ) -> dict[str, float | int]:
        out: dict[str, Any] = {
            "epsilon_analytic": float(rows["epsilon_analytic"].iloc[0]),
            "n_records": len(rows),
        }
        outcomes = [load_outcome(int(t)) for t in rows["trial"]]
        beta = (1.0 - settings.confidence) / len(outcomes)
        for game in self.played():
            suffix = game.replace("-", "_")
            code = GAMES_PLAYED.index(game)
            out[f"auc_mean_{suffix}"] = float(rows[f"auc_{suffix}"].mean())
            # one bound for the mechanism over all M records: each record's at β/M (Bonferroni), the largest; each
            # record's split is the one of its own per-record bound (so the summary never exceeds the largest of
            # those), seeded by the record alone, fixed before the rounds are looked at
            bounds = []
            for o in outcomes:
                part = o.arrays["game"] == code
                split_seed = _split_seed(int(o.arrays["record"][0]), code)
                bounds.append(_record_bound(o.scores[part], o.membership[part], 1.0 - beta, settings.delta, split_seed))
            out[f"epsilon_lb_{suffix}"] = float(max(bounds))
        if set(GAMES_PLAYED) <= set(self.played()):
            ms = rows["auc_model_seeded"].to_numpy(dtype=float)
            tr = rows["auc_traditional"].to_numpy(dtype=float)
            out["rmsd"] = rmsd(ms, tr)
            # the RMSD that estimation noise alone gives at these round counts (both games with equal risks):
            # each AUC's standard error from its bootstrap interval, se = width / (2 z)
            z = 2.0 * float(stats.norm.ppf(0.5 + settings.confidence / 2))
            se2 = sum(
                ((rows[f"auc_high_{g}"] - rows[f"auc_low_{g}"]).to_numpy(dtype=float) / z) ** 2
                for g in ("model_seeded", "traditional")
            )
            out["rmsd_noise"] = float(np.sqrt(np.mean(se2)))
            # each rate beside the records it rests on (those with model-seeded AUC >= t): 1.000 of one record is
            # not 1.000 of thirty
            table = miss_rate_table(ms, tr, MISS_RATE_THRESHOLDS)
            for t, rate, n_high in zip(*(table[c].tolist() for c in ("t", "miss_rate", "n_high_risk")), strict=True):
                out[f"miss_rate_{t:g}"] = float(rate)
                out[f"miss_rate_{t:g}.n"] = int(n_high)
        return out


@dataclass(frozen=True, slots=True)
class TraditionalRecordGame(_RecordGameBase):
    """Krčo et al.'s traditional record game: a fresh dataset every round (the dataset-averaged risk).

    Parameters
    ----------
    data : {"adult", "compas"}, default="adult"
        The population (a shipped table; record ids are its row numbers, Adult's train then test split).
    columns : tuple of str or None, default=None
        The columns used (``None``: all).
    dataset_size : int, default=1000
        n, the size of the released dataset D and of every dataset the mechanism is run on; at least 5, since the
        targets are ranked by each record's 5 nearest records in D (its Achilles score).
    auxiliary_size, evaluation_size : int, default=10000
        Sizes of the adversary's auxiliary data and of the evaluation pool (each ≥ n); D and the two pools are
        disjoint, so n + both sizes must not exceed the population.
    rounds : int, default=200
        Rounds per game and target (≥ 2), half with the target (a seeded shuffle).
    vulnerable_targets, random_targets : int, default=15
        Targets chosen from D: the most vulnerable by the Achilles score, and uniformly random others.
    targets : tuple of int or None, default=None
        Record ids to use as targets instead (they are put in D).
    n_boot : int, default=1000
        Bootstrap resamples of the AUC interval.

    Notes
    -----
    Threat model: the adversary of :mod:`privgame.attacks.knowledge` (auxiliary data, the target, n, black-box access to
    the mechanism) trains its attack once per target; the challenger's secret is b per round.  Random per round:
    D̄ (n − 1 fresh records of the evaluation pool), the reference record, b, and the mechanism's seed.  Per record:
    AUC with a stratified bootstrap interval, accuracy of the attack's own guesses with the Hoeffding interval,
    TPR at FPR 0.01 and 0.1 (with the realised FPR), and the Clopper–Pearson ε lower bound of the rounds
    (threshold chosen on a random half, bound on the other), sound under replace-one neighbours.

    References
    ----------
    .. [1] N. Krčo, F. Guépin, M. Meeus, B. Kulynych, Y.-A. de Montjoye. Lost in the Averages: Reassessing
       Record-Specific Privacy Risk Evaluation. arXiv:2405.15423.
    """

    name: ClassVar[str] = "record-traditional"

    def played(self) -> tuple[str, ...]:
        return ("traditional",)


@dataclass(frozen=True, slots=True)
class _SeededBase(_RecordGameBase):
    """The record games that play the model-seeded game, with its neighbouring relation."""

    neighbours: str = "replace"

    def __post_init__(self) -> None:
        if self.neighbours not in NEIGHBOURS:
            raise ValueError(f"neighbours must be one of {', '.join(NEIGHBOURS)}, got {self.neighbours!r}.")
        _RecordGameBase.__post_init__(self)

    def neighbours_of(self, game: str) -> str:
        return "replace" if game == "traditional" else self.neighbours


@dataclass(frozen=True, slots=True)
class ModelSeededRecordGame(_SeededBase):
    """Krčo et al.'s model-seeded record game: the released dataset fixed, only the mechanism's seed varies.

    Parameters
    ----------
    neighbours : {"replace", "add-remove"}, default="replace"
        b = 0 releases A(D̄ ∪ {reference}) (replace-one; the paper's code) or A(D̄) (add/remove-one; the attack's
        shadows are then built the same way).  Under add/remove a generator whose output size follows its input
        (``n_rows = None``) publishes n itself, which tells the worlds apart: fix ``n_rows`` to audit the record.
    data, columns, dataset_size, auxiliary_size, evaluation_size, rounds, vulnerable_targets, random_targets, \
targets, n_boot
        As :class:`TraditionalRecordGame`.

    Notes
    -----
    Threat model as :class:`TraditionalRecordGame`; random per round: only b, the reference record and the
    mechanism's seed; D̄ = D \\ {target} is the same in every round.  The rounds are independent runs on
    neighbouring datasets, so the record's ε lower bound is a sound DP audit under ``neighbours`` (the
    ``claim_applies`` column says whether that is the relation of the mechanism's claim).

    References
    ----------
    .. [1] N. Krčo, F. Guépin, M. Meeus, B. Kulynych, Y.-A. de Montjoye. Lost in the Averages: Reassessing
       Record-Specific Privacy Risk Evaluation. arXiv:2405.15423.
    """

    name: ClassVar[str] = "record-model-seeded"

    def played(self) -> tuple[str, ...]:
        return ("model-seeded",)


@dataclass(frozen=True, slots=True)
class RecordGames(_SeededBase):
    """Both record games on the same targets with the same trained attack (miss rate and RMSD need the pair).

    Parameters
    ----------
    neighbours : {"replace"}, default="replace"
        The model-seeded game's neighbouring relation: replace-one, as the traditional game's, so that the two
        games compare like with like (play :class:`ModelSeededRecordGame` alone for add/remove).
    data, columns, dataset_size, auxiliary_size, evaluation_size, rounds, vulnerable_targets, random_targets, \
targets, n_boot
        As :class:`TraditionalRecordGame`.

    Notes
    -----
    Each trial (target) trains the attack once and plays ``rounds`` traditional and ``rounds`` model-seeded
    rounds.  The summary adds the RMSD between the two games' per-record AUCs and the miss rate MR(t), t ∈ {0.6,
    0.7, 0.8, 0.9}: the share of the records with model-seeded AUC ≥ t whose traditional AUC is below t.

    References
    ----------
    .. [1] N. Krčo, F. Guépin, M. Meeus, B. Kulynych, Y.-A. de Montjoye. Lost in the Averages: Reassessing
       Record-Specific Privacy Risk Evaluation. arXiv:2405.15423.
    """

    name: ClassVar[str] = "record"

    def __post_init__(self) -> None:
        _SeededBase.__post_init__(self)
        if self.neighbours != "replace":
            raise ValueError(
                f"neighbours must be 'replace' when both games are played (the traditional game is replace-one, and "
                f"one attack trained on one pair of worlds plays both), got {self.neighbours!r}; play "
                "'record-model-seeded' alone for add-remove."
            )

    def played(self) -> tuple[str, ...]:
        return GAMES_PLAYED
