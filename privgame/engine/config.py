"""Experiment configs: TOML in, a validated grid of component instances out.

A config has five sections, and an optional sixth (``docs/config.md`` documents the schema)::

    [experiment]  name, seed, repetitions, plugins (optional), description (optional)
    [data]        (optional) name = a registered data set, or path + domain (+ label, positive): your own file
    [game]        name = registered game, then its parameters
    [mechanism]   name = registered mechanism, then its parameters
    [attack]      name = registered attack, then its parameters
    [analysis]    confidence, delta, estimators, threshold, two_sided, allow_unmatched_family,
                  allow_dependent_canaries, sequential

A list value in ``[game]``, ``[mechanism]`` or ``[attack]`` sweeps that parameter; several lists sweep their
cartesian product (in file order: game, mechanism, attack).  A parameter whose own type is a sequence takes a
flat list as one value and a list of lists as a sweep.  A list of ``confidence`` or ``delta`` in ``[analysis]``
sweeps the analysis: its values are the innermost axes of the grid (confidence, then δ), and the grid points that
differ only in them analyse the same trials (one mechanism run, the same trial seeds; see :attr:`GridPoint.play`).
Every name, parameter, value and the compatibility of every grid point's (game, mechanism, attack, analysis) are
checked here, before any trial runs.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib
import itertools
import json
import math
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privgame.analysis._checks import check_int
from privgame.attacks._base import Attack
from privgame.core.inputs import InputFileError, read_input
from privgame.core.trust import UntrustedImportError, check_import, names_from
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS, Registry, UnknownNameError
from privgame.engine.resources import memory_problem
from privgame.games._base import AnalysisSettings, Game
from privgame.mechanisms._base import Mechanism

__all__ = [
    "ANALYSIS_SWEEPS",
    "MAX_GRID_POINTS",
    "MAX_NESTING",
    "ConfigError",
    "ExperimentConfig",
    "GridPoint",
    "component_base",
    "decode_config",
    "import_plugins",
    "load_config",
    "parse_config",
    "read_config_bytes",
    "stored_games",
]

_COMPONENT_SECTIONS: dict[str, Registry[Any]] = {"game": GAMES, "mechanism": MECHANISMS, "attack": ATTACKS}
_SECTIONS = ("experiment", "data", "game", "mechanism", "attack", "analysis")
_OPTIONAL_SECTIONS = ("data", "analysis")
_DATA_KEYS = ("name", "path", "domain", "label", "positive")
_EXPERIMENT_KEYS = ("name", "seed", "repetitions", "plugins", "description")
#: the most grid points a config may have (a product of long lists would otherwise be built point by point, for
#: hours, before anything else could refuse it)
MAX_GRID_POINTS = 100_000
#: the most ``[[attack]]`` tables a config may give (each is one attack played on the same targets)
MAX_ATTACK_TABLES = 64
#: the most levels of tables and lists a config may nest (a section is level 1; PANORAMIA's ``[attack.classifier]``
#: with a swept list of layer sizes is 4): a deeper config is a mistake or an attack, and would exhaust Python's
#: recursion limit in the parser or in the copies of its values
MAX_NESTING = 32
#: the ``[analysis]`` keys a list sweeps (in this order, innermost last); ``estimators`` takes a list as its value
ANALYSIS_SWEEPS = ("confidence", "delta")


class ConfigError(ValueError):
    """An experiment config is invalid; the message is one line naming the field, the value and what is allowed."""


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One point of the parameter grid: its swept values, the components built from them and its analysis.

    Attributes
    ----------
    index : int
        Position in the grid.
    params : mapping
        The swept values, ``"section.key" → value`` (``analysis.confidence`` for an analysis sweep).
    game, mechanism, attack
        The components (shared by the points of the same :attr:`play`).
    analysis : AnalysisSettings
        How this point's trials are analysed (not yet bound to the mechanism's claim).
    play : int
        Which (game, mechanism, attack) combination the point plays: grid points differing only in the analysis
        sweep share it, and with it their trials' seeds and outcomes.  Equal to ``index`` without analysis sweeps.
    """

    index: int
    params: Mapping[str, Any]
    game: Game
    mechanism: Mechanism
    attack: Attack
    analysis: AnalysisSettings = dataclasses.field(default_factory=AnalysisSettings)
    play: int = -1

    def __post_init__(self) -> None:
        if self.play < 0:
            object.__setattr__(self, "play", self.index)


@dataclass(frozen=True, slots=True)
class ExperimentConfig:
    """A validated experiment.

    Attributes
    ----------
    name : str
    seed : int
        Root seed; trial (g, j) gets ``SeedSequence(seed).spawn(n_grid)[g].spawn(repetitions)[j]``.
    repetitions : int
        Trials per grid point (a record game fixes it: one trial per target).
    plugins : tuple of str
        Modules imported before names are resolved (they register their own components).
    analysis : AnalysisSettings
        The ``[analysis]`` settings, with each swept key at its first value (each grid point has its own,
        :attr:`GridPoint.analysis`).
    swept : tuple of str
        The swept parameters, as ``"section.key"``: the components' in file order, then the analysis'.  With
        ``[[attack]]`` tables, ``attack.name`` first and every table's own values and sweeps (a point lacks the keys
        of the other tables).
    grid : tuple of GridPoint
        With ``[[attack]]`` tables: each table's points in turn (its game and mechanism sweeps outer, its own
        sweeps inner).
    raw : dict
        The config as read (a ``[data]`` file's paths made absolute); stored with the results and hashed to
        recognise the same experiment.
    analysis_sweeps : mapping of str to tuple, default={}
        The swept ``[analysis]`` keys and their values (``{"confidence": (0.9, 0.95)}``).
    data_source : privgame.data.files.FileSource or None, default=None
        The user's data file of ``[data] path``, as read and checked (its SHA-256, size and domain); every worker
        puts it in its catalogue before a trial.
    """

    name: str
    seed: int
    repetitions: int
    plugins: tuple[str, ...]
    analysis: AnalysisSettings
    swept: tuple[str, ...]
    grid: tuple[GridPoint, ...]
    raw: Mapping[str, Any]
    analysis_sweeps: Mapping[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    data_source: Any = None
    attack_points: tuple[int, ...] = ()

    @property
    def n_trials(self) -> int:
        return len(self.grid) * self.repetitions

    @property
    def plays(self) -> tuple[GridPoint, ...]:
        """The first grid point of each play (its components), in play order."""
        seen: dict[int, GridPoint] = {}
        for point in self.grid:
            seen.setdefault(point.play, point)
        return tuple(seen.values())

    @property
    def normalised(self) -> dict[str, Any]:
        """What determines the results, as plain JSON values: the seed, the repetitions, the plugins, the analysis
        settings and every grid point's components as built (name and every parameter after validation, defaults
        included), in grid order.  Not in it: the name and description, comments, whitespace, key order and how
        a number is spelt (``1`` and ``1.0`` for a float parameter) — nothing that can change a result."""
        data = {} if self.data_source is None else {"data": self.data_source.identity()}
        return {
            **data,
            "seed": self.seed,
            "repetitions": self.repetitions,
            "plugins": list(self.plugins),
            "analysis": {**self.analysis.identity(), **{k: list(v) for k, v in self.analysis_sweeps.items()}},
            "grid": [
                {
                    s: {"name": c.name, **_plain(c)}
                    for s, c in (("game", p.game), ("mechanism", p.mechanism), ("attack", p.attack))
                }
                for p in self.plays
            ],
        }

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON of :attr:`normalised`: equal for configs that give the same results."""
        return config_hash(self.normalised)

    @property
    def identity(self) -> dict[str, Any]:
        """What a results manifest identifies the experiment by (``config_hash``, ``normalised_config``,
        ``config``): enough for :meth:`privgame.engine.store.ResultsStore.check_open` to refuse a directory before any
        work."""
        return {"config_hash": self.hash, "normalised_config": self.normalised, "config": dict(self.raw)}


def config_hash(data: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``data`` (sorted keys, no spaces)."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """``value`` as JSON values: a dataclass as its init fields, mappings with string keys, sequences as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        # a nested component (a game's generator, an attack's classifier) is known by its name too
        return {"name": value.name, **fields} if isinstance(value, Game | Mechanism | Attack) else fields
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _plain(value.tolist())
    return value if value is None or isinstance(value, bool | int | float | str) else repr(value)


MAX_CONFIG_BYTES = 1 << 20  # a config is a few kB; refusing more keeps /dev/zero or a mistaken data file out


def read_config_bytes(path: str | Path) -> bytes:
    """The bytes of the config file ``path``: a regular file of at most :data:`MAX_CONFIG_BYTES`.

    Raises
    ------
    ConfigError
        If the path is empty, missing, a directory or another non-regular file (a device, a FIFO), unreadable,
        or larger than 1 MiB (read at most that much: a symlink to ``/dev/zero`` is refused, not read forever).
    """
    name = str(path)
    try:
        return read_input(name, what="config file", limit=MAX_CONFIG_BYTES)
    except InputFileError as exc:
        message = {
            "empty": "the config path is empty; give a TOML file.",
            "missing": f"config file {name!r} does not exist.",
            "directory": f"config path {name!r} is a directory; give a TOML file.",
            "special": f"config path {name!r} is not a regular file (a device or a pipe); give a TOML file.",
            "too-large": f"config file {name!r} is larger than 1 MiB; a config is a short TOML file.",
        }.get(exc.reason, str(exc))
        raise ConfigError(message) from None


def decode_config(data: bytes, path: str | Path) -> dict[str, Any]:
    """Parse config bytes as UTF-8 TOML; errors name the file and the line.

    Raises
    ------
    ConfigError
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{path}: line {line}, column {column}: not UTF-8 (byte 0x{data[exc.start]:02x}); save the config as UTF-8."
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}.") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(
            f"{path}: tables and lists must be nested at most {MAX_NESTING} levels deep, got a value nested deeper "
            "than the TOML parser can follow."
        ) from None


def _check_nesting(data: Mapping[str, Any]) -> None:
    """Refuse tables and lists nested more than :data:`MAX_NESTING` levels deep (walked without recursion: a
    dotted table header ``[a.b.c...]`` is parsed iteratively, so it can nest thousands of levels).

    Raises
    ------
    ConfigError
        Naming the path to the first value that is too deep.
    """
    pending: list[tuple[Any, str, int]] = [(data, "", 0)]
    while pending:
        value, where, depth = pending.pop()
        if isinstance(value, Mapping | list) and depth > MAX_NESTING:
            raise ConfigError(
                f"tables and lists must be nested at most {MAX_NESTING} levels deep, got more at {where or 'the top'}."
            )
        if isinstance(value, Mapping):
            pending += [(v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items()]
        elif isinstance(value, list):
            pending += [(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]


def load_config(
    path: str | Path,
    data: bytes | None = None,
    *,
    repetitions: int | None = None,
    repetitions_option: str = "--repetitions",
) -> ExperimentConfig:
    """Read and validate a TOML experiment config (``data``: its bytes, already read with
    :func:`read_config_bytes`, so that what is stored is exactly what was validated; ``repetitions``: replaces
    ``[experiment] repetitions``, as ``privgame run --repetitions`` does; ``repetitions_option``: what its errors
    call it, ``"repetitions"`` for :func:`privgame.run`).

    Raises
    ------
    ConfigError
        If the file cannot be read or parsed (:func:`read_config_bytes`, :func:`decode_config`), or anything in
        it is invalid.
    """
    p = Path(path)
    table = decode_config(read_config_bytes(path) if data is None else data, p)
    experiment = table.get("experiment")
    if isinstance(experiment, dict) and "name" not in experiment:
        experiment["name"] = p.stem
    if repetitions is not None:
        if not isinstance(experiment, dict):
            raise ConfigError("missing section [experiment].")
        try:
            experiment["repetitions"] = check_int(repetitions_option, repetitions, low=1)
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
    return parse_config(
        table, repetitions_option=None if repetitions is None else repetitions_option, base_dir=p.resolve().parent
    )


def parse_config(
    data: Mapping[str, Any], *, repetitions_option: str | None = None, base_dir: str | Path | None = None
) -> ExperimentConfig:
    """Validate a config given as a mapping (the parsed TOML); see the module docstring for the schema.

    ``repetitions_option``: the command-line option that set ``[experiment] repetitions``, named in its errors
    instead of the config key (``privgame run --repetitions``).  ``base_dir``: what relative ``[data]`` paths are
    relative to (the config file's folder; default the current directory).

    Raises
    ------
    ConfigError
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"a config must be a table of sections, got {type(data).__name__}.")
    _check_nesting(data)
    unknown = [k for k in data if k not in _SECTIONS]
    if unknown:
        raise ConfigError(f"unknown section [{unknown[0]}]; allowed sections: {', '.join(_SECTIONS)}.")
    for section in _SECTIONS:
        if section not in _OPTIONAL_SECTIONS and section not in data:
            raise ConfigError(f"missing section [{section}].")
        if section == "attack" and isinstance(data[section], list):
            _check_attack_tables(data[section])
        elif not isinstance(data.get(section, {}), Mapping):
            raise ConfigError(f"[{section}] must be a table, got {data[section]!r}.")

    name, seed, repetitions, plugins = _parse_experiment(data["experiment"])
    folder = Path.cwd() if base_dir is None else Path(base_dir)
    import_plugins(plugins, source="[experiment] plugins", folder=None if base_dir is None else folder)
    stored, source = _data_section(data, folder)  # what is stored: [data] resolved, [game] as written
    data = _with_data_name(stored)

    several = isinstance(data["attack"], list)  # [[attack]] tables: each its own attack, all on the same targets
    variants = []
    for table in data["attack"] if several else [data["attack"]]:
        classes: dict[str, type] = {}
        fixed: dict[str, dict[str, Any]] = {}
        sweeps: list[tuple[str, str, list[Any]]] = []
        for section, registry in _COMPONENT_SECTIONS.items():
            cls, params = _resolve(section, registry, table if section == "attack" else data[section])
            classes[section] = cls
            fixed[section], found = _collect(section, cls, params)
            sweeps += [(section, path, values) for path, values in found]
        # an [[attack]] table's own fixed values name its points beside its sweeps (nested tables by their name)
        labels = [k for k, v in fixed["attack"].items() if not isinstance(v, Mapping)] if several else []
        variants.append((classes, fixed, sweeps, labels))

    analysis_table = data.get("analysis", {})
    _check_grid_size([[len(values) for _, _, values in v[2]] for v in variants], analysis_table)
    base, analysis_sweeps, analyses = _parse_analysis(analysis_table)
    grid: list[GridPoint] = []
    swept_keys: dict[str, None] = {"attack.name": None} if several else {}
    combos = [
        (classes, fixed, sweeps, labels, combo)
        for classes, fixed, sweeps, labels in variants
        for combo in itertools.product(*(values for _, _, values in sweeps))
    ]
    attack_points = tuple(math.prod(len(values) for _, _, values in v[2]) for v in variants) if several else ()
    plays_seen: dict[str, tuple[int, int]] = {}
    for play, (classes, fixed, sweeps, labels, combo) in enumerate(combos):
        params = copy.deepcopy(fixed)
        for (section, key, _), value in zip(sweeps, combo, strict=True):
            _set_path(params[section], key, value)
        built = {section: _build(section, classes[section], params[section]) for section in classes}
        # the values as the components normalised them (e.g. TOML's 1 becomes 1.0 for a float parameter)
        swept_values = {f"{section}.{key}": _get_path(built[section], key) for section, key, _ in sweeps}
        if several:
            named = {f"attack.{key}": _get_path(built["attack"], key) for key in labels}
            swept_values = {"attack.name": built["attack"].name, **named, **swept_values}
        swept_keys.update(dict.fromkeys(swept_values))
        _check_new_play(plays_seen, (len(grid), play), built, swept_values, attack_points)
        reason = built["game"].incompatibility(built["mechanism"], built["attack"])
        if reason is not None:
            raise ConfigError(f"incompatible components: {reason}.")
        for analysis in analyses:
            if analysis.sequential:
                from privgame.games.sequential import check_sequential

                mechanism = built["mechanism"]
                chosen = (  # the estimators it bets on, bound to the claim (a family needs it)
                    analysis.bind(mechanism.privacy_claim(), mechanism.canary_dependence)
                    if analysis.estimators is not None and built["game"].bound_kind == "one-run"
                    else None
                )
                problem = check_sequential(built["game"], chosen)
                if problem is not None:
                    raise ConfigError(f"[analysis] {problem}.")
            if analysis.custom or analysis.two_sided:
                from privgame.games.bounds import settings_problem

                claim = built["mechanism"].privacy_claim()
                bound = analysis.bind(claim, built["mechanism"].canary_dependence)
                game = built["game"]
                examples = getattr(game, "m", None) if game.bound_kind == "one-run" else None
                problem = settings_problem(
                    bound,
                    kind=game.bound_kind,
                    game=game.name,
                    examples=examples if isinstance(examples, int) else None,
                )
                if problem is not None:
                    raise ConfigError(f"[analysis] {problem}.")
            point_values = {**swept_values, **{f"analysis.{k}": getattr(analysis, k) for k in analysis_sweeps}}
            grid.append(
                GridPoint(
                    len(grid), point_values, built["game"], built["mechanism"], built["attack"], analysis, play=play
                )
            )

    n_repetitions = _repetitions(repetitions, grid, repetitions_option or "[experiment] repetitions")
    problem = memory_problem(grid, len(grid) * n_repetitions)
    if problem is not None:
        raise ConfigError(f"{problem}.")
    return ExperimentConfig(
        name=name,
        seed=seed,
        repetitions=n_repetitions,
        plugins=plugins,
        analysis=base,
        swept=(*swept_keys, *(f"analysis.{k}" for k in analysis_sweeps)),
        attack_points=attack_points,
        grid=tuple(grid),
        raw=json.loads(json.dumps(stored, default=str)),
        analysis_sweeps=analysis_sweeps,
        data_source=source,
    )


def _data_section(data: Mapping[str, Any], base_dir: Path) -> tuple[Mapping[str, Any], Any]:
    """The config with ``[data]`` applied (``[game] data`` set to its data set's name, a file's paths absolute),
    and the :class:`privgame.data.files.FileSource` of a ``[data] path`` (None for a registered name).

    Raises
    ------
    ConfigError
        For an unknown key, a file or domain that cannot be used (one line naming the file, the column, the row
        and the value), a name that is not registered, or a data set given twice.
    """
    section = data.get("data")
    if section is None:
        return data, None
    unknown = [k for k in section if k not in _DATA_KEYS]
    if unknown:
        raise ConfigError(f"[data] unknown key {unknown[0]!r}; allowed keys: {', '.join(_DATA_KEYS)}.")
    for key, value in section.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(f"[data] {key} must be a non-empty string, got {value!r}.")
    game = dict(data["game"])
    if "data" in game:
        raise ConfigError(
            f"[data] and [game] data = {game['data']!r} both name the data set; keep one ([data] for your own file)."
        )
    resolved = dict(section)
    source = None
    if "path" in section:
        if "domain" not in section:
            raise ConfigError("[data] path needs domain = the domain file that declares its columns' public values.")
        from privgame.data.files import DataFileError, open_source, register_source

        path, domain = (base_dir / section["path"]).resolve(), (base_dir / section["domain"]).resolve()
        try:
            source = open_source(
                path, domain, name=section.get("name"), label=section.get("label"), positive=section.get("positive")
            )
            register_source(source)
        except DataFileError as exc:
            raise ConfigError(str(exc)) from None
        resolved.update(path=str(path), domain=str(domain), name=source.name)
    elif "name" in section:
        extra = [k for k in ("domain", "label", "positive") if k in section]
        if extra:
            raise ConfigError(
                f"[data] {extra[0]} describes your own file (with path); a registered data set "
                f"{section['name']!r} has its own."
            )
        from privgame.data.catalogue import get_dataset

        try:
            get_dataset(section["name"])
        except ValueError as exc:
            raise ConfigError(f"[data] {exc}") from None
    else:
        raise ConfigError("[data] needs name = a registered data set, or path and domain = your own file.")
    return {**data, "data": resolved}, source


def _with_data_name(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The config with ``[game] data`` set from ``[data] name`` (as stored, a file's name too), for building."""
    section = data.get("data")
    if not isinstance(section, Mapping) or "name" not in section or not isinstance(data.get("game"), Mapping):
        return data
    return {**data, "game": {**data["game"], "data": section["name"]}}


def import_plugins(modules: Sequence[str], *, source: str, folder: str | Path | None = None) -> None:
    """Import the plugin modules ``modules`` (each registers its own components).

    Importing a module runs its code, with the user's rights: only modules the user chose are imported (a config
    they run, ``privgame report --plugins``/``--trust-plugins``), never ones a results directory names by itself.

    Parameters
    ----------
    modules : sequence of str
        Importable module names.
    source : str
        Where the names come from, for messages (``"[experiment] plugins"``, ``"--plugins"``).
    folder : path or None, default=None
        A folder searched too, after ``sys.path`` (the config file's: a plugin module beside its config is
        found; it stays on ``sys.path``, so the loky workers this process starts find it as well).

    Raises
    ------
    ConfigError
        If a module cannot be imported (naming it and the reason).
    """
    if modules and folder is not None:
        import sys

        place = str(Path(folder).resolve())
        if place not in sys.path:
            sys.path.append(place)
    for module in modules:
        try:
            check_import(module, field="plugin")
        except UntrustedImportError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        try:
            importlib.import_module(module)
        except SystemExit as exc:  # a module that exits would otherwise end the command silently, status 0
            raise ConfigError(f"{source}: importing {module!r} called sys.exit({exc.code!r}).") from None
        except Exception as exc:  # any failure of a user's module is reported, not raised through
            raise ConfigError(f"{source}: cannot import {module!r}: {type(exc).__name__}: {exc}.") from None


def stored_games(
    data: Mapping[str, Any],
    swept: Sequence[str],
    data_source: Any = None,
    attack_points: Any = None,
    *,
    source: str = "the results' manifest",
    trusted: bool = False,
) -> tuple[tuple[AnalysisSettings, ...], tuple[Game, ...]]:
    """Every grid point's analysis settings and game of a stored config, importing no plugin.

    What reading results needs: only the game is built (the mechanism and attack, which may come from plugins
    and may be slow to build, such as DP-SGD's σ calibration, are not), its name resolved in :data:`GAMES` as
    registered now.  The grid is expanded as :func:`parse_config` does, from ``swept``, the swept parameters it
    found (the manifest's ``swept``).

    Parameters
    ----------
    data : mapping
        The config as :attr:`ExperimentConfig.raw` holds it (a results manifest's ``config``).
    swept : sequence of str
        The swept parameters, as ``"section.key"``, in grid order.
    data_source : mapping or None, default=None
        The manifest's ``data_source`` (a ``[data]`` file's description): its data set is put in the catalogue
        from the description alone, so that the games build without the files.
    attack_points : sequence of int or None, default=None
        The manifest's ``attack_points``: with ``[[attack]]`` tables, how many (game, mechanism, attack) plays
        each table made (what tells a table's own sweeps without building its attack).
    source : str, default="the results' manifest"
        The file ``data`` was read from, for the messages.
    trusted : bool, default=False
        Whether the user vouched for that file (``--trust-plugins``): a game's nested component may name code (a
        PANORAMIA helper's ``estimator``), imported only then, or when inside privgame or scikit-learn
        (:mod:`privgame.core.trust`).

    Returns
    -------
    analyses : tuple of AnalysisSettings
        One per grid point, in grid order (unbound to any claim).
    games : tuple of Game
        One per grid point, in grid order.

    Raises
    ------
    ConfigError
        If the game's name is not registered, the stored values do not make a valid grid, or a nested component
        names code that ``trusted`` does not allow.
    """
    with names_from(source, trusted=trusted):
        return _stored_games(data, swept, data_source, attack_points)


def _stored_games(
    data: Mapping[str, Any], swept: Sequence[str], data_source: Any, attack_points: Any
) -> tuple[tuple[AnalysisSettings, ...], tuple[Game, ...]]:
    if not isinstance(data, Mapping) or not isinstance(data.get("game"), Mapping):
        raise ConfigError(f"a stored config must hold a [game] table, got {data!r}.")
    if data_source is not None:
        from privgame.data.files import DataFileError, FileSource, register_source

        try:
            register_source(FileSource.from_json(data_source))
        except DataFileError as exc:
            raise ConfigError(str(exc)) from None
    data = _with_data_name(data)
    cls, params = _resolve("game", GAMES, data["game"])
    several = isinstance(data.get("attack"), list)
    tables = 1
    if several:
        tables = len(data["attack"])
        if not (isinstance(attack_points, list) and len(attack_points) == tables):
            raise ConfigError(f"the manifest must give attack_points for the {tables} [[attack]] tables.")
        if not all(isinstance(n, int) and 1 <= n <= MAX_GRID_POINTS for n in attack_points):
            raise ConfigError(f"the manifest's attack_points must be counts of plays, got {attack_points!r}.")
    sweeps: list[tuple[str, str, list[Any]]] = []
    for item in swept:
        section, _, key = str(item).partition(".")
        if section == "analysis" or (several and section == "attack"):
            continue  # the analysis sweeps come from [analysis] itself, below; [[attack]]'s from attack_points
        values = _lookup(data.get(section), key)
        if not isinstance(values, list) or not values:
            raise ConfigError(f"swept parameter {item!r} has no list of values in the stored config, got {values!r}.")
        sweeps.append((section, key, values))
    section = data.get("analysis", {})
    points = list(attack_points) if several else [1]
    _check_grid_size([[*(len(values) for _, _, values in sweeps), n] for n in points], section)
    _, analysis_sweeps, analyses = _parse_analysis(section if isinstance(section, Mapping) else {})
    stored = [f"analysis.{key}" for key in analysis_sweeps]
    if stored != [item for item in swept if str(item).startswith("analysis.")]:
        raise ConfigError(f"the stored [analysis] sweeps {stored}, but the manifest's swept list says {list(swept)}.")
    fixed, _ = _collect("game", cls, params)
    per_combo = []
    for combo in itertools.product(*(values for _, _, values in sweeps)):
        point = copy.deepcopy(fixed)
        for (section, key, _), value in zip(sweeps, combo, strict=True):
            if section == "game":
                _set_path(point, key, _freeze(value))
        per_combo.append(_build("game", cls, point))
    games = []
    for n in points:  # each [[attack]] table: every game/mechanism combination, its own n plays inside each
        if several and n % len(per_combo):
            raise ConfigError(f"the manifest's attack_points {attack_points!r} do not fit the stored sweeps.")
        inner = n // len(per_combo) if several else 1
        for game in per_combo:
            games.extend([game] * (inner * len(analyses)))
    return tuple(analyses) * (len(games) // len(analyses)), tuple(games)


def _parse_experiment(section: Mapping[str, Any]) -> tuple[str, int, int | None, tuple[str, ...]]:
    for key in section:
        if key not in _EXPERIMENT_KEYS:
            raise ConfigError(f"[experiment] unknown key {key!r}; allowed keys: {', '.join(_EXPERIMENT_KEYS)}.")
    name = section.get("name", "experiment")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"[experiment] name must be a non-empty string, got {name!r}.")
    if "seed" not in section:
        raise ConfigError("[experiment] seed is missing; give an integer >= 0 (results depend on it).")
    plugins = section.get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise ConfigError(f"[experiment] plugins must be a list of module names, got {plugins!r}.")
    try:
        seed = check_int("seed", section["seed"], low=0)
        repetitions = None if "repetitions" not in section else check_int("repetitions", section["repetitions"], low=1)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[experiment] {exc}") from None
    return name, seed, repetitions, tuple(plugins)


def _repetitions(given: int | None, grid: list[GridPoint], label: str) -> int:
    """The config's repetitions, or the number of trials the game fixes (one per target of a record game);
    ``label`` names where ``given`` came from in an error."""
    fixed = {point.game.trials_per_point() for point in grid} - {None}
    if not fixed:
        return 1 if given is None else given
    if len(fixed) > 1:
        raise ConfigError(
            f"[game] every grid point must have the same number of targets, got {sorted(fixed)} "  # type: ignore[type-var]
            "(sweep the targets in separate experiments)."
        )
    count = int(fixed.pop())  # type: ignore[arg-type]
    if given is not None and given != count:
        raise ConfigError(
            f"{label} must be omitted or equal the game's {count} targets (one trial per target), got {given}."
        )
    return count


def _check_new_play(
    seen: dict[str, tuple[int, int]],
    at: tuple[int, int],
    built: Mapping[str, Any],
    values: Mapping[str, Any],
    attack_points: Sequence[int],
) -> None:
    """Refuse a play (game, mechanism, attack) that an earlier grid point plays already: two identical
    ``[[attack]]`` tables, or a value swept twice.  Such points could not be told apart in a report or a comparison
    (their swept values are the same), and more trials of one play are what ``repetitions`` gives.  ``seen`` maps
    each play so far to its first grid point and its play number; ``at`` is this play's.

    Raises
    ------
    ConfigError
    """
    key = config_hash({section: _plain(component) for section, component in built.items()})
    if key not in seen:
        seen[key] = at
        return
    (first, first_play), (index, play) = seen[key], at
    shown = ", ".join(f"{k} = {v!r}" for k, v in values.items()) or "no swept values"
    where = ""
    if attack_points:  # the [[attack]] tables the two plays come from (each table's plays are consecutive)
        ends = list(itertools.accumulate(attack_points))
        tables = [next(i for i, end in enumerate(ends) if p < end) + 1 for p in (first_play, play)]
        if tables[0] != tables[1]:
            where = f" ([[attack]] tables {tables[0]} and {tables[1]} are the same attack)"
    raise ConfigError(
        f"each grid point must play its own (game, mechanism, attack), got grid points {first} and {index} alike "
        f"({shown}){where}; give each once (for more trials of it, raise [experiment] repetitions)."
    )


def _check_attack_tables(tables: list[Any]) -> None:
    """``[[attack]]``: between 1 and :data:`MAX_ATTACK_TABLES` tables.

    Raises
    ------
    ConfigError
    """
    if not tables or len(tables) > MAX_ATTACK_TABLES:
        raise ConfigError(f"[[attack]] must give 1 to {MAX_ATTACK_TABLES} attack tables, got {len(tables)}.")
    for i, table in enumerate(tables):
        if not isinstance(table, Mapping):
            raise ConfigError(f"[[attack]] entry {i + 1} must be a table, got {table!r}.")


def _check_grid_size(sizes: Sequence[Sequence[int]], analysis: Any) -> None:
    """Refuse a grid of more than :data:`MAX_GRID_POINTS` points before any is built (``sizes``: per attack table,
    the component sweeps' lengths, whose products add up; ``analysis``: the ``[analysis]`` table, whose confidence
    and δ lists multiply them)."""
    extra: list[int] = []
    if isinstance(analysis, Mapping):
        extra = [len(v) for k, v in analysis.items() if k in ANALYSIS_SWEEPS and isinstance(v, list)]
    total = sum(math.prod(part) for part in sizes) * math.prod(extra)
    if total > MAX_GRID_POINTS:
        shown = " + ".join(" × ".join(f"{n:,}" for n in part if n > 1) or "1" for part in sizes)
        shown = f"({shown})" if len(sizes) > 1 else shown
        shown = " × ".join([shown, *(f"{n:,}" for n in extra if n > 1)])
        raise ConfigError(
            f"the sweeps make {total:,} grid points ({shown}), more than the {MAX_GRID_POINTS:,} a config may have; "
            "sweep fewer values, or split the experiment."
        )


def _parse_analysis(
    section: Mapping[str, Any],
) -> tuple[AnalysisSettings, dict[str, tuple[float, ...]], list[AnalysisSettings]]:
    """The ``[analysis]`` settings: with each swept key at its first value, the sweeps, and every combination of
    the swept values (confidence outer, δ inner), each validated.

    Raises
    ------
    ConfigError
        For an unknown key, a list of a key that is not swept, an empty or repeated sweep, or an invalid value
        (naming the key and the value).
    """
    allowed = AnalysisSettings.KEYS
    sweeps: dict[str, tuple[float, ...]] = {}
    for key, value in section.items():
        if key not in allowed:
            raise ConfigError(f"[analysis] unknown key {key!r}; allowed keys: {', '.join(allowed)}.")
        if isinstance(value, list) and key != "estimators":
            if key not in ANALYSIS_SWEEPS:
                raise ConfigError(
                    f"[analysis] {key} cannot be swept (got the list {value!r}); give one value (the analysis sweeps "
                    f"{' and '.join(ANALYSIS_SWEEPS)})."
                )
            if not value:
                raise ConfigError(f"[analysis] {key} is an empty list; a sweep needs at least one value.")
            sweeps[key] = tuple(value)
    sweeps = {key: sweeps[key] for key in ANALYSIS_SWEEPS if key in sweeps}
    fixed: dict[str, Any] = {key: value for key, value in section.items() if key not in sweeps}
    settings: list[AnalysisSettings] = []
    for combo in itertools.product(*sweeps.values()):
        point: dict[str, Any] = dict(zip(sweeps, combo, strict=True))
        try:
            settings.append(AnalysisSettings(**fixed, **point))
        except (TypeError, ValueError) as exc:
            where = ", ".join(f"{k} = {v!r}" for k, v in point.items())
            text = str(exc).rstrip(".")
            raise ConfigError(f"[analysis] {text}" + (f" (in the sweep, at {where})." if where else ".")) from None
    normalised = {  # each swept key's values as the settings normalised them (TOML's 1 as 1.0 ...)
        key: tuple(getattr(settings[i * _stride(sweeps, key)], key) for i in range(len(given)))
        for key, given in sweeps.items()
    }
    for key, values in normalised.items():
        if len(set(values)) != len(values):
            repeated = next(v for v in values if values.count(v) > 1)
            raise ConfigError(f"[analysis] {key} lists the value {repeated!r} twice; each swept value once.")
    return settings[0], normalised, settings


def _stride(sweeps: Mapping[str, Sequence[Any]], key: str) -> int:
    """How far apart consecutive values of ``key`` are in the product of ``sweeps`` (the later keys' sizes)."""
    keys = list(sweeps)
    return math.prod(len(sweeps[k]) for k in keys[keys.index(key) + 1 :])


def _resolve(section: str, registry: Registry[Any], table: Mapping[str, Any]) -> tuple[type, dict[str, Any]]:
    if "name" not in table:
        raise ConfigError(f"[{section}] name is missing; registered {registry.kind}s: {', '.join(registry.names())}.")
    name = table["name"]
    if not isinstance(name, str):
        raise ConfigError(f"[{section}] name must be a string, got {name!r}.")
    try:
        cls = registry.get(name)
    except UnknownNameError as exc:
        # a component of another kind (an attack as a game's generator, a game as a mechanism): say so
        others = [r.kind for r in _component_registries().values() if r is not registry and name in r]
        if others:
            raise ConfigError(
                f"[{section}] name must be {'an' if registry.kind[0] in 'aeiou' else 'a'} {registry.kind} (one of "
                f"{', '.join(registry.names())}), got {name!r}, "
                f"a registered {' and '.join(others)}."
            ) from None
        raise ConfigError(f"[{section}] {exc}") from None
    params = {k: v for k, v in table.items() if k != "name"}
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in params:
        if key not in fields:
            allowed = ", ".join(fields) or "(none)"
            raise ConfigError(f"[{section}] {name} has no parameter {key!r}; its parameters: {allowed}.")
    for key, f in fields.items():
        missing = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if missing and key not in params:
            raise ConfigError(f"[{section}] {name} needs the parameter {key!r}.")
    return cls, params


def _is_sweep(cls: type, key: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    options = _hint_options(cls, key)
    is_sequence_param = any(typing.get_origin(h) in (tuple, list) or h in (tuple, list) for h in options)
    # a flat list is one value of a sequence parameter, and the empty list is flat: `hidden = []` is no hidden
    # layer, not an empty sweep (the component refuses an empty value it cannot take)
    return not is_sequence_param or (len(value) > 0 and all(isinstance(v, list) for v in value))


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


#: the component base classes a parameter may be typed with, and the registry its table names a component in
def _component_registries() -> dict[type, Registry[Any]]:
    return {Game: GAMES, Mechanism: MECHANISMS, Attack: ATTACKS}


@functools.lru_cache(maxsize=256)
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, evaluated once per class (it compiles every annotation each time)."""
    return typing.get_type_hints(cls)


def _hint_options(cls: type, key: str) -> tuple[Any, ...]:
    """The types parameter ``key`` of ``cls`` is annotated with: the members of a union, or the one type."""
    hint = _type_hints(cls).get(key)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def component_base(cls: type, key: str) -> type | None:
    """The component base class (``Mechanism``, ``Attack`` or ``Game``) that parameter ``key`` of ``cls`` is typed
    with, or ``None``: such a parameter is a *nested component*, given in the config as a table naming it."""
    for option in _hint_options(cls, key):
        for base in _component_registries():
            if isinstance(option, type) and issubclass(option, base):
                return base
    return None


def _collect(label: str, cls: type, params: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, list[Any]]]]:
    """A component's parameters split into the fixed ones and the sweeps (``"key"`` or, inside a nested
    component's table, ``"key.subkey"``, with their values); a nested component's table is checked here (its name
    resolved in its registry, its keys its parameters), and kept as a table of its own fixed values."""
    fixed: dict[str, Any] = {}
    sweeps: list[tuple[str, list[Any]]] = []
    for key, value in params.items():
        base = component_base(cls, key)
        if base is not None and isinstance(value, str):
            value = {"name": value}  # a name alone: the component with its defaults
        if base is not None and isinstance(value, Mapping):
            nested_cls, nested = _resolve(f"{label}.{key}", _component_registries()[base], value)
            inner, inner_sweeps = _collect(f"{label}.{key}", nested_cls, nested)
            fixed[key] = {"name": value["name"], **inner}
            sweeps += [(f"{key}.{path}", values) for path, values in inner_sweeps]
        elif base is not None and not isinstance(value, base):
            raise ConfigError(
                f"[{label}] {key} must be a table naming a {base.__name__.lower()} ([{label}.{key}] with name = ...), "
                f"got {value!r}."
            )
        elif _is_sweep(cls, key, value):
            if len(value) == 0:
                raise ConfigError(f"[{label}] {key} is an empty list; a sweep needs at least one value.")
            sweeps.append((key, [_freeze(v) for v in value]))
        else:
            fixed[key] = _freeze(value)
    return fixed, sweeps


def _set_path(table: dict[str, Any], path: str, value: Any) -> None:
    """Set ``table[k1][k2]... = value`` for the dotted ``path`` (nested components' tables)."""
    *heads, last = path.split(".")
    for head in heads:
        table = table[head]
    table[last] = value


def _get_path(component: Any, path: str) -> Any:
    """The attribute at the dotted ``path`` of a built component (through its nested components)."""
    for part in path.split("."):
        component = getattr(component, part)
    return component


def _lookup(table: Any, path: str) -> Any:
    """``table[k1][k2]...`` for the dotted ``path`` of a stored config, or ``None``."""
    for part in path.split("."):
        if not isinstance(table, Mapping):
            return None
        table = table.get(part)
    return table


def _build(section: str, cls: type, params: Mapping[str, Any]) -> Any:
    built = dict(params)
    for key, value in params.items():
        base = component_base(cls, key)
        if base is not None and isinstance(value, Mapping):
            nested_cls = _component_registries()[base].get(value["name"])
            built[key] = _build(f"{section}.{key}", nested_cls, {k: v for k, v in value.items() if k != "name"})
    try:
        return cls(**built)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{section}] {cls.name}: {exc}") from None  # type: ignore[attr-defined]
    except RecursionError:  # e.g. a plugin component whose default builds another of itself, without end
        raise ConfigError(
            f"[{section}] {cls.name} must be buildable, got a component whose construction recurses without end "  # type: ignore[attr-defined]
            "(does a default of it build another of itself?)."
        ) from None
