"""`--weights` resolution: paths, known names, the cache, downloads and the random-init fallback.

Downloads go only to a local HTTP server on 127.0.0.1 started per test; by default the download URL
points at a closed local port, so no test can reach the real network.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from libreyolo.errors import ExitStatus, MissingFileError, UsageError
from libreyolo.workload.weights import (
    DEFAULT_WEIGHTS_URL,
    ResolvedWeights,
    known_name,
    resolve_weights,
    weights_url,
)

CHECKPOINT = b"PK\x03\x04" + bytes(range(256)) * 300  # zip magic, like torch.save output
TRUNCATE = "truncate"
SLOW = "slow"


class Server:
    """A tiny file server: `files` maps URL paths to bytes (or TRUNCATE / SLOW behaviours)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes | str] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                # The client may give up first (the timeout test).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._reply()

            def _reply(self) -> None:
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                if body == SLOW:
                    time.sleep(0.5)  # longer than the test's timeout
                    body = CHECKPOINT
                self.send_response(200)
                if body == TRUNCATE:  # promise more than is sent, then hang up
                    self.send_header("Content-Length", str(len(CHECKPOINT)))
                    self.end_headers()
                    self.wfile.write(CHECKPOINT[:1000])
                    return
                assert isinstance(body, bytes)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{{stem}}/resolve/main/{{name}}"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cwd and cache; downloads go to a closed local port unless a test says otherwise."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://127.0.0.1:9/{name}")
    return tmp_path / "cache"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    srv = Server()
    srv.thread.start()
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", srv.url())
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()
        srv.thread.join(timeout=5)


def test_existing_path_wins(server: Server, isolated: Path) -> None:
    Path("LibreYOLO9s.pt").write_bytes(b"local")
    server.files["/LibreYOLO9s/resolve/main/LibreYOLO9s.pt"] = CHECKPOINT
    got = resolve_weights("LibreYOLO9s.pt")
    assert got == ResolvedWeights("LibreYOLO9s.pt", Path("LibreYOLO9s.pt"), "yolo9", "s")
    assert server.requests == []


def test_any_existing_checkpoint_path_is_accepted(tmp_path: Path) -> None:
    mine = tmp_path / "runs" / "best.pt"
    mine.parent.mkdir()
    mine.write_bytes(b"x")
    got = resolve_weights(str(mine), size_hint="m")
    assert (got.path, got.family, got.size, got.random_init) == (mine, None, "m", False)


def test_download_lands_atomically_in_the_cache(server: Server, isolated: Path) -> None:
    server.files["/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"] = CHECKPOINT
    got = resolve_weights("LibreYOLO9t.pt")
    assert got.source == "download" and not got.random_init and got.warning is None
    assert got.path == isolated / "LibreYOLO9t.pt"
    assert got.path.read_bytes() == CHECKPOINT
    assert sorted(p.name for p in isolated.iterdir()) == ["LibreYOLO9t.pt"]  # no temp file left
    assert server.requests == ["/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"]


def test_cache_hit_avoids_the_network(server: Server, isolated: Path) -> None:
    isolated.mkdir()
    (isolated / "LibreYOLO9c.pt").write_bytes(CHECKPOINT)
    got = resolve_weights("libreyolo9C.pt")  # any case; canonicalised
    assert (got.path, got.source, got.size) == (isolated / "LibreYOLO9c.pt", "cache", "c")
    assert server.requests == []


def test_weights_folder_of_1_6_is_searched(server: Server) -> None:
    Path("weights").mkdir()
    Path("weights/LibreYOLO9m.pt").write_bytes(CHECKPOINT)
    got = resolve_weights("LibreYOLO9m.pt")
    assert got.path == Path("weights/LibreYOLO9m.pt") and server.requests == []


def test_404_falls_back_to_random_init_with_a_loud_warning(server: Server, isolated: Path) -> None:
    got = resolve_weights("LibreYOLO9t.pt")
    assert got.random_init and got.path is None and got.source == "random"
    assert (got.family, got.size) == ("yolo9", "t")
    assert got.warning is not None
    for needle in ("RANDOMLY INITIALISED", "404", "postprocess", "NOT representative", "real"):
        assert needle in got.warning
    assert server.requests == ["/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"]
    assert not isolated.exists() or not any(isolated.iterdir())


@pytest.mark.parametrize("body", [b"<html>login</html>", TRUNCATE])
def test_bad_or_cut_downloads_leave_nothing_behind(
    server: Server, isolated: Path, body: bytes | str
) -> None:
    server.files["/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"] = body
    got = resolve_weights("LibreYOLO9t.pt")
    assert got.random_init and got.warning is not None
    assert not any(isolated.iterdir())


def test_download_timeout_falls_back(server: Server, isolated: Path) -> None:
    server.files["/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"] = SLOW
    got = resolve_weights("LibreYOLO9t.pt", timeout=0.1)
    assert got.random_init and "timed out" in (got.warning or "")


def test_unreachable_server_and_disabled_downloads_fall_back() -> None:
    assert resolve_weights("LibreYOLO9s.pt").random_init  # closed port from the autouse fixture
    got = resolve_weights("LibreYOLO9s.pt", download=False)
    assert got.random_init and "disabled" in (got.warning or "")


@pytest.mark.parametrize("spec", ["yolov8n.pt", "LibreYOLO9x.pt", "LibreYOLO9t", "model.onnx"])
def test_unknown_names_are_usage_errors(spec: str, server: Server) -> None:
    with pytest.raises(MissingFileError) as err:
        resolve_weights(spec)
    assert spec in err.value.message and err.value.status == ExitStatus.USAGE
    assert "LibreYOLO9t.pt" in (err.value.hint or "")
    assert server.requests == []


def test_missing_path_is_not_treated_as_a_name(server: Server) -> None:
    with pytest.raises(MissingFileError):
        resolve_weights("checkpoints/LibreYOLO9t.pt")
    assert server.requests == []


def test_directory_empty_spec_and_size_conflict_are_usage_errors(tmp_path: Path) -> None:
    for spec, kwargs in ((str(tmp_path), {}), ("  ", {}), ("LibreYOLO9t.pt", {"size_hint": "s"})):
        with pytest.raises(UsageError) as err:
            resolve_weights(spec, **kwargs)
        assert err.value.status == ExitStatus.USAGE


def test_name_grammar_and_url_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    assert known_name("LIBREYOLO9S.PT") == ("LibreYOLO9s.pt", "yolo9", "s")
    assert known_name("libreyoloxN.pt") == ("LibreYOLOXn.pt", "yolox", "n")
    assert known_name("LibreYOLO9n.pt") is None and known_name("LibreYOLOXc.pt") is None
    assert known_name("LibreYOLO9E2Et.pt") is None
    assert known_name("dir/LibreYOLO9t.pt") is None
    monkeypatch.delenv("LIBREYOLO_WEIGHTS_URL")
    assert weights_url("LibreYOLO9t.pt") == (
        "https://huggingface.co/LibreYOLO/LibreYOLO9t/resolve/main/LibreYOLO9t.pt"
    )
    assert DEFAULT_WEIGHTS_URL.startswith("https://huggingface.co/LibreYOLO/")
    monkeypatch.setenv("LIBREYOLO_WEIGHTS_URL", "http://mirror.example/w/")
    assert weights_url("LibreYOLO9m.pt") == "http://mirror.example/w/LibreYOLO9m.pt"
