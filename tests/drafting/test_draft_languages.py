"""Drafting reads the book's own language: a small Spanish book, embedded with the real MiniLM model.

The shipped negatives are asked in Spanish, and neither they nor the English ones are taken for in-domain
questions: every kept negative scores below the median of the book's own drafted questions.
"""

from __future__ import annotations

import hashlib
import statistics

import pytest
from qdrant_client import models

from retrieval_lib.collection import CollectionView
from retrieval_lib.drafting import draft_collection
from retrieval_lib.drafting.negatives import load_negatives
from retrieval_lib.search import Retriever
from retrieval_lib.stores.qdrant import VectorStore

PAGES = {
    "cinematica/directa": ("Cinemática directa", [
        ("Introducción", "La cinemática directa calcula la posición del efector final de un brazo robótico a partir "
                         "de los ángulos de sus articulaciones. Para cada eslabón se define un sistema de "
                         "coordenadas y se encadenan las transformaciones homogéneas desde la base hasta la pinza."),
        ("Parámetros de Denavit-Hartenberg", "Los cuatro parámetros de Denavit-Hartenberg describen cada "
                         "articulación con la longitud del eslabón, la torsión, el desplazamiento y el ángulo. Con "
                         "ellos se construye la matriz de transformación de cada eslabón del manipulador.")]),
    "cinematica/inversa": ("Cinemática inversa", [
        ("El jacobiano del manipulador", "El jacobiano relaciona las velocidades de las articulaciones con la "
                         "velocidad del efector final. Cuando su determinante se anula, el brazo está en una "
                         "singularidad y pierde un grado de libertad en el espacio de trabajo."),
        ("Soluciones numéricas", "Cuando no existe una solución cerrada, la cinemática inversa se resuelve de "
                         "forma iterativa con el método de Newton o con mínimos cuadrados amortiguados, partiendo "
                         "de la configuración actual de las articulaciones del robot.")]),
    "sensores/lidar": ("Sensores lidar", [
        ("Nubes de puntos", "Un lidar mide la distancia a los objetos con pulsos de láser y devuelve una nube de "
                         "puntos en tres dimensiones. El robot filtra esos puntos, elimina el suelo y agrupa los "
                         "obstáculos para planificar una trayectoria segura por el pasillo."),
        ("Calibración extrínseca", "La calibración extrínseca estima la posición y la orientación del lidar "
                         "respecto a la base del robot, de modo que cada punto medido pueda expresarse en el mismo "
                         "sistema de coordenadas que la odometría de las ruedas.")]),
    "sensores/imu": ("Unidad de medición inercial", [
        ("Giroscopios y acelerómetros", "La unidad de medición inercial combina giroscopios y acelerómetros para "
                         "estimar la orientación del robot. La deriva del giroscopio se corrige con el vector de "
                         "gravedad que mide el acelerómetro cuando el robot está quieto."),
        ("Resumen", "El filtro de Kalman extendido fusiona la unidad inercial con la odometría de las ruedas y "
                         "con el lidar, y entrega una estimación de la pose del robot con su incertidumbre en cada "
                         "instante del recorrido por el laboratorio.")]),
}


@pytest.fixture(scope="module")
def spanish_book(embedder):
    rows = []
    for path, (title, sections) in PAGES.items():
        for i, (heading, body) in enumerate(sections):
            text = (f"# {title}\n\n" if i == 0 else "") + f"## {heading}\n\n{body}"
            rows.append({"text": text, "url": f"https://libro.example/docs/{path}", "title": title,
                         "chunk_index": i})
    store = VectorStore.in_memory()
    store.create_collection("libro", embedder.dimension)
    vectors = embedder.embed_documents([r["text"] for r in rows])
    store.upsert("libro", [models.PointStruct(id=hashlib.md5(f"{r['url']}:{r['chunk_index']}".encode()).hexdigest(),
                                              vector=v, payload=r) for r, v in zip(rows, vectors)])
    view = CollectionView(store)  # the mapping is inferred from the payloads, as for any team's collection
    return view, draft_collection(view, "libro", embedder, per_file=3)


def test_drafting_reads_the_spanish_book_in_spanish(spanish_book):
    _, d = spanish_book
    assert d.language.code == "es" and d.negatives_language == "es"
    queries = {k.query for k in d.known}
    assert {"Parámetros de Denavit-Hartenberg", "Nubes de puntos", "Calibración extrínseca"} <= queries
    assert "Cinemática directa: Introducción" in queries and "Introducción" not in queries
    assert "Unidad de medición inercial: Resumen" in queries
    assert all(n.query.startswith("¿") or n.language == "es" for n in d.negatives)
    assert {(t.topic, t.expected_prefix) for t in d.topics} == {("cinematica", "docs/cinematica/"),
                                                               ("sensores", "docs/sensores/")}


def test_no_shipped_negative_is_taken_for_in_domain_in_either_language(spanish_book, embedder):
    view, d = spanish_book
    assert d.median is not None and d.kept_negatives
    assert all(n.best_score < d.median for n in d.kept_negatives)
    english, _ = load_negatives("en")
    responses = Retriever(view, embedder, "libro").search_many([n.query for n in english], top_k=1)
    best_english = [r.results[0].similarity_score for r in responses]
    assert max(best_english) < statistics.median(d.top1.values()), "an English negative scored like the book"
