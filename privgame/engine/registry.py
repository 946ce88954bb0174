"""One registry per component kind: config names to classes.

Built-in components are registered by import path (:class:`Builtin`: ``"module:Class"`` and the class's one-line
summary), so that building a registry, listing it (``privgame list``) or resolving one name imports nothing but
the module of the class asked for: ``privgame --help`` and ``privgame list`` never import torch, the generators'
numba kernels or ``dp_accounting``.  A plugin module registers its own classes with the same decorators and is
named in the config's ``[experiment] plugins`` list (or ``privgame list --plugins``)::

    from privgame.engine.registry import MECHANISMS

    @MECHANISMS.register
    @dataclass(frozen=True, slots=True)
    class MyMechanism(Mechanism):
        name: ClassVar[str] = "my-mechanism"
        ...
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

if TYPE_CHECKING:
    from privgame.attacks._base import Attack
    from privgame.games._base import Game
    from privgame.mechanisms._base import Mechanism

__all__ = [
    "ATTACKS",
    "BUILTINS",
    "GAMES",
    "MECHANISMS",
    "Builtin",
    "ReRegisteredWarning",
    "Registry",
    "UnknownNameError",
    "summary_line",
]

T = TypeVar("T")


class UnknownNameError(ValueError):
    """A config named a component that is not registered."""


class ReRegisteredWarning(UserWarning):
    """A class replaced the registered class of the same module-qualified name (a notebook cell or a plugin
    module run again)."""


def _qualified(cls: type) -> str:
    """``module.QualName`` of a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(frozen=True, slots=True)
class Builtin:
    """A built-in component, registered by where it lives rather than by its class.

    Attributes
    ----------
    path : str
        ``"package.module:Class"``; the module is imported on the first :meth:`Registry.get` of the name.
    summary : str
        The class docstring's first line, for ``privgame list`` without importing the class (a test checks that
        the two agree).
    requires : tuple of str, default=()
        Top-level packages of an optional extra the class needs (``("torch",)``); when one is not installed, the
        component is not registered (found with ``importlib.util.find_spec``, which imports nothing).
    """

    path: str
    summary: str
    requires: tuple[str, ...] = ()

    def available(self) -> bool:
        """Whether every package in :attr:`requires` is installed."""
        return all(importlib.util.find_spec(package) is not None for package in self.requires)


def _import(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class Registry(Generic[T]):
    """Maps config names to component classes of one kind.

    Parameters
    ----------
    kind : str
        "game", "mechanism" or "attack", used in messages.
    base : type or str
        The abstract base class every registered class must subclass, or its ``"module:Class"`` path (imported
        when a class is first registered or loaded, so that an unused registry imports nothing).
    builtins : mapping of str to Builtin, optional
        Components registered by import path, loaded on first use; those whose optional packages are missing are
        left out.
    """

    def __init__(self, kind: str, base: type[T] | str, builtins: Mapping[str, Builtin] | None = None) -> None:
        self.kind = kind
        self._base = base
        self._classes: dict[str, type[T]] = {}
        self._lazy: dict[str, Builtin] = {name: entry for name, entry in (builtins or {}).items() if entry.available()}

    @property
    def base(self) -> type[T]:
        """The base class (imported on first use when given as a path)."""
        if isinstance(self._base, str):
            self._base = cast("type[T]", _import(self._base))
        return self._base

    def _check(self, cls: Any) -> str:
        """``cls``'s name, after checking that it may be registered (see :meth:`register`)."""
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"a registered {self.kind} must subclass {self.base.__name__}, got {cls!r}.")
        params = getattr(cls, "__dataclass_params__", None)
        if not dataclasses.is_dataclass(cls) or params is None or not params.frozen:
            raise TypeError(f"a registered {self.kind} must be a frozen dataclass, got {cls.__name__}.")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a registered {self.kind} needs a non-empty string class attribute 'name'.")
        return name

    def register(self, cls: type[T]) -> type[T]:
        """Register ``cls`` under its ``name``; usable as a decorator.

        A class with the same module-qualified name as the one registered under ``name`` (``__main__.MyGenerator``
        from a notebook cell run again, or a plugin module imported again) replaces it, with a
        :class:`ReRegisteredWarning`; registering the very same class again changes nothing.

        Raises
        ------
        TypeError
            If ``cls`` is not a frozen dataclass subclassing the kind's base class, or has no string ``name``.
        ValueError
            If the name is already taken by another class (another module-qualified name) or by a built-in not
            loaded yet.
        """
        name = self._check(cls)
        earlier = self._classes.get(name)
        if earlier is cls:
            return cls
        if earlier is not None and _qualified(earlier) == _qualified(cls):
            warnings.warn(
                f"{self.kind} {name!r} registered again: {_qualified(cls)} replaces the class of that name "
                "registered before (a cell or module run again).",
                ReRegisteredWarning,
                stacklevel=2,
            )
            self._classes[name] = cls
            return cls
        if name in self._classes or name in self._lazy:
            owner = self._classes[name].__qualname__ if name in self._classes else self._lazy[name].path
            raise ValueError(f"{self.kind} name {name!r} is already registered (by {owner}).")
        self._classes[name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and interactive sessions).

        Raises
        ------
        UnknownNameError
            If ``name`` is not registered.
        """
        if name in self._lazy:
            del self._lazy[name]
            return
        self.get(name)
        del self._classes[name]

    def get(self, name: str) -> type[T]:
        """The class registered as ``name`` (a built-in's module is imported now, the first time).

        Raises
        ------
        UnknownNameError
            Listing the registered names.
        TypeError
            If a built-in's class does not pass :meth:`register`'s checks or its ``name`` is not ``name``
            (a bug in the built-in table).
        """
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            pass
        entry = self._lazy.get(name) if isinstance(name, str) else None
        if entry is None:
            raise UnknownNameError(f"{self.kind} name must be one of {', '.join(self.names())}, got {name!r}.")
        cls = _import(entry.path)
        if self._check(cls) != name:
            raise TypeError(f"built-in {self.kind} {entry.path} is named {cls.name!r}, registered as {name!r}.")
        self._classes[name] = cls
        del self._lazy[name]
        return cast("type[T]", cls)

    def names(self) -> list[str]:
        """Registered names, sorted (importing nothing)."""
        return sorted({*self._classes, *self._lazy})

    def summaries(self) -> list[tuple[str, str]]:
        """``(name, one-line summary)`` of every registered component, sorted by name, importing nothing: a
        built-in not loaded yet answers with its stored :attr:`Builtin.summary`."""
        found = {name: summary_line(cls) for name, cls in self._classes.items()}
        found.update({name: entry.summary for name, entry in self._lazy.items()})
        return sorted(found.items())

    def builtins(self) -> dict[str, Builtin]:
        """The built-ins not loaded yet (for tests of the built-in table)."""
        return dict(self._lazy)

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        """``(name, class)`` pairs, sorted; this imports every built-in (use :meth:`summaries` to list)."""
        return iter([(name, self.get(name)) for name in self.names()])

    def __contains__(self, name: object) -> bool:
        return name in self._classes or name in self._lazy


def summary_line(cls: type) -> str:
    """The first line of a class's docstring."""
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


BUILTINS: dict[str, dict[str, Builtin]] = {
    "game": {
        "one-run": Builtin(
            "privgame.games.one_run:OneRunGame",
            "m canaries, each a member independently with probability 1/2; the mechanism runs once.",
        ),
        "multi-run": Builtin(
            "privgame.games.multi_run:MultiRunGame",
            "K independent runs per trial, half with the target canary and half without; one score per run.",
        ),
        "record-traditional": Builtin(
            "privgame.games.record:TraditionalRecordGame",
            "Krčo et al.'s traditional record game: a fresh dataset every round (the dataset-averaged risk).",
        ),
        "record-model-seeded": Builtin(
            "privgame.games.record:ModelSeededRecordGame",
            "Krčo et al.'s model-seeded record game: the released dataset fixed, only the mechanism's seed varies.",
        ),
        "record": Builtin(
            "privgame.games.record:RecordGames",
            "Both record games on the same targets with the same trained attack (miss rate and RMSD need the pair).",
        ),
        "panoramia": Builtin(
            "privgame.games.panoramia:PanoramiaGame",
            "PANORAMIA: real members vs generated non-members, an MIA vs a helper-model baseline; ε̃ beside O(1) and "
            "RM;RN.",
        ),
        "lira": Builtin(
            "privgame.games.lira:LiRAGame",
            "Efficient LiRA: M models on random halves of a pool, each the target of the others; three calibrated "
            "TPRs.",
        ),
    },
    "mechanism": {
        "randomized-response": Builtin(
            "privgame.mechanisms.randomized_response:RandomizedResponse",
            "Report each canary's membership bit truthfully with probability e^ε / (1 + e^ε), flipped otherwise.",
        ),
        "gaussian": Builtin(
            "privgame.mechanisms.gaussian:GaussianMechanism",
            "Release each canary's membership bit plus independent N(0, σ²) noise.",
        ),
        "synthpop": Builtin(
            "privgame.mechanisms.synth.synthpop:Synthpop",
            'Sequential CART synthesis, as R\'s ``synthpop::syn()`` with ``method = "cart"``.',
        ),
        "baynet": Builtin(
            "privgame.mechanisms.synth.baynet:BayNet",
            'Synthetic tables from a Bayesian network fitted without noise: the "BayNet" of the synthetic-data '
            "literature.",
        ),
        "gaussian-mixture": Builtin(
            "privgame.mechanisms.synth.mixture:GaussianMixtureGenerator",
            "Synthetic tables from a Gaussian mixture of the numeric columns in each class of the categorical ones.",
        ),
        "privbayes": Builtin(
            "privgame.mechanisms.synth.privbayes:PrivBayes",
            "PrivBayes (Zhang et al. [1]_): a Bayesian network learnt and parametrised under ε-differential privacy.",
        ),
        "external": Builtin(
            "privgame.mechanisms.synth.external:ExternalGenerator",
            "Any program, in its own environment, as the synthetic-data generator (its output checked).",
        ),
        "dpsgd-blackbox": Builtin(
            "privgame.mechanisms.dpsgd.blackbox:DPSGDBlackBox",
            "DP-SGD on the game's rows and its member canary examples; releases the model with the canaries.",
            requires=("torch",),
        ),
        "logistic-regression": Builtin(
            "privgame.mechanisms.training.models:LogisticRegressionClassifier",
            "Multinomial logistic regression trained with Adam on mini-batches (non-private).",
            requires=("torch",),
        ),
        "mlp": Builtin(
            "privgame.mechanisms.training.models:MLPClassifier",
            "A fully connected network trained with Adam on mini-batches (non-private).",
            requires=("torch",),
        ),
        "cnn": Builtin(
            "privgame.mechanisms.training.cnn:CNNClassifier",
            "A small CNN on flat image rows, trained with Adam on mini-batches (non-private).",
            requires=("torch",),
        ),
        "gradient-boosted-trees": Builtin(
            "privgame.mechanisms.training.trees:GradientBoostedTrees",
            "Gradient-boosted decision trees (scikit-learn's ``HistGradientBoostingClassifier``), non-private.",
        ),
        "sklearn": Builtin(
            "privgame.mechanisms.training.sklearn_model:SklearnModel",
            "Any scikit-learn classifier, named by import path; released as its probabilities on the game's records.",
        ),
        "dpsgd-mlp": Builtin(
            "privgame.mechanisms.dpsgd.classifier:DPSGDClassifier",
            "The MLP of ``mlp`` (or logistic regression) trained with DP-SGD on the included records of a pool.",
            requires=("torch",),
        ),
        "dpsgd-whitebox": Builtin(
            "privgame.mechanisms.dpsgd.whitebox:DPSGDWhiteBox",
            "DP-SGD on the game's rows with m Dirac gradient canaries; releases each canary's summed descent.",
            requires=("torch",),
        ),
        "dpsgd-broken": Builtin(
            "privgame.mechanisms.dpsgd.broken:DPSGDBroken",
            "DP-SGD with white-box Dirac canaries and one deliberate flaw in its step; claims the correct step's ε.",
            requires=("torch",),
        ),
        "opacus-whitebox": Builtin(
            "privgame.mechanisms.dpsgd.opacus_engine:OpacusWhiteBox",
            "The rows and m canary rows trained by Opacus's PrivacyEngine; releases each canary's summed descent.",
            requires=("torch", "opacus"),
        ),
        "dpsgd-loop": Builtin(
            "privgame.mechanisms.dpsgd.opacus_engine:LoopWhiteBox",
            "The game's rows and m canary rows trained by a DP-SGD loop; releases each canary's summed descent.",
            requires=("torch",),
        ),
    },
    "attack": {
        "identity": Builtin(
            "privgame.attacks.identity:Identity",
            "Score each canary by its released value (for mechanisms that publish one number per canary).",
        ),
        "negative-loss": Builtin(
            "privgame.attacks.loss:NegativeLoss",
            "Score each target by minus its loss under the released model (members have lower loss).",
        ),
        "lira": Builtin(
            "privgame.attacks.lira:LiRA",
            "Carlini et al.'s likelihood-ratio attack on trained models, online or offline, with optional FPC.",
        ),
        "density-ratio": Builtin(
            "privgame.attacks.density:DensityRatio",
            "Score = log of the synthetic data's kernel density at the target over the auxiliary data's.",
        ),
        "ensemble": Builtin(
            "privgame.attacks.ensemble:Ensemble",
            "TAPAS counts (eq and ge), Groundhog, distances and the density ratio into one shadow classifier.",
        ),
        "rmia": Builtin(
            "privgame.attacks.rmia:RMIA",
            "RMIA (Zarifzadeh et al. 2024): the target model's likelihood ratio against population samples.",
        ),
        "classifier-mia": Builtin(
            "privgame.attacks.classifier:ClassifierMIA",
            "A membership classifier on each example and a model's signal on it (PANORAMIA's MIA and baseline).",
        ),
        "tapas-queries": Builtin(
            "privgame.attacks.queries:CountingQueries",
            "TAPAS-style target-specific counting queries into a RandomForest, trained on shadow synthetic tables.",
        ),
        "groundhog": Builtin(
            "privgame.attacks.groundhog:Groundhog",
            "Groundhog: per-column statistics, histograms and correlations of the synthetic table → RandomForest.",
        ),
        "closest-distance": Builtin(
            "privgame.attacks.distance:ClosestDistance",
            "Score = −(the smallest mixed distance from the target to a synthetic row): near copies suggest "
            "membership.",
        ),
        "exact-copies": Builtin(
            "privgame.attacks.distance:ExactCopies",
            "Score = the number of synthetic rows that copy the target's exact value of one numeric column.",
        ),
    },
}
"""The built-in components of each kind: config name → :class:`Builtin` (import path and summary)."""

GAMES: Registry[Game] = Registry("game", "privgame.games._base:Game", BUILTINS["game"])
MECHANISMS: Registry[Mechanism] = Registry("mechanism", "privgame.mechanisms._base:Mechanism", BUILTINS["mechanism"])
ATTACKS: Registry[Attack] = Registry("attack", "privgame.attacks._base:Attack", BUILTINS["attack"])
