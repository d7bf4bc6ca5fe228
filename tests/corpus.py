"""Test data shared by many modules: a 13-doc book, its payloads, and the sample-book collection name.

A "doc" is a small dict (id, source_file, route, title, section_title, content, and optionally
chunk_sequence, total_chunks); :func:`make_payload` turns it into the full payload ingest writes
(seed 000 FR-007), and :func:`fill_collection` embeds and upserts a list of docs. The session
fixtures over these (``book_docs``, ``payload_for``, ``fill``, ``book``) live in ``conftest.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BOOK", "DOCS", "SAMPLE_COLLECTION", "STAMP", "Book", "fill_collection", "make_payload"]

#: The tests folder and its fixtures (the test modules live one or two folders below it).
TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"

BOOK = "https://book.example"
STAMP = "2025-01-15T10:00:00+00:00"
#: The collection the session-wide ``book`` fixture builds from the shipped sample book.
SAMPLE_COLLECTION = "sample_book"

# Distinct topics, spread over modules; source_url slugs deliberately differ from file names.
LONG_URDF = (
    "URDF, the Unified Robot Description Format, is an XML format that describes a robot's links and joints, "
    "their visual and collision geometry and their inertia. "
    + " ".join(f"Joint {i} connects link {i} to link {i + 1} with a revolute axis and effort limits."
               for i in range(40))
)
DOCS: list[dict[str, Any]] = [
    dict(id=1, source_file="module-01-ros2/01-ros2-overview.md", route="module-01-ros2/what-is-ros2",
         title="ROS 2 Overview", section_title="What is ROS 2",
         content="ROS 2, the Robot Operating System, is middleware where nodes exchange messages over topics, "
                 "services and actions."),
    dict(id=2, source_file="module-01-ros2/03-nodes-topics-services.md", route="module-01-ros2/nodes-topics",
         title="Nodes, Topics and Services", section_title="Publishers and subscribers",
         content="A ROS 2 publisher sends messages on a topic and subscriber callbacks receive them."),
    dict(id=3, source_file="module-01-ros2/05-launch-files.md", route="module-01-ros2/launch",
         title="Launch Files", section_title="Launch files",
         content="Python launch files start several ROS 2 nodes at once and set their parameters."),
    dict(id=4, source_file="module-01-ros2/05-launch-files.md", route="module-01-ros2/launch",
         title="Launch Files", section_title="Launch files: advanced",
         content="Advanced launch descriptions use conditions and substitutions to include other launch files."),
    dict(id=5, source_file="module-02-simulation/01-gazebo-basics.md", route="module-02-simulation/gazebo",
         title="Gazebo Basics", section_title="Gazebo",
         content="Gazebo is a 3D physics simulator used to test robots in virtual worlds before real hardware."),
    dict(id=6, source_file="module-02-simulation/02-urdf.md", route="module-02-simulation/robot-description",
         title="Describing Robots", section_title="URDF", content=LONG_URDF),
    dict(id=7, source_file="module-02-simulation/03-sensors.md", route="module-02-simulation/sensors",
         title="Simulated Sensors", section_title="Lidar",
         content="A simulated lidar sensor publishes point clouds of the surrounding scene."),
    dict(id=8, source_file="module-03-isaac/01-isaac-sim.md", route="module-03-isaac/isaac-sim",
         title="Isaac Sim", section_title="Isaac Sim",
         content="NVIDIA Isaac Sim renders photorealistic scenes on RTX GPUs to generate synthetic training data."),
    dict(id=9, source_file="module-03-isaac/02-nav2.md", route="module-03-isaac/navigation",
         title="Navigation", section_title="Nav2",
         content="The Nav2 stack plans paths and avoids obstacles for mobile robots."),
    dict(id=10, source_file="module-04-vla/01-vla-models.md", route="module-04-vla/vla-models",
         title="VLA Models", section_title="Vision-language-action models",
         content="Vision-language-action models map camera images and spoken instructions to robot motor commands."),
    dict(id=11, source_file="appendices/b-hardware-reference.md", route="appendices/hardware",
         title="Hardware Reference", section_title="Batteries",
         content="Lithium-ion battery packs power the humanoid robot for about two hours of walking."),
    dict(id=12, source_file="appendices/e-recipes.md", route="appendices/recipes",
         title="Recipes", section_title="Pizza",
         content="Neapolitan pizza dough needs flour, water, salt and yeast, baked in a wood-fired oven."),
    dict(id=13, source_file="introduction/01-what-is-physical-ai.md", route="introduction/physical-ai",
         title="What is Physical AI", section_title="Embodiment",
         content="Physical AI is intelligence embodied in machines that sense and act in the real world."),
]


def make_payload(doc: dict[str, Any], model_version: str, **overrides: Any) -> dict[str, Any]:
    """The full chunk payload for ``doc``, as ingest writes it.

    Args:
        doc: One entry shaped like those in :data:`DOCS`.
        model_version: The embedding model recorded in the payload.
        **overrides: Payload fields to replace (or add) after the defaults.

    Returns:
        A new payload dict.
    """
    content = doc["content"]
    payload = {
        "chunk_id": f"{doc['source_file']}#{doc.get('chunk_sequence', 0)}",
        "source_file": doc["source_file"],
        "source_url": f"{BOOK}/docs/{doc['route']}",
        "title": doc["title"],
        "section_title": doc["section_title"],
        "content": content,
        "content_hash": hashlib.sha256(content.encode("utf-8")).hexdigest(),
        "chunk_sequence": doc.get("chunk_sequence", 0),
        "total_chunks": doc.get("total_chunks", 1),
        "processing_timestamp": STAMP,
        "token_count": len(content.split()),
        "model_version": model_version,
    }
    payload.update(overrides)
    return payload


def fill_collection(store, collection: str, embedder, docs: Sequence[dict[str, Any]] = DOCS,
                    model_version: str | None = None) -> None:
    """Create ``collection`` in ``store`` and upsert ``docs`` embedded with ``embedder``.

    Args:
        store: A ``retrieval_lib.VectorStore``.
        collection: Name of the collection to create.
        embedder: Any ``Embedder``; its ``dimension`` sizes the collection.
        docs: The docs to embed (their ``id`` becomes the point id).
        model_version: Recorded in each payload; defaults to ``embedder.model``.
    """
    from qdrant_client import models

    store.create_collection(collection, embedder.dimension)
    vectors = embedder.embed_documents([d["content"] for d in docs])
    store.upsert(collection, [
        models.PointStruct(id=d["id"], vector=v, payload=make_payload(d, model_version or embedder.model))
        for d, v in zip(docs, vectors)
    ])


@dataclass
class Book:
    """The sample book ingested with the real MiniLM embedder into a temporary embedded store."""

    store: Any
    folder: Any
    summary: Any
    points: list[Any]

    def by_file(self) -> dict[str, list[dict[str, Any]]]:
        """Payloads grouped by ``source_file``, in scroll order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for p in self.points:
            out.setdefault(p.payload["source_file"], []).append(p.payload)
        return out
