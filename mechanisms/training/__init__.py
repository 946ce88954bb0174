"""Trained models as mechanisms: a pool of records and an include-mask in, a model that scores any record out.

- :mod:`mechanisms.training.data`: :class:`TrainingData`, the input (pool features, labels, include-mask).
- :mod:`mechanisms.training.canaries`: :class:`CanaryData`, the input of the DP-SGD canary mechanisms (the
  one-run and multi-run games' membership bits with their training rows and canary examples).
- :mod:`mechanisms.training.release`: :class:`ModelRelease`, the one protocol every attack on a model uses
  (``logits``, ``probabilities``, ``losses``, ``confidence``; ``to_arrays`` for white-box access and the cache).
- :mod:`mechanisms.training.models`: logistic regression and MLPs trained with Adam, K models in one batched pass
  (torch); :mod:`mechanisms.training.cnn`: a small CNN on image rows (torch); :mod:`mechanisms.training.trees`:
  gradient-boosted trees (scikit-learn); :mod:`mechanisms.training.sklearn_model`: any scikit-learn classifier
  by import path, released as its answers on the records its game queries (``LookupRelease``).  The private
  counterpart, DP-SGD on the same MLP, is :class:`mechanisms.dpsgd.classifier.DPSGDClassifier`.

TabPFN, the model of the LiRA calibration paper, needs weights downloaded at run time, which privgame never does;
the models here all train locally.  Names are imported on first use (:mod:`analysis._lazy`): the data and release
types import no torch.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from mechanisms.training.canaries import CanaryData, CanaryMechanism, CanaryModelRelease
    from mechanisms.training.cnn import CNNClassifier
    from mechanisms.training.data import TrainingData
    from mechanisms.training.models import LogisticRegressionClassifier, MLPClassifier, TrainedModel
    from mechanisms.training.release import (
        ConvNetRelease,
        LookupRelease,
        ModelRelease,
        ModuleRelease,
        NetworkRelease,
        TreeEnsembleRelease,
        decode_release,
    )
    from mechanisms.training.sklearn_model import SklearnModel
    from mechanisms.training.trees import GradientBoostedTrees

__all__ = [
    "CNNClassifier",
    "CanaryData",
    "CanaryMechanism",
    "CanaryModelRelease",
    "ConvNetRelease",
    "GradientBoostedTrees",
    "LogisticRegressionClassifier",
    "LookupRelease",
    "MLPClassifier",
    "ModelRelease",
    "ModuleRelease",
    "NetworkRelease",
    "SklearnModel",
    "TrainedModel",
    "TrainingData",
    "TreeEnsembleRelease",
    "decode_release",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "CNNClassifier": "mechanisms.training.cnn:CNNClassifier",
        "CanaryData": "mechanisms.training.canaries:CanaryData",
        "CanaryMechanism": "mechanisms.training.canaries:CanaryMechanism",
        "CanaryModelRelease": "mechanisms.training.canaries:CanaryModelRelease",
        "ConvNetRelease": "mechanisms.training.release:ConvNetRelease",
        "GradientBoostedTrees": "mechanisms.training.trees:GradientBoostedTrees",
        "LogisticRegressionClassifier": "mechanisms.training.models:LogisticRegressionClassifier",
        "LookupRelease": "mechanisms.training.release:LookupRelease",
        "MLPClassifier": "mechanisms.training.models:MLPClassifier",
        "ModelRelease": "mechanisms.training.release:ModelRelease",
        "ModuleRelease": "mechanisms.training.release:ModuleRelease",
        "NetworkRelease": "mechanisms.training.release:NetworkRelease",
        "SklearnModel": "mechanisms.training.sklearn_model:SklearnModel",
        "TrainedModel": "mechanisms.training.models:TrainedModel",
        "TrainingData": "mechanisms.training.data:TrainingData",
        "TreeEnsembleRelease": "mechanisms.training.release:TreeEnsembleRelease",
        "decode_release": "mechanisms.training.release:decode_release",
    },
)
