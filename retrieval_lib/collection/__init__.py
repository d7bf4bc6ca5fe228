"""The collection a team already has, read as it is.

- :mod:`~retrieval_lib.collection.roles`: payload roles, the mapping from a team's payload keys (dotted paths,
  ordered fallbacks) to what the workbook reads; our own ingest's schema is :data:`DEFAULT_ROLES`;
- :mod:`~retrieval_lib.collection.infer`: that mapping inferred from a sample, with its evidence;
- :mod:`~retrieval_lib.collection.view`: :class:`CollectionView`, a store read through the roles, never written;
- :mod:`~retrieval_lib.collection.inspect`: ``inspect``, what a collection holds, told before anything is judged;
- :mod:`~retrieval_lib.collection.ours`: which collections our own ingest wrote, and advice that never tells a
  team to drop its own collection.
"""

from retrieval_lib.collection.infer import infer_roles
from retrieval_lib.collection.inspect import Inspection, inspect_collection
from retrieval_lib.collection.ours import rebuild_advice
from retrieval_lib.collection.roles import DEFAULT_ROLES, ROLES, PayloadRoles
from retrieval_lib.collection.view import CollectionView, held_fields

__all__ = ["ROLES", "PayloadRoles", "DEFAULT_ROLES", "infer_roles", "CollectionView", "held_fields", "Inspection",
           "inspect_collection", "rebuild_advice"]
