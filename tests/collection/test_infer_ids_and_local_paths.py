"""Two keys that looked like sources and were not (the mapping is inferred from a sample of payloads).

- Team #10 writes ``source`` = the file name only and ``full_path`` = the file's path on the ingest machine
  (``/home/dev/.../docs/module-01-ros2/05-launch-files.md``). The absolute path was read as the page's URL (it starts
  with ``/``), and the bare file name as the source: two pages of one name became one page.
- Team #12 writes ``document_id`` = a uuid per page beside the page's ``url``. The uuid was read as the source file,
  so every per-source table named pages by uuid.
"""

from __future__ import annotations

import uuid

from retrieval_lib.collection.infer import infer_roles

PAGES = [("module-01-ros2", "05-launch-files.md"), ("module-02-simulation", "05-launch-files.md"),
         ("module-01-ros2", "03-urdf.md"), ("appendices", "a-glossary.md")]


def test_an_absolute_file_path_is_the_source_file_not_a_url():
    payloads = [{"text": f"chunk {i} of {name}, long enough to be the text", "source": name,
                 "full_path": f"/home/dev/Physical-AI-Textbook/docs/{folder}/{name}", "category": folder,
                 "chunk_index": i}
                for folder, name in PAGES for i in range(3)]
    roles = infer_roles(payloads)
    assert not roles.has("source_url")
    assert roles.fields["source_file"][0] == "full_path"  # it tells the two 05-launch-files.md apart
    row = roles.read(payloads[3], "p3")
    assert row["source_file"] == "/home/dev/Physical-AI-Textbook/docs/module-02-simulation/05-launch-files.md"


def test_a_pages_uuid_beside_its_url_is_not_the_source_file():
    ids = {page: str(uuid.uuid4()) for page in PAGES}
    payloads = [{"document_id": ids[(folder, name)], "content": f"chunk {i} of {name}, long enough to be the text",
                 "url": f"https://site.example/docs/{folder}/{name.removesuffix('.md')[3:]}", "title": name,
                 "created_at": "2026-01-01T00:00:00", "chunk_index": i}
                for folder, name in PAGES for i in range(3)]
    roles = infer_roles(payloads)
    assert roles.fields["source_url"] == ("url",)
    assert "source_file" not in roles.fields and roles.derive_source_file  # from the URL's path
    assert "document_id" in roles.evidence["_rejected"]
    assert roles.read(payloads[0], "p0")["source_file"].endswith("module-01-ros2/launch-files")
    # without URLs, a page's uuid is all that names its source: it stays the source
    bare = [{k: v for k, v in p.items() if k != "url"} for p in payloads]
    assert infer_roles(bare).fields["source_file"] == ("document_id",)


def test_a_key_with_a_few_values_over_many_pages_is_a_section_not_the_title():
    # team #3: `source` = "module/page", `module` = the folder (5 values over the book's pages), `page` = the page
    pages = [(f"module-{m:02d}", f"{p:02d}-page-{m}-{p}") for m in range(1, 6) for p in range(1, 5)]
    payloads = [{"text": f"chunk {i} of {page}, long enough to be the chunk's text", "source": f"{module}/{page}",
                 "module": module, "page": page} for module, page in pages for i in range(2)]
    roles = infer_roles(payloads)
    assert roles.fields["source_file"] == ("source",)
    assert roles.fields["title"] == ("page",)
    assert "`module` holds 5 values over 20 sources" in roles.evidence["_rejected"]
    # a title per page, as most pipelines write it, stays the title
    titled = [{**p, "title": p["page"].upper()} for p in payloads]
    assert infer_roles(titled).fields["title"] == ("title",)


def test_bare_file_names_beside_urls_give_way_to_the_urls_paths():
    # team #2: metadata.file_name = "05-launch-files.md" (no folder) beside page_url, which keeps the folders
    payloads = [{"content": f"chunk {i} of {name}, long enough to be the chunk's text",
                 "page_url": f"https://z.github.io/Book/docs/{folder}/{name.removesuffix('.md')[3:]}",
                 "metadata": {"file_name": name, "word_count": 100 + i}}
                for folder, name in PAGES for i in range(3)]
    roles = infer_roles(payloads)
    assert roles.fields["source_url"] == ("page_url",) and "source_file" not in roles.fields
    assert roles.derive_source_file and "bare file names" in roles.evidence["_rejected"]
    first, second = (roles.read(payloads[i], f"p{i}")["source_file"] for i in (0, 3))
    assert first != second and first.endswith("module-01-ros2/launch-files")  # the two 05-launch-files pages
    # without URLs the file names are all there is: they stay the source
    bare = [{k: v for k, v in p.items() if k != "page_url"} for p in payloads]
    assert infer_roles(bare).fields["source_file"] == ("metadata.file_name",)
