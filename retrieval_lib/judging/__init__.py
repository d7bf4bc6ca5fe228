"""Judging: human relevance judgments (a YAML file per book) and the labelling widget that writes them.

- :mod:`~retrieval_lib.judging.judgments`: load, save and check judgments, stale ones split off by content hash;
- :mod:`~retrieval_lib.judging.labeling`: the ipywidgets form an analyst labels with in JupyterLab.
"""

from retrieval_lib.judging.judgments import GRADES, Judgment, JudgmentFile, load_judgments, save_judgments
from retrieval_lib.judging.labeling import LabelingSession, LabelingWidget, items_from_responses

__all__ = ["GRADES", "Judgment", "JudgmentFile", "load_judgments", "save_judgments", "LabelingSession",
           "LabelingWidget", "items_from_responses"]
