"""scikit-learn Pipelines for the ``sklearn`` mechanism's tests, named by import path as a user's plugin module."""

from __future__ import annotations

from typing import Any


def scaled_logistic() -> Any:
    """StandardScaler then LogisticRegression, on the encoded features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))


def columns_logistic() -> Any:
    """The records' own columns: numeric ones scaled, categorical ones one-hot, then LogisticRegression."""
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns = make_column_transformer(
        (StandardScaler(), make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")),
    )
    return make_pipeline(columns, LogisticRegression(max_iter=200))
