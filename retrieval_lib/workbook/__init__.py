"""The workbook: the notebooks' registry, a notebook's run and report, the batch runner and what it writes.

- :mod:`~retrieval_lib.workbook.registry`: one record per notebook (the only place a notebook's number is written);
- :mod:`~retrieval_lib.workbook.report`: :func:`open_run`, what a notebook opens first, and its
  :class:`NotebookReport` (gates, findings, metrics, figures);
- :mod:`~retrieval_lib.workbook.runner`: :func:`run_workbook`, papermill over the notebooks into a run folder;
- :mod:`~retrieval_lib.workbook.runfiles`, :mod:`~retrieval_lib.workbook.summary`,
  :mod:`~retrieval_lib.workbook.index_page`: run files, the verdict and the HTML index of a run;
- :mod:`~retrieval_lib.workbook.plots`, :mod:`~retrieval_lib.workbook.frames`: figures and tables;
- :mod:`~retrieval_lib.workbook.glossary`, :mod:`~retrieval_lib.workbook.specs`: what each figure and
  specification code means.
"""

from retrieval_lib.workbook.check import show
from retrieval_lib.workbook.frames import result_fields, results_frame
from retrieval_lib.workbook.registry import NOTEBOOKS, NotebookSpec, notebook_spec
from retrieval_lib.workbook.report import Gate, NotebookReport, NotebookRun, open_run
from retrieval_lib.workbook.runner import RunResult, list_notebooks, load_profile, run_workbook

__all__ = ["open_run", "show", "NotebookRun", "NotebookReport", "Gate", "results_frame", "result_fields",
           "run_workbook", "list_notebooks", "load_profile", "RunResult", "NOTEBOOKS", "NotebookSpec", "notebook_spec"]
