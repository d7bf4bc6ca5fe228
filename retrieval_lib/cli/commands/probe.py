"""``python -m retrieval_lib probe``: the older name of ``check embedding_contract`` (notebook 09's check alone).

Its options keep their older names (``--sample``, ``--seed``, ``--top-k``, ``--min-cosine``, ``--max-drop``); the
embedding cost is printed on stderr before anything is embedded; ``--json`` keeps its keys (``points``,
``collection``, ``cost``, ``diagnosis`` beside the gates, metrics and findings).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from retrieval_lib.cli.commands.check import register_check
from retrieval_lib.workbook.registry import notebook_spec

__all__ = ["register"]

#: The older option names -> the notebook's parameters.
LEGACY = {"--sample": "contract_sample", "--seed": "contract_seed", "--top-k": "top_k",
          "--min-cosine": "contract_min_cosine", "--max-drop": "max_self_retrieval_drop"}


def _say_cost(args: argparse.Namespace, params: dict[str, Any], settings: Any) -> None:
    """Refuse bad arguments before the model loads or a connection opens, then say what the probe costs."""
    from retrieval_lib.checks.collection import embedding_contract
    from retrieval_lib.embedding.providers import make_embedder

    embedding_contract.check_args(params["contract_sample"], params["top_k"], params["contract_min_cosine"],
                                  params["max_self_retrieval_drop"])
    embedder = make_embedder(settings)  # the model loads on first use: not here
    line = embedding_contract.plan_cost(embedder, params["contract_sample"]).line()
    print(line.replace("cost:", "probe cost (at most):", 1), file=sys.stderr)


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    register_check(
        sub, add, common, notebook_spec("embedding_contract"), name="probe",
        summary="check stored vectors against the configured embedder (model, input type, text; check "
                "embedding_contract)",
        description="Sample stored chunks (seeded, stratified by source file), re-embed their text as documents and "
                    "compare with the stored vectors; search each chunk's first sentence as a query. When the "
                    "vectors do not match, say why: a different model, a swapped input type, text changed since "
                    "ingest, or truncation. The same as `check embedding_contract`, with the older option names.",
        examples="  python -m retrieval_lib probe\n"
                 "  python -m retrieval_lib probe --sample 128 --seed 7\n"
                 "  python -m retrieval_lib probe --json",
        legacy=LEGACY, prepare=_say_cost)
