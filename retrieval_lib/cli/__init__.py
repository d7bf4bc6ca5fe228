"""The command line, ``python -m retrieval_lib COMMAND``: :func:`main` and one module per command in
:mod:`retrieval_lib.cli.commands`; :func:`plan_run` is a run's embedding bill before it runs."""

from retrieval_lib.cli.commands.plan import RunPlan, plan_run, prefetch_queries
from retrieval_lib.cli.main import main

__all__ = ["main", "RunPlan", "plan_run", "prefetch_queries"]
