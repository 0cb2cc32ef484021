"""Headless Chromium for the tests that look at a page as a person would.

Every request the browser makes, to any host, is sent to a recording proxy on
127.0.0.1 that answers 403 and writes down what was asked: a test can then say
"no request left the machine" from what was seen, not from what was hoped.
Host names resolve to nothing besides, so even a request that slipped past the
proxy could not reach anywhere. Skips, saying why, where chromium is absent.
"""

from __future__ import annotations

import shutil
import socketserver
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from unavailable import unavailable

__all__ = ["Browser", "chromium", "page_requests"]

# Chromium's own housekeeping, which asks these exact hosts whatever the page is
# (seen on Debian's chromium 156 with every flag below); the proxy still answers
# them on loopback. Whole hosts, not domains: a page loading fonts.googleapis.com
# must count.
_BROWSER_HOSTS = {
    "accounts.google.com",
    "clients2.google.com",
    "update.googleapis.com",
    "optimizationguide-pa.googleapis.com",
}


class _Recorder(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.requests: list[str] = []


class _RecordingHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").strip()
        if line:
            assert isinstance(self.server, _Recorder)
            self.server.requests.append(line)
        self.wfile.write(
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


@dataclass
class Browser:
    """One Chromium binary, a throwaway profile, and the proxy that records requests."""

    binary: str
    profile: Path
    proxy: _Recorder
    requests: list[str] = field(default_factory=list)

    def run(self, url: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        """Run chromium headless on url with extra args (--dump-dom, --screenshot=...)."""
        port = self.proxy.server_address[1]
        command: Sequence[str] = [
            self.binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-domain-reliability",
            "--no-pings",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate",
            "--hide-scrollbars",
            f"--proxy-server=http://127.0.0.1:{port}",
            "--proxy-bypass-list=<-loopback>",  # loopback goes through the proxy too
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--user-data-dir={self.profile}",
            *args,
            url,
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        self.requests = list(self.proxy.requests)
        if result.returncode != 0:
            raise AssertionError(f"chromium exited {result.returncode}: {result.stderr[-2000:]}")
        return result


def _host(request_line: str) -> str:
    """The host of `GET http://h/p HTTP/1.1` or `CONNECT h:443 HTTP/1.1`."""
    target = request_line.split(" ")[1] if " " in request_line else request_line
    target = target.split("://", 1)[-1]
    return target.split("/", 1)[0].rsplit(":", 1)[0]


def page_requests(requests: Sequence[str]) -> list[str]:
    """The recorded requests that are not Chromium's own housekeeping."""
    return [r for r in requests if _host(r) not in _BROWSER_HOSTS]


@contextmanager
def chromium(tmp_path: Path) -> Iterator[Browser]:
    """A Browser for this test, or skip with the reason when chromium is not installed."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        unavailable("chromium is not installed (Debian package chromium; .ci/run installs it)")
    recorder = _Recorder()
    thread = threading.Thread(target=recorder.serve_forever, daemon=True)
    thread.start()
    try:
        yield Browser(binary, tmp_path / "chromium-profile", recorder)
    finally:
        recorder.shutdown()
        recorder.server_close()
