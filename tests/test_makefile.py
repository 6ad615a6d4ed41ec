"""The Makefile's choices (issue 23 items 12-13): PyTorch's CPU build when its index answers, pip's
default otherwise, in seconds; the dashboard local unless asked, with a warning when exposed."""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "--no-print-directory", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server interface
        found = self.path.rstrip("/").endswith("/whl/cpu/torch")
        self.send_response(200 if found else 404)
        self.end_headers()
        self.wfile.write(b"<a href='torch-2.13.0+cpu.whl'>torch</a>" if found else b"")

    def log_message(self, *args):
        pass


@pytest.fixture()
def cpu_index():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()


def test_the_cpu_index_is_used_when_it_answers(cpu_index):
    assert make("torch-index", f"TORCH_INDEX={cpu_index}").stdout.strip() == cpu_index
    dry = make("-n", "setup", "VENV=/nonexistent/venv", f"TORCH_INDEX={cpu_index}").stdout
    assert f'index="{cpu_index}"' in dry and '--index-url "$index" torch==2.13.0' in dry


def test_an_unreachable_or_empty_index_falls_back_to_pips_default_quickly():
    start = time.monotonic()
    closed = f"http://127.0.0.1:{free_port()}/whl/cpu"
    assert make("torch-index", f"TORCH_INDEX={closed}").stdout.strip() == ""
    assert make("torch-index", "TORCH_INDEX=").stdout.strip() == ""
    assert time.monotonic() - start < 30  # a refused connection: no five-minute pip timeout
    dry = make("-n", "setup", "VENV=/nonexistent/venv", f"TORCH_INDEX={closed}").stdout
    assert 'index=""' in dry and "did not answer" in dry
    assert "-r requirements.txt -r requirements-dev.txt" in dry


def test_the_dashboard_is_local_unless_asked_and_warns_when_exposed():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert make("address-check").stderr == ""
    assert "WARNING" in make("address-check", "ADDRESS=0.0.0.0").stderr
    dry = make("-n", "run", "VENV=/nonexistent/venv", "TORCH_INDEX=").stdout
    assert "streamlit run app.py --server.address 127.0.0.1" in dry
