"""Trained models as mechanisms: a pool of records and an include-mask in, a model that scores any record out.

- :mod:`privgame.mechanisms.training.data`: :class:`TrainingData`, the input (pool features, labels, include-mask).
- :mod:`privgame.mechanisms.training.canaries`: :class:`CanaryData`, the input of the DP-SGD canary mechanisms (the
  one-run and multi-run games' membership bits with their training rows and canary examples).
- :mod:`privgame.mechanisms.training.release`: :class:`ModelRelease`, the one protocol every attack on a model uses
  (``logits``, ``probabilities``, ``losses``, ``confidence``; ``to_arrays`` for white-box access and the cache).
- :mod:`privgame.mechanisms.training.models`: logistic regression and MLPs trained with Adam, K models in one batched
pass
  (torch); :mod:`privgame.mechanisms.training.cnn`: a small CNN on image rows (torch);
  :mod:`privgame.mechanisms.training.trees`: gradient-boosted trees (scikit-learn);
  :mod:`privgame.mechanisms.training.sklearn_model`: any scikit-learn classifier by import path, released as its answers
  on the records its game queries (``LookupRelease``).  The private counterpart, DP-SGD on the same MLP, is
  :class:`privgame.mechanisms.dpsgd.classifier.DPSGDClassifier`.

TabPFN, the model of the LiRA calibration paper, needs weights downloaded at run time, which privgame never does;
the models here all train locally.  Names are imported on first use (:mod:`privgame.core._lazy`): the data and release
types import no torch.
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.mechanisms.training.canaries import CanaryData, CanaryMechanism, CanaryModelRelease
    from privgame.mechanisms.training.cnn import CNNClassifier
    from privgame.mechanisms.training.data import TrainingData
    from privgame.mechanisms.training.models import LogisticRegressionClassifier, MLPClassifier, TrainedModel
    from privgame.mechanisms.training.release import (
        ConvNetRelease,
        LookupRelease,
        ModelRelease,
        ModuleRelease,
        NetworkRelease,
        TreeEnsembleRelease,
        decode_release,
    )
    from privgame.mechanisms.training.sklearn_model import SklearnModel
    from privgame.mechanisms.training.trees import GradientBoostedTrees

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
        "CNNClassifier": "privgame.mechanisms.training.cnn:CNNClassifier",
        "CanaryData": "privgame.mechanisms.training.canaries:CanaryData",
        "CanaryMechanism": "privgame.mechanisms.training.canaries:CanaryMechanism",
        "CanaryModelRelease": "privgame.mechanisms.training.canaries:CanaryModelRelease",
        "ConvNetRelease": "privgame.mechanisms.training.release:ConvNetRelease",
        "GradientBoostedTrees": "privgame.mechanisms.training.trees:GradientBoostedTrees",
        "LogisticRegressionClassifier": "privgame.mechanisms.training.models:LogisticRegressionClassifier",
        "LookupRelease": "privgame.mechanisms.training.release:LookupRelease",
        "MLPClassifier": "privgame.mechanisms.training.models:MLPClassifier",
        "ModelRelease": "privgame.mechanisms.training.release:ModelRelease",
        "ModuleRelease": "privgame.mechanisms.training.release:ModuleRelease",
        "NetworkRelease": "privgame.mechanisms.training.release:NetworkRelease",
        "SklearnModel": "privgame.mechanisms.training.sklearn_model:SklearnModel",
        "TrainedModel": "privgame.mechanisms.training.models:TrainedModel",
        "TrainingData": "privgame.mechanisms.training.data:TrainingData",
        "TreeEnsembleRelease": "privgame.mechanisms.training.release:TreeEnsembleRelease",
        "decode_release": "privgame.mechanisms.training.release:decode_release",
    },
)
