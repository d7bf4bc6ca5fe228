"""``kind: http``: a team's search endpoint, asked over httpx one question at a time.

The body is a JSON template whose strings ``"{query}"`` and ``"{top_k}"`` are replaced (``"{top_k}"`` alone
becomes a number); GET sends the template's keys as the query string. Header values may hold ``${ENV_NAME}``:
expanded for each request, never stored, printed or logged, and redacted from any error text.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from retrieval_lib.config import read_variables
from retrieval_lib.retrievers.base import MappedRetriever, _Failed
from retrieval_lib.retrievers.spec import RetrieverSpec, env_references, expand, one_line

__all__ = ["HttpRetriever", "fill_template", "DEFAULT_BODY"]

#: The body sent when the spec gives none.
DEFAULT_BODY: dict[str, Any] = {"query": "{query}", "top_k": "{top_k}"}


def fill_template(template: Any, query: str, top_k: int) -> Any:
    """``template`` with ``"{query}"`` and ``"{top_k}"`` replaced; a string that is exactly ``"{top_k}"`` becomes
    the number, one that holds it elsewhere gets its digits."""
    if isinstance(template, str):
        if template == "{top_k}":
            return top_k
        return template.replace("{query}", query).replace("{top_k}", str(top_k))
    if isinstance(template, dict):
        return {k: fill_template(v, query, top_k) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, query, top_k) for v in template]
    return template


class HttpRetriever(MappedRetriever):
    """A team's HTTP endpoint (see the module docstring). One connection pool, reused for every question."""

    kind = "http"

    def __init__(self, spec: RetrieverSpec, *, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(spec)
        # the variables the headers' ``${NAME}`` references name, read once (the .env, the environment over it);
        # no other variable is kept
        every = read_variables()
        self._variables = {n: every[n] for v in spec.headers.values() for n in env_references(v) if n in every}
        for name, value in spec.headers.items():  # a variable set nowhere stops here, before any question
            expand(value, self._variables, where=f"the retriever's header {name}")
        self._client = httpx.Client(timeout=spec.timeout_s, transport=transport, follow_redirects=True,
                                    trust_env=False, event_hooks={"request": [self._headers_stay_home]})

    def describe(self) -> str:
        # the URL as written in the profile: ${ENV} references unexpanded, never a value
        return f"http {self.spec.method} {self.spec.url}"

    def close(self) -> None:
        self._client.close()

    def _headers_stay_home(self, request: httpx.Request) -> None:
        """A redirect to another host or port carries none of the spec's headers (httpx drops only Authorization:
        an ``X-API-Key`` would follow the answer anywhere); http -> https on the same host keeps them."""
        home = httpx.URL(str(self.spec.url))
        if (request.url.host, request.url.port) != (home.host, home.port):
            for name in self.spec.headers:
                request.headers.pop(name, None)

    def _request(self, query: str, top_k: int) -> httpx.Request:
        url, secrets = str(self.spec.url), []  # the url holds no ${ENV} (refused by the spec)
        headers = {}
        for name, value in self.spec.headers.items():
            headers[name], used = expand(value, self._variables, where=f"the retriever's header {name}")
            secrets += used
        self._secrets = sorted(set(self._secrets) | set(secrets))
        body = fill_template(self.spec.body if self.spec.body is not None else DEFAULT_BODY, query, top_k)
        if self.spec.method == "GET":
            params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
            return self._client.build_request("GET", url, params=params, headers=headers)
        return self._client.build_request("POST", url, json=body, headers=headers)

    def _call(self, query: str, top_k: int) -> Any:
        try:
            response = self._client.send(self._request(query, top_k))
        except httpx.TimeoutException:
            raise _Failed("timeout", f"no answer within {self.spec.timeout_s:g} s from {self.describe()}") from None
        except httpx.ConnectError as err:
            raise _Failed("unreachable", f"{self.describe()}: {one_line(str(err)) or 'connection refused'}") from None
        except httpx.HTTPError as err:
            raise _Failed("unreachable", f"{self.describe()}: {type(err).__name__}: {one_line(str(err))}") from None
        if response.status_code >= 400:
            raise _Failed(f"http {response.status_code}", f"{self.describe()} answered {response.status_code}: "
                          + (one_line(response.text, 200) or response.reason_phrase))
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            raise _Failed("not json", f"{self.describe()} answered {kind}, not JSON: "
                          + (one_line(response.text, 120) or "an empty body")) from None
