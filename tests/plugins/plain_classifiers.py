"""Third-party classifiers for the ``sklearn`` mechanism, named by import path as a user's plugin module: neither
declares scikit-learn's parameter constraints (``_parameter_constraints``), and ``Counts`` is not even derived from
``BaseEstimator`` (no scikit-learn tags).  Both predict each class's smoothed frequency among the training labels,
shifted by a feature, so that members and non-members differ a little."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


def _fit(model: Any, y: np.ndarray) -> None:
    model.classes_ = np.unique(y)
    counts = np.array([(y == c).sum() for c in model.classes_], dtype=float) + model.smoothing
    model.prior_ = counts / counts.sum()


def _proba(model: Any, x: Any) -> np.ndarray:
    first = np.asarray(x, dtype=float)[:, :1]
    logits = np.log(model.prior_)[None, :] + 0.1 * first * np.arange(model.classes_.size)[None, :]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


class Prior(ClassifierMixin, BaseEstimator):
    """A scikit-learn classifier by inheritance, without ``_parameter_constraints``."""

    def __init__(self, smoothing: float = 1.0) -> None:
        self.smoothing = smoothing

    def fit(self, x: Any, y: Any) -> Prior:
        _fit(self, np.asarray(y))
        return self

    def predict_proba(self, x: Any) -> np.ndarray:
        return _proba(self, x)


class Counts:
    """The same classifier by duck typing: fit, predict_proba, get_params and set_params, no scikit-learn base."""

    def __init__(self, smoothing: float = 1.0) -> None:
        self.smoothing = smoothing

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"smoothing": self.smoothing}

    def set_params(self, **params: Any) -> Counts:
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def fit(self, x: Any, y: Any) -> Counts:
        _fit(self, np.asarray(y))
        return self

    def predict_proba(self, x: Any) -> np.ndarray:
        return _proba(self, x)


class CountsRegressor(Counts):
    """Says it is a regressor (scikit-learn's convention before its tags)."""

    _estimator_type = "regressor"
