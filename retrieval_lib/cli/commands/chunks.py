"""``python -m retrieval_lib chunks``: the older name of ``check chunk_quality`` (notebook 12's check alone)."""

from __future__ import annotations

import argparse
from typing import Any

from retrieval_lib.cli.commands.check import register_check
from retrieval_lib.workbook.registry import notebook_spec

__all__ = ["register"]


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    register_check(
        sub, add, common, notebook_spec("chunk_quality"), name="chunks",
        summary="chunk quality: chunks past the model window, fragments, fragment wins (check chunk_quality)",
        description="Count every chunk's length with the configured embedder's own tokenizer (title line and "
                    "special tokens included), list the chunks past the model's window and the share of text it "
                    "never sees, list fragments, and run the golden, heading and demo queries to count how often a "
                    "fragment wins top-1. The same as `check chunk_quality`.",
        examples="  python -m retrieval_lib chunks\n  python -m retrieval_lib chunks --json")
