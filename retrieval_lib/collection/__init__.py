"""The collection a team already has, read as it is.

- :mod:`~retrieval_lib.collection.roles`: payload roles, the mapping from a team's payload keys (dotted paths,
  ordered fallbacks) to what the workbook reads; our own ingest's schema is :data:`DEFAULT_ROLES`;
- :mod:`~retrieval_lib.collection.infer`: that mapping inferred from a sample, with its evidence;
- :mod:`~retrieval_lib.collection.view`: :class:`CollectionView`, a store read through the roles, never written;
- :mod:`~retrieval_lib.collection.inspect`: ``inspect``, what a collection holds, told before anything is judged;
- :mod:`~retrieval_lib.collection.ours`: which collections our own ingest wrote, and advice that never tells a
  team to drop its own collection.
"""

from retrieval_lib.collection.infer import infer_roles, key_stats
from retrieval_lib.collection.inspect import Inspection, inspect_collection
from retrieval_lib.collection.ours import point_id_for, rebuild_advice, written_by_us
from retrieval_lib.collection.roles import DEFAULT_ROLES, ROLE_MEANINGS, ROLES, PayloadRoles, ReadStats
from retrieval_lib.collection.view import CollectionView, held_fields

__all__ = ["ROLES", "ROLE_MEANINGS", "PayloadRoles", "DEFAULT_ROLES", "ReadStats", "infer_roles", "key_stats",
           "CollectionView", "held_fields", "Inspection", "inspect_collection", "point_id_for", "written_by_us",
           "rebuild_advice"]
