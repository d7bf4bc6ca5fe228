"""A chunk's length is counted on the text its pipeline embedded, by one rule for ``inspect`` and notebook 12.

On team #2's collection ``inspect`` said 72 chunks were past the window (content alone, without the model's two
special tokens), notebook 12 said 80 (the title put in front, as our own ingest embeds it, though the team never
embedded one); 74 was true. Our ingest embeds ``title\\ncontent``; a team's pipeline, the content alone.
"""

from __future__ import annotations

from retrieval_lib.checks.collection.chunk_quality import measure_chunks
from retrieval_lib.collection.ours import tokens_read
from retrieval_lib.embedding.base import SPECIAL_TOKENS
from retrieval_lib.ingest.chunking import default_count_tokens

TITLE = "Module 1: The Robotic Nervous System, ROS 2 Fundamentals"
CONTENT = " ".join(["nodes publish messages on topics that other nodes subscribe to"] * 20)


def test_ours_counts_the_title_a_teams_the_content_alone_both_with_special_tokens():
    record = {"title": TITLE, "content": CONTENT}
    content_only = default_count_tokens(CONTENT) + SPECIAL_TOKENS
    with_title = default_count_tokens(f"{TITLE}\n{CONTENT}") + SPECIAL_TOKENS
    assert with_title > content_only
    assert tokens_read(record, default_count_tokens, ours=False) == content_only
    assert tokens_read(record, default_count_tokens, ours=True) == with_title
    assert tokens_read({"content": CONTENT}, default_count_tokens, ours=True) == content_only  # no title: none added


def test_notebook_12_reads_a_teams_chunk_as_its_content_alone():
    record = {"title": TITLE, "content": CONTENT, "source_file": "docs/a.md", "_id": "p1"}
    content_only = default_count_tokens(CONTENT) + SPECIAL_TOKENS
    window = content_only + 3  # the team's chunk fits; with a title in front it would not
    theirs = measure_chunks([record], default_count_tokens, window, ours=False)
    ours = measure_chunks([record], default_count_tokens, window, ours=True)
    assert theirs.chunks[0].read == content_only and theirs.chunks[0].unseen_share == 0
    assert ours.chunks[0].read > window
