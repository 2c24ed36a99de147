"""A study notebook runs where users run it: in a kernel that a real Jupyter
server started (what `make lab` serves), driven through the server's REST and
websocket API, not through papermill.

The server listens on 127.0.0.1 on a free port with a token; the notebook's
cells are sent one by one as execute requests on the kernel's channels, after
its parameters cell an override cell pointing it at the forest fixture; the
figure files it writes are checked. The server is stopped by its pid.
`make lab` is checked too: the URL it prints is where its server answers."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from notebook_checks import load_fixtures

REPO = Path(__file__).resolve().parents[1]
STUDY = "forest"
START_TIMEOUT_S = 60
CELL_TIMEOUT_S = 120

tornado_websocket = pytest.importorskip("tornado.websocket")
tornado_httpclient = pytest.importorskip("tornado.httpclient")
pytest.importorskip("jupyter_server")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base: str, token: str, path: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read().decode()
    return json.loads(text) if text else {}


@pytest.fixture
def server(tmp_path, request):
    """`jupyter server` on 127.0.0.1:<free port> with a token, rooted at the
    repository (the kernel's working directory is notebooks/, as under
    JupyterLab); stopped by its pid when the test ends."""
    port, token = free_port(), secrets.token_hex(16)
    log = (tmp_path / "server.log").open("w")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--port-retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={REPO}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )

    def stop():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()

    request.addfinalizer(stop)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"jupyter server exited with {proc.returncode}:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
        try:
            api(base, token, "/api/status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter server not up in {START_TIMEOUT_S} s:\n{(tmp_path / 'server.log').read_text()[-3000:]}")
            time.sleep(0.3)
    return {"base": base, "port": port, "token": token, "proc": proc}


def message(session: str, code: str) -> dict:
    msg_id = uuid.uuid4().hex
    return {
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                   "version": "5.3", "date": dt.datetime.now(dt.timezone.utc).isoformat()},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }


async def run_cells(ws_url: str, token: str, cells: list[str]) -> list[str]:
    """Execute each cell in the kernel over its websocket; the stream output.
    A cell that raises fails the test with its traceback."""
    req = tornado_httpclient.HTTPRequest(ws_url, headers={"Authorization": f"token {token}"})
    conn = await tornado_websocket.websocket_connect(req)
    session, out = uuid.uuid4().hex, []
    try:
        for code in cells:
            msg = message(session, code)
            await conn.write_message(json.dumps(msg))
            mid = msg["header"]["msg_id"]
            while True:
                raw = await asyncio.wait_for(conn.read_message(), CELL_TIMEOUT_S)
                assert raw is not None, "the kernel's websocket closed"
                reply = json.loads(raw)
                if reply.get("parent_header", {}).get("msg_id") != mid:
                    continue
                kind = reply["msg_type"]
                if kind == "stream":
                    out.append(reply["content"]["text"])
                elif kind == "error":
                    pytest.fail("cell failed in the server's kernel:\n" + code[:500] + "\n"
                                + "\n".join(reply["content"]["traceback"])[-3000:])
                elif kind == "execute_reply" and reply.get("channel") == "shell":
                    assert reply["content"]["status"] == "ok", reply["content"]
                    break
    finally:
        conn.close()
    return out


def test_notebook_runs_in_a_kernel_the_server_started(server, tmp_path):
    fixtures = load_fixtures("fixtures")
    files = fixtures.make(tmp_path / "input")
    out_dir = tmp_path / "results"
    base, token = server["base"], server["token"]

    # The server answers only with its token.
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(f"{base}/api/kernels", timeout=10)
    assert denied.value.code in (401, 403)

    # The notebook as the server sees it (its contents API), then a kernel
    # started through the server's API in notebooks/.
    nb = api(base, token, f"/api/contents/notebooks/{STUDY}.ipynb")["content"]
    kernel = api(base, token, "/api/kernels", "POST", {"name": "python3", "path": "notebooks"})
    assert kernel["id"] in {k["id"] for k in api(base, token, "/api/kernels")}

    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cells.append(src)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cells.append(f"data = {str(files[STUDY])!r}\nout_dir = {str(out_dir)!r}\nformats = ['svg', 'png']\n"
                         "n_resamples = 1000\nimport os\nprint('cwd', os.getcwd())\n")
    ws = f"ws://127.0.0.1:{server['port']}/api/kernels/{kernel['id']}/channels"
    out = asyncio.run(run_cells(ws, token, cells))
    assert f"cwd {REPO / 'notebooks'}" in "".join(out)

    from boatload.studies import registry

    for name in registry()[STUDY].figures:
        for ext in ("svg", "png"):
            path = out_dir / "figures" / f"{STUDY}-{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 1000, path
    assert (out_dir / "tables" / f"{STUDY}-summary.json").is_file()

    api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")
    assert kernel["id"] not in {k["id"] for k in api(base, token, "/api/kernels")}


def test_make_lab_prints_the_url_it_serves(tmp_path):
    """`make lab` says where to point the browser, and the server is there:
    the URL's token opens its API, and the notebook it names is in its tree."""
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(["make", "--no-print-directory", "-C", str(REPO), "lab", f"LAB_PORT={port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        url = None
        deadline = time.monotonic() + START_TIMEOUT_S
        seen = []
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("boatload: JupyterLab at "):
                url = line.split(" at ", 1)[1].strip()
        assert url, "".join(seen)[-3000:]
        found = re.fullmatch(rf"http://127\.0\.0\.1:{port}/lab/tree/(\w+)\.ipynb\?token=([0-9a-f]{{32}})", url)
        assert found, url
        assert (REPO / "notebooks" / f"{found.group(1)}.ipynb").is_file()
        base, token = f"http://127.0.0.1:{port}", found.group(2)
        while True:
            try:
                api(base, token, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                assert proc.poll() is None and time.monotonic() < deadline, "".join(seen)[-3000:]
                time.sleep(0.3)
        listing = api(base, token, "/api/contents")
        assert f"{found.group(1)}.ipynb" in {c["name"] for c in listing["content"]}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # make and the server it exec'd: the group this test started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
