"""A study notebook runs where users run it: in a kernel of the JupyterLab
server `make lab` starts, driven through the server's REST and websocket API,
not through papermill.

`make lab LAB_PORT=<free port>` must print the URL to open; the server must
answer there, on 127.0.0.1, only with the URL's token. Through its API the
test reads the notebook, starts a kernel (its working directory notebooks/,
as for a user), sends the notebook's cells one by one as execute requests on
the kernel's channels (after the parameters cell, an override pointing it at
the forest fixture) and checks the figure files it writes. The server (and
the make that exec'd it) is stopped by its pid when the test ends."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import socket
import subprocess
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
# tiny cells that each print one line: enough to catch a lost output
PRINT_CELLS = 200

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
def lab(tmp_path, request):
    """`make lab` on a free port: its URL, port and token once its server answers;
    stopped by its pid (make exec's jupyter lab, so the pid is the server's) at the end."""
    port = free_port()
    log = tmp_path / "lab.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    # -o env: the environment is the one this test runs in; never sync it from here
    proc = subprocess.Popen(["make", "--no-print-directory", "-o", "env", "-C", str(REPO), "lab", f"LAB_PORT={port}"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def stop():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this test started: make, then the server it exec'd
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    request.addfinalizer(stop)
    deadline = time.monotonic() + START_TIMEOUT_S
    url = None
    while url is None:
        found = re.search(r"^boatload: JupyterLab at (\S+)$", log.read_text(), re.M)
        if found:
            url = found.group(1)
            break
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    shape = re.fullmatch(rf"http://127\.0\.0\.1:{port}/lab/tree/(\w+)\.ipynb\?token=([0-9a-f]{{32}})", url)
    assert shape, url
    base, token = f"http://127.0.0.1:{port}", shape.group(2)
    while True:
        try:
            api(base, token, "/api/status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
    return {"url": url, "base": base, "port": port, "token": token, "notebook": shape.group(1) + ".ipynb"}


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
    A cell that raises fails the test with its traceback.

    A cell is finished when both its execute_reply (shell channel) and the
    kernel's `idle` status for it (iopub) have arrived. The reply alone is not
    enough: stream output travels on iopub, and the server forwards the two
    channels independently, so a cell's last output can reach the websocket
    after its reply; `idle` is sent after that output on the same channel."""
    req = tornado_httpclient.HTTPRequest(ws_url, headers={"Authorization": f"token {token}"})
    conn = await tornado_websocket.websocket_connect(req)
    session, out = uuid.uuid4().hex, []
    try:
        for code in cells:
            msg = message(session, code)
            await conn.write_message(json.dumps(msg))
            mid = msg["header"]["msg_id"]
            replied = idle = False
            while not (replied and idle):
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
                    replied = True
                elif kind == "status" and reply["content"]["execution_state"] == "idle":
                    idle = True
    finally:
        conn.close()
    return out


def test_make_lab_serves_the_notebooks_and_runs_one_in_its_kernel(lab, tmp_path):
    fixtures = load_fixtures("fixtures")
    files = fixtures.make(tmp_path / "input")
    out_dir = tmp_path / "results"
    base, token = lab["base"], lab["token"]

    # The server answers only with the token of the printed URL.
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(f"{base}/api/kernels", timeout=10)
    assert denied.value.code in (401, 403)
    assert lab["notebook"] in {c["name"] for c in api(base, token, "/api/contents")["content"]}

    # The study notebook as the server sees it, and a kernel started through the
    # server's API where the user's would run: in notebooks/.
    nb = api(base, token, f"/api/contents/{STUDY}.ipynb")["content"]
    kernel = api(base, token, "/api/kernels", "POST", {"name": "python3", "path": ""})
    assert kernel["id"] in {k["id"] for k in api(base, token, "/api/kernels")}

    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cells.append(src)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cells.append(f"data = {str(files[STUDY])!r}\nout_dir = {str(out_dir)!r}\nformats = ['svg']\n"
                         "n_resamples = 1000\nimport os\nprint('cwd', os.getcwd())\n")
    ws = f"ws://127.0.0.1:{lab['port']}/api/kernels/{kernel['id']}/channels"
    out = asyncio.run(run_cells(ws, token, cells))
    assert f"cwd {REPO / 'notebooks'}" in "".join(out)

    from boatload.studies import registry

    for name in registry()[STUDY].figures:
        path = out_dir / "figures" / f"{STUDY}-{name}.svg"
        assert path.is_file() and path.stat().st_size > 1000, path
        assert (out_dir / "figures" / f"{STUDY}-{name}.vl.json").is_file()
    assert (out_dir / "tables" / f"{STUDY}-summary.json").is_file()
    assert (out_dir / "tables" / f"{STUDY}.csv").is_file()

    # Every cell's output reaches the client, however the server interleaves the
    # channels: with only execute_reply awaited, about 7 % of these were lost.
    lines = asyncio.run(run_cells(ws, token, [f"print('line', {i})" for i in range(PRINT_CELLS)]))
    assert "".join(lines).splitlines() == [f"line {i}" for i in range(PRINT_CELLS)]

    api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")
    assert kernel["id"] not in {k["id"] for k in api(base, token, "/api/kernels")}
