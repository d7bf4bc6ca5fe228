# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
KERNEL := retrieval-lib

.PHONY: setup demo demo-http demo-chatbot test test-slow test-all test-sdk test-browser lint docs nbval nbval-portable lab sample bench bench-scale refresh clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (retrieval-lib)" >/dev/null
	@# ranx's numba functions compiled once into its cache (about 45 s), not by every process that first needs them
	$(PY) -c "from retrieval_lib.checks.statistics import compile_ranx; compile_ranx()"
	touch $(STAMP)

# Build (or bring up to date) the embedded sample collection; a no-op when nothing changed.
sample: setup
	$(PY) -m retrieval_lib ingest

# Our own collection, every gate; then a collection built the way a team's pipeline builds one (read-only here):
# inspect it, write its profile, draft a validation set from it (queries about that book), run every notebook on
# it. Its failed gates are findings (exit 1), not errors.
demo: sample
	$(PY) -m retrieval_lib run --params params/demo.yaml
	$(PY) scripts/foreign_ingest.py --collection foreign_book
	QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib inspect --write-profile outputs/profiles/foreign_book.yaml \
		--book retrieval_lib/sample_book/docs
	QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib draft --out outputs/drafts/foreign_book \
		--profile outputs/profiles/foreign_book.yaml
	$(PY) -m retrieval_lib run --params outputs/drafts/foreign_book/profile.yaml || test $$? -eq 1
	$(MAKE) --no-print-directory demo-chatbot

# The demo's third flow: a team's chatbot backend (scripts/team_chatbot.py: FastAPI over the foreign collection, its
# own schema, one common mistake) on a free 127.0.0.1 port, serving a COPY of .qdrant (local mode locks a folder to
# one process), validated through `retriever: kind http` ($(CHATBOT)/profile.yaml: it extends the profile drafted
# for the foreign collection and names only the endpoint and its body; `results` and `fields` are left out on purpose,
# inferred from the endpoint's first answer): notebook 15
# names the mistake, 05 runs the golden set through the chatbot. The chatbot is stopped on exit (trap); its start is
# awaited at most 120 s. Reports under outputs/chatbot/runs; failed gates are findings (exit 1), not errors.
CHATBOT := outputs/chatbot
demo-chatbot: sample
	$(PY) scripts/foreign_ingest.py --collection foreign_book
	test -f outputs/drafts/foreign_book/profile.yaml || { \
		QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib inspect --write-profile outputs/profiles/foreign_book.yaml && \
		QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib draft --out outputs/drafts/foreign_book \
			--profile outputs/profiles/foreign_book.yaml; }
	@set -e; rm -rf $(CHATBOT)/store $(CHATBOT)/port; mkdir -p $(CHATBOT); cp -r .qdrant $(CHATBOT)/store; \
	rm -f $(CHATBOT)/store/.lock; pid=; trap 'test -z "$$pid" || kill $$pid 2>/dev/null' EXIT; \
	$(PY) scripts/team_chatbot.py --path $(CHATBOT)/store --port-file $(CHATBOT)/port > $(CHATBOT)/chatbot.log 2>&1 & \
	pid=$$!; for i in $$(seq 120); do test -s $(CHATBOT)/port && break; kill -0 $$pid 2>/dev/null || break; sleep 1; done; \
	test -s $(CHATBOT)/port || { echo "the chatbot did not start (see $(CHATBOT)/chatbot.log)"; exit 2; }; \
	printf 'extends: outputs/drafts/foreign_book/profile.yaml\nprofile: team_chatbot\nretriever:\n  kind: http\n  url: http://127.0.0.1:%s/search\n  body: {query: "{query}", top_k: "{top_k}"}\n' \
		"$$(cat $(CHATBOT)/port)" > $(CHATBOT)/profile.yaml; \
	echo "== the team's chatbot at http://127.0.0.1:$$(cat $(CHATBOT)/port)/search, side by side with the collection"; \
	$(PY) -m retrieval_lib run --params $(CHATBOT)/profile.yaml --notebooks 15,05 --out $(CHATBOT)/runs || test $$? -eq 1

# The demo's foreign flow twice, on the embedded store and over HTTP with a read-only key (as a team on Qdrant
# Cloud runs it): a loopback Qdrant (tests/fakes/qdrant_rest.py, the real REST protocol on a free 127.0.0.1 port)
# serves a copy of the embedded store (QDRANT_PATH, default .qdrant), and is stopped on exit. Fails unless both
# runs give every gate the same verdict and no request was a write. Reports in outputs/demo-http/{local,http}; the
# server's request log beside them.
DEMO_HTTP := outputs/demo-http
FOREIGN_FLOW = QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib inspect --write-profile $$out/profile.yaml && \
	QDRANT_COLLECTION_NAME=foreign_book $(PY) -m retrieval_lib draft --out $$out/draft --profile $$out/profile.yaml && \
	{ $(PY) -m retrieval_lib run --params $$out/draft/profile.yaml --out $$out/runs -q || test $$? -eq 1; }
demo-http: sample
	$(PY) scripts/foreign_ingest.py --collection foreign_book --path "$${QDRANT_PATH:-.qdrant}"
	@set -e; rm -rf $(DEMO_HTTP); mkdir -p $(DEMO_HTTP); tmp=$$(mktemp -d); pid=; \
	trap 'test -z "$$pid" || kill $$pid 2>/dev/null; rm -rf "$$tmp"' EXIT; \
	out=$(DEMO_HTTP)/local; echo "== the foreign flow on the embedded store"; $(FOREIGN_FLOW) || exit 1; \
	cp -r "$${QDRANT_PATH:-.qdrant}" "$$tmp/store"; rm -f "$$tmp/store/.lock"; \
	export DEMO_HTTP_KEY=$$($(PY) -c 'import secrets; print(secrets.token_hex(16))'); \
	$(PY) tests/fakes/qdrant_rest.py --path "$$tmp/store" --url-file "$$tmp/url" --read-only-key-env DEMO_HTTP_KEY \
		--log-file $(DEMO_HTTP)/requests.jsonl & pid=$$!; \
	for i in $$(seq 60); do test -s "$$tmp/url" && break; sleep 0.5; done; test -s "$$tmp/url"; \
	export QDRANT_URL=$$(cat "$$tmp/url") QDRANT_API_KEY=$$DEMO_HTTP_KEY; \
	out=$(DEMO_HTTP)/http; echo "== the same flow over HTTP ($$QDRANT_URL, a read-only key)"; $(FOREIGN_FLOW) || exit 1; \
	$(PY) -c 'import json, glob, sys; \
	runs = [json.load(open(glob.glob(f"$(DEMO_HTTP)/{m}/runs/*/summary.json")[0])) for m in ("local", "http")]; \
	verdicts = [{g.get("id") or g["name"]: g["passed"] for g in r["gates"]} for r in runs]; \
	reqs = [json.loads(x) for x in open("$(DEMO_HTTP)/requests.jsonl")]; \
	writes = [r for r in reqs if r["write"]]; \
	total = sum(r["bytes_in"] + r["bytes_out"] for r in reqs); \
	print("over HTTP:", len(reqs), "requests,", total, "bytes,", len(writes), "writes"); \
	diff = sorted(k for k in verdicts[0].keys() | verdicts[1].keys() if verdicts[0].get(k, "-") != verdicts[1].get(k, "-")); \
	print("verdicts: local", runs[0]["passed"], "| http", runs[1]["passed"], "|", len(verdicts[0]), "gates,", \
	      "the same" if not diff else "DIFFERENT: " + ", ".join(diff)); \
	sys.exit(1 if diff or writes or runs[0]["passed"] != runs[1]["passed"] else 0)'

# Two tiers (docs/development.md, "Two tiers"): `make test` is every test but those marked slow, then nbval, the tier a
# change is tried against (its target: 8 minutes on a fresh 2-core clone); `make test-slow` is the end-to-end tier,
# which CI (.ci/run) runs after it; `make test-all` runs both.
# pytest-xdist runs the tests in parallel. The slow tier waits more (servers, timeouts, killed processes), so a worker
# beyond the cores keeps it busy (on 2 cores, 3 workers: 7 min 38 s against 8 min 11 s for 2, the whole suite, one
# clone, 2026-11-27); `make test`'s tier is CPU-bound and runs a worker a core (on 2 cores, two rounds back to back in
# both orders, 2026-11-28: 409 s and 412 s against 428 s and 430 s for 3). TEST_WORKERS / SLOW_WORKERS choose.
# The package is byte-compiled first: the suite starts hundreds of Python processes (the CLI, kernels, the
# service), and where PYTHONDONTWRITEBYTECODE is set none of them would keep its compiled modules. The suite's command
# line runs and notebook kernels, nbval's kernels here included (WARM_KERNEL=1), are forked from servers that imported
# torch and sentence-transformers once (tests/warm_cli.py, tests/warm_kernel.py); `make nbval` starts them cold. The
# slow tier hands its tests out 16 at most at a time, so every worker starts on a long one and none ends the run
# alone on one.
TEST_WORKERS ?= $(shell nproc)
SLOW_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# Every pytest process of the suite (each worker collects every module) rewrites the test modules' asserts: about
# 10 s of CPU a process when nothing is cached, which PYTHONDONTWRITEBYTECODE=1 would forbid pytest to keep
# (tests/**/__pycache__, ignored by git), so the suite's runs write it and later runs read it (`make test-slow`
# after `make test` in CI, a developer's next run). nbval's plugin is left out: it imports nbformat and jupyter_client (4 s of every
# process's start) for notebooks the suite never collects.
PYTEST = PYTHONDONTWRITEBYTECODE= $(PY) -m pytest tests -p no:nbval --dist loadgroup --maxschedchunk 16
test: sample
	$(PY) -m compileall -q retrieval_lib
	$(PYTEST) -n $(TEST_WORKERS) -m "not slow and not sdk_defaults"
	WARM_KERNEL=1 $(NBVAL)
	@echo "make test passed. The end-to-end tier (the tests marked slow) is 'make test-slow'; CI runs both."

test-slow: sample
	$(PY) -m compileall -q retrieval_lib
	$(PYTEST) -n $(SLOW_WORKERS) -m "slow and not sdk_defaults"

test-all: test test-slow

# Characterisation tests that wait on the SDKs' own default timeouts and backoff (seconds each);
# production always sets its own, so they stay out of the default run.
test-sdk: sample
	$(PY) -m pytest tests -p no:nbval -m sdk_defaults

# Notebook 13's review of drafted queries in a real browser (JupyterLab + headless Chromium), with a kernel
# restart; opt-in, not in `make test`. Needs: apt-get install -y chromium chromium-driver.
test-browser: sample
	$(PY) -m pytest tests/browser -m browser -p no:xdist -p no:nbval

# The stored notebook outputs, compared cell by cell (nbval), a notebook per worker on every core (each worker
# reads its own copy of the embedded store: notebooks/conftest.py).
NBVAL = $(PY) -m pytest --nbval notebooks --nbval-kernel-name $(KERNEL) --nbval-sanitize-with notebooks/sanitize.cfg \
	-p no:cacheprovider -n auto --dist loadfile
nbval: sample
	$(NBVAL)

# The same comparison under torch's other CPU kernels: stored outputs must not depend on the CPU's float path.
nbval-portable: sample
	ATEN_CPU_CAPABILITY=default $(MAKE) --no-print-directory nbval
	ATEN_CPU_CAPABILITY=avx2 $(MAKE) --no-print-directory nbval

# Lint and types: ruff over the whole project (package, tests, benchmarks, scripts and the notebooks users read),
# mypy over the package.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy retrieval_lib
	$(VENV)/bin/python scripts/long_modules.py

# The documentation site (docs/, mkdocs.yml) into site/; warnings (a broken link or anchor) are errors.
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

# JupyterLab with the project kernel, on this machine only (127.0.0.1), rooted at the project so params/ and
# outputs/ are one click away; it opens on notebooks/. Only the project's kernel is offered. Jupyter refuses to
# run as root unless told, which containers often are. It asks nothing of the internet at start: no "get notified
# about official Jupyter news?" prompt and no update check (the defaults are set in the venv's overrides.json;
# Settings > Notifications turns them on).
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
lab: setup
	@mkdir -p $(dir $(LAB_OVERRIDES))
	@test -f $(LAB_OVERRIDES) || echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $(LAB_OVERRIDES)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks \
		--KernelSpecManager.allowed_kernelspecs=$(KERNEL) --KernelSpecManager.ensure_native_kernel=False \
		--MappingKernelManager.default_kernel_name=$(KERNEL) \
		$(if $(filter 0,$(shell id -u)),--allow-root)

# Re-execute the notebooks in place to record new reference outputs for nbval
# (after an intended change in retrieval behaviour; review the diff before committing).
refresh: sample
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.kernel_name=$(KERNEL) \
		--ExecutePreprocessor.timeout=900 notebooks/[0-9][0-9]_*.ipynb

bench: sample
	$(PY) benchmarks/bench_search.py
	$(PY) benchmarks/bench_api.py
	$(PY) benchmarks/bench_api_concurrency.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_scans.py
	$(PY) benchmarks/bench_cohere_cost.py
	$(PY) benchmarks/bench_checks_scale.py
	$(PY) benchmarks/bench_inspect.py
	$(PY) benchmarks/bench_calibration.py physicalai
	$(PY) benchmarks/bench_languages.py

# The embedded engines at 100k points (builds take minutes; run it once).
bench-scale: setup
	$(PY) benchmarks/bench_scale.py --sizes 100000
	$(PY) benchmarks/bench_scans.py --sizes 100000
	$(PY) benchmarks/bench_checks_scale.py --points 100000
	$(PY) benchmarks/bench_inspect.py --sizes 100000
	$(PY) benchmarks/bench_draft.py --scale 100000

clean:
	rm -rf $(VENV) .qdrant
