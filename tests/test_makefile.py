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


def test_make_test_hands_the_workers_the_files_in_collection_order(tmp_path):
    """``tests/conftest.py`` puts the longest files first so the two workers finish together;
    pytest-xdist 3.8 reorders files by their number of tests unless told not to, and ran the
    long Ray, golden and dev files last while the other worker sat idle (188 s of a CI run).
    ``make test``'s own options, on a suite whose one-test file is collected first: it runs first."""
    import os
    import sys

    line = next(x for x in make("-n", "test", "TEST_WORKERS=1").stdout.splitlines() if " -m pytest" in x)
    options = line.split(" -m pytest", 1)[1].split()
    (tmp_path / "test_many.py").write_text("".join(f"def test_{i}():\n    pass\n" for i in range(5)))
    (tmp_path / "test_long.py").write_text("def test_long():\n    pass\n")
    (tmp_path / "conftest.py").write_text(
        "def pytest_collection_modifyitems(items):\n"
        "    items.sort(key=lambda item: item.path.name != 'test_long.py')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    run = subprocess.run([sys.executable, "-m", "pytest", *options, "-v", "-p", "no:cacheprovider",
                          "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    started = [x.split()[-1] for x in run.stdout.splitlines() if x.startswith("[gw0]") and "PASSED" in x]
    assert len(started) == 6 and started[0].endswith("test_long.py::test_long"), started
