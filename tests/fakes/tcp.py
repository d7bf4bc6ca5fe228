"""Raw TCP helpers for failure-mode tests (127.0.0.1 only).

* :class:`BlackholeServer` accepts TCP connections and never reads or answers:
  a client's connect succeeds, then its read times out. With qdrant-client 1.20
  this gives ``qdrant_client.http.exceptions.ResponseHandlingException`` whose
  ``.source`` is ``httpx.ReadTimeout``; with the cohere SDK, ``httpx.ReadTimeout``
  itself (never retried by the SDK).
* :func:`closed_port` returns a port with nothing listening: connects are refused
  at once (``httpx.ConnectError``; qdrant-client wraps it in
  ``ResponseHandlingException``).
"""

from __future__ import annotations

import socket
import threading

__all__ = ["BlackholeServer", "closed_port"]

_HOST = "127.0.0.1"


class BlackholeServer:
    """Context manager: listen on 127.0.0.1:0, accept connections, never read or reply.

    ``with BlackholeServer() as bh: bh.port, bh.url``. Every accepted socket is
    closed on exit, which wakes any client still waiting on it.
    """

    def __init__(self) -> None:
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.port: int = 0
        self.url: str = ""

    @property
    def connections(self) -> int:
        """How many connections have been accepted so far."""
        with self._lock:
            return len(self._conns)

    def __enter__(self) -> BlackholeServer:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((_HOST, 0))
        listener.listen(128)
        listener.settimeout(0.05)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self.url = f"http://{_HOST}:{self.port}"
        self._thread = threading.Thread(target=self._accept_loop, name=f"blackhole-{self.port}", daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if self._stop.is_set():
                    conn.close()
                    return
                self._conns.append(conn)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def __exit__(self, *exc: object) -> None:
        self.close()


def closed_port() -> int:
    """A 127.0.0.1 port with nothing listening (bound to 0, then closed).

    There is a tiny race (another process could take the port); in practice the
    kernel does not hand the same ephemeral port out again straight away.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((_HOST, 0))
        return s.getsockname()[1]
