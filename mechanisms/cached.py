"""Releases through the artefact cache: a mechanism's output on given data with a given seed, computed once.

A release is a deterministic function of (the mechanism's class and parameters, the privgame version, the source
of the mechanism's package and of ``analysis/`` and the numerical libraries' versions, the input data's content,
the seed's entropy and spawn key), and that is its key in :class:`privgame.core.cache.ArtefactCache`.
Tables (``release_kind == "table"``, the synthetic-data generators) are cached as an npz of plain arrays, or as
Parquet when their columns do not allow it (:meth:`privgame.core.cache.ArtefactCache.put_table`); trained models
(``release_kind == "model"`` on a :class:`privgame.mechanisms.training.data.TrainingData`) as the npz of their arrays
(:meth:`privgame.mechanisms.training.release.ModelRelease.to_arrays`, decoded by
:func:`privgame.mechanisms.training.release.decode_release`); a DP-SGD canary mechanism's per-canary values on a
:class:`~privgame.mechanisms.training.canaries.CanaryData` (mechanisms that say ``caches_canary_release``: the
multi-run game's runs) as one float64 vector; other releases are recomputed every time.  Shadow
modelling (``attacks/``) and the record games (``games/record.py``) both go through these functions, so a killed
run resumes without repeating a finished generator run, and two games on the same target share their shadows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privgame.core.cache import ArtefactCache, code_fingerprint, content_hash, make_key, privgame_version, seed_identity
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.training.canaries import CanaryData
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.release import ModelRelease, decode_release

__all__ = ["cached_release", "cached_release_many", "release_key"]


def release_key(mechanism: Mechanism, data: Any, seed: np.random.SeedSequence) -> str | None:
    """The cache key of ``mechanism.release(data, rng=default_rng(seed))``; ``None`` when it is not cacheable."""
    if mechanism.release_kind == "table" and isinstance(data, pd.DataFrame | np.ndarray):
        # the mechanism's own package and ``analysis`` (discretisation, checks), which every generator uses
        code = [code_fingerprint(type(mechanism).__module__), code_fingerprint("privgame.analysis.discretise")]
        content: Any = content_hash(data)
        # a generator that runs a program (mechanisms/synth/external.py) depends on that program's files too
        extra = getattr(mechanism, "cache_inputs", None)
        if callable(extra):
            content = {"table": content, **extra(data)}
    elif mechanism.release_kind == "model" and isinstance(data, TrainingData):
        # the trainers share mechanisms/training (data, release, the network trainer) and mechanisms/dpsgd
        # (the models' initialisation, DP-SGD)
        code = [
            code_fingerprint(type(mechanism).__module__),
            code_fingerprint("privgame.mechanisms.training.data"),
            code_fingerprint("privgame.mechanisms.dpsgd.models"),
            code_fingerprint("privgame.analysis.discretise"),
        ]
        content = {"pool": data.pool_hash, "include": content_hash(data.include), "size": data.public_size}
        # a model released as its answers on given records (sklearn) depends on those records too, and on its
        # estimator's own module (a plugin's, or a library's)
        extra = getattr(mechanism, "cache_inputs", None)
        if callable(extra):
            content.update(extra(data))
        modules = getattr(mechanism, "cache_code", None)
        if callable(modules):
            code += [code_fingerprint(m) for m in modules()]
    elif (
        mechanism.release_kind == "per-canary-values"
        and getattr(mechanism, "caches_canary_release", False)
        and isinstance(data, CanaryData)
    ):
        # a DP-SGD canary run (the multi-run game's): the dpsgd package, the rows, the canaries and their bits
        code = [code_fingerprint(type(mechanism).__module__), code_fingerprint("privgame.mechanisms.training.data")]
        content = {
            "pool": data.rows.pool_hash,
            "membership": content_hash(data.membership),
            "canaries": [content_hash(a) for a in (data.canary_x, data.canary_y) if a is not None],
        }
        modules = getattr(mechanism, "cache_code", None)
        if callable(modules):
            code += [code_fingerprint(m) for m in modules()]
    else:
        return None
    # a mechanism may say which of its parameters its release depends on (an external generator: not its time limit)
    identity = getattr(mechanism, "cache_identity", None)
    return make_key(
        artefact="release",
        mechanism=identity() if callable(identity) else mechanism,
        privgame=privgame_version(),
        code=code,
        data=content,
        seed=seed_identity(seed),
    )


def _named(value: Any) -> set[str]:
    """Every string among ``value``'s dataclass fields, at any depth (the import paths a mechanism names)."""
    found: set[str] = set()
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.add(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            pending += [getattr(item, f.name) for f in dataclasses.fields(item)]
        elif isinstance(item, Mapping):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple | set | frozenset):
            pending += list(item)
    return found


def _values(arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """A cached per-canary-values release: its one float64 vector (anything else is a damaged entry)."""
    values = arrays.get("values")
    if set(arrays) != {"values"} or values is None or values.dtype != np.float64 or values.ndim != 1:
        raise ValueError("not a per-canary-values release")
    return values


def _get(cache: ArtefactCache, mechanism: Mechanism, key: str) -> Any | None:
    if mechanism.release_kind == "per-canary-values":
        return cache.get_arrays(key, decode=_values)
    if mechanism.release_kind == "model":
        # decoded inside the cache's damage handling: an entry that is no release of this mechanism, or that names
        # code its mechanism does not (a user model's factory rewritten to another), is a damaged entry,
        # deleted and recomputed, never imported on the file's word (privgame.core.trust)
        names = _named(mechanism)
        return cache.get_arrays(key, decode=lambda arrays: decode_release(arrays, names=names))
    return cache.get_table(key)


def cached_release_many(
    mechanism: Mechanism,
    data: Sequence[Any],
    *,
    seeds: Sequence[np.random.SeedSequence],
    cache: ArtefactCache | None,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """``[mechanism.release(d, rng=default_rng(s)) for d, s in zip(data, seeds)]``, through the cache.

    The runs that are not cached go to ``mechanism.release_runs`` in one batch (so a mechanism that batches does),
    and each result is stored as soon as the batch returns.  ``progress(k)`` is called with the number of runs
    finished (cached ones included).
    """
    if len(data) != len(seeds):
        raise ValueError(f"cached_release_many needs one seed per input, got {len(data)} and {len(seeds)}.")
    out: list[Any] = [None] * len(data)
    keys = [release_key(mechanism, d, s) if cache is not None else None for d, s in zip(data, seeds, strict=True)]
    todo = []
    for i, key in enumerate(keys):
        hit = _get(cache, mechanism, key) if cache is not None and key is not None else None
        if hit is None:
            todo.append(i)
        else:
            out[i] = hit
    if progress is not None and len(todo) < len(data):
        progress(len(data) - len(todo))
    if not todo:
        return out
    if type(mechanism).release_runs is Mechanism.release_runs or not getattr(mechanism, "batches_runs", True):
        # no batching to gain: run and store one at a time, so a kill loses at most the run in flight
        for i in todo:
            out[i] = _store(cache, keys[i], mechanism.release(data[i], rng=np.random.default_rng(seeds[i])))
            if progress is not None:
                progress(1)
        return out
    try:
        fresh = mechanism.release_runs([data[i] for i in todo], rngs=[np.random.default_rng(seeds[i]) for i in todo])
    except Exception as exc:
        # the runs of a batch that finished before one failed (an external generator's) are kept
        for j, release in getattr(exc, "partial_releases", {}).items():
            _store(cache, keys[todo[j]], release)
        raise
    for i, release in zip(todo, fresh, strict=True):
        out[i] = _store(cache, keys[i], release)
    if progress is not None:
        progress(len(todo))
    return out


def _store(cache: ArtefactCache | None, key: str | None, release: Any) -> Any:
    if cache is not None and key is not None:
        if isinstance(release, ModelRelease):
            cache.put_arrays(key, release.to_arrays())
        elif isinstance(release, np.ndarray):
            cache.put_arrays(key, {"values": release})
        else:
            cache.put_table(key, release)
    return release


def cached_release(
    mechanism: Mechanism, data: Any, *, seed: np.random.SeedSequence, cache: ArtefactCache | None
) -> Any:
    """``mechanism.release(data, rng=default_rng(seed))``, through the cache (see :func:`cached_release_many`)."""
    return cached_release_many(mechanism, [data], seeds=[seed], cache=cache)[0]
