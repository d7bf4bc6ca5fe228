"""Drafting a validation set from the collection itself (``python -m retrieval_lib draft``, docs/drafting.md).

- :mod:`~retrieval_lib.drafting.pages`: the collection read once, through payload roles, as pages of chunks;
- :mod:`~retrieval_lib.drafting.language`: the book's own language, and headings that name no page;
- :mod:`~retrieval_lib.drafting.known_items`: known-item queries from titles, headings and lead sentences;
- :mod:`~retrieval_lib.drafting.topics`: topic phrases from the top-level sections, with their prefix;
- :mod:`~retrieval_lib.drafting.negatives`: the shipped out-of-domain questions, kept where the book does not
  answer them;
- :mod:`~retrieval_lib.drafting.draft`: all of it in one read and one batched search pass;
- :mod:`~retrieval_lib.drafting.files`: the four files, written so that a re-draft keeps every reviewed entry.
"""

from retrieval_lib.drafting.draft import DEFAULT_PER_FILE, Draft, draft_collection
from retrieval_lib.drafting.files import write_draft

__all__ = ["Draft", "draft_collection", "write_draft", "DEFAULT_PER_FILE"]
