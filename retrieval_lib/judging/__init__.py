"""Judging: human relevance judgments (a YAML file per book), the labelling widget that writes them, and the
review of drafted validation sets.

- :mod:`~retrieval_lib.judging.judgments`: load, save and check judgments, stale ones split off by content hash;
- :mod:`~retrieval_lib.judging.labeling`: the ipywidgets form an analyst labels with in JupyterLab;
- :mod:`~retrieval_lib.judging.review`: accept, reject, edit or mark answerable a drafted entry (``draft``'s files),
  each click written at once, atomically; :mod:`~retrieval_lib.judging.review_view` is its form in JupyterLab;
- :mod:`~retrieval_lib.judging.yaml_edit`: one entry of a YAML file changed in place, comments kept.
"""

from retrieval_lib.judging.judgments import Judgment, JudgmentFile, load_judgments, save_judgments
from retrieval_lib.judging.labeling import LabelingSession, LabelingWidget, items_from_responses
from retrieval_lib.judging.review import DraftReview, ReviewItem, load_draft_entries, open_review
from retrieval_lib.judging.review_view import ReviewWidget

__all__ = ["Judgment", "JudgmentFile", "load_judgments", "save_judgments", "LabelingSession",
           "LabelingWidget", "items_from_responses", "DraftReview", "ReviewItem", "ReviewWidget",
           "load_draft_entries", "open_review"]
