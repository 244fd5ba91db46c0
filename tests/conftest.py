"""Shared fixtures: paths to the shared BrickBench data, environment for offline runs, opt-in slow tests, and a
stdlib HTTP server on 127.0.0.1 that speaks a provider's protocol by replaying a scripted model (``loopback``), with
chat-completions responses carrying tool calls (``completion``) -- for the LLM clients, the benchmark runner and the
Inspect and verifiers faces alike."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "brickbench"


@pytest.fixture(scope="session", autouse=True)
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's derived-data cache (lattice tables...) in a temporary folder, never the user's."""
    before = os.environ.get("BRICK_GYM_CACHE")
    os.environ["BRICK_GYM_CACHE"] = str(tmp_path_factory.mktemp("brick_gym_cache"))
    yield
    if before is None:
        os.environ.pop("BRICK_GYM_CACHE", None)
    else:
        os.environ["BRICK_GYM_CACHE"] = before


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: opt in with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared BrickBench data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def altbuild_inventory_path(shared_data: Path) -> Path:
    return shared_data / "alt-build-inventory.json"


Reply = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


class _Received(list):
    """Request bodies in order, with each request's headers in ``headers``."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict[str, str]] = []


@contextmanager
def _serve(reply: Reply) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A ThreadingHTTPServer on 127.0.0.1 (free port) answering every POST with ``reply(path, body)``; yields
    (base URL, list of received bodies); the list's ``headers`` holds each request's headers (lower-case names)."""
    received = _Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            received.headers.append({k.lower(): v for k, v in self.headers.items()})
            received.append(body)
            status, payload = reply(self.path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _completion(calls: list[tuple[str, str]], turn: int, text: str = "") -> dict[str, Any]:
    """A chat-completions response with tool calls [(name, raw arguments)]; ids are ``t<turn>_<i>``."""
    tool_calls = [
        {"id": f"t{turn}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "loopback-builder",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 100 + turn, "completion_tokens": 10, "total_tokens": 110 + turn},
    }


@pytest.fixture
def loopback() -> Callable[[Reply], Any]:
    """``with loopback(reply) as (url, received):`` -- a server answering every POST with ``reply(path, body)``."""
    return _serve


@pytest.fixture
def completion() -> Callable[..., dict[str, Any]]:
    """``completion(calls, turn, text="")`` -- a chat-completions response with tool calls [(name, raw args)]."""
    return _completion


CLOCKED = ("brick_gym.llm.adapter", "brick_gym.core.validity", "brick_gym.core.stability")
"""Modules that write wall-clock durations into an episode's files (transcript ``t``, report timings)."""


def _episode_clock_freezer():
    """A function that makes the wall clock of every module in :data:`CLOCKED` read 0, so that two runs of the same
    tasks are byte-comparable. Made as a closure so that Ray pickles it by value (a worker setup hook: worker
    processes cannot import the test modules)."""
    names = CLOCKED

    def freeze() -> None:
        import importlib
        import time
        import types

        frozen = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
        frozen.perf_counter = lambda: 0.0
        for name in names:
            importlib.import_module(name).time = frozen

    return freeze


class EpisodeClock:
    """``hook``: freezes the episode clock where it runs (pass it to a Ray cluster as the worker setup hook);
    ``here()``: a context manager freezing it in this process and restoring it after."""

    def __init__(self) -> None:
        self.hook = _episode_clock_freezer()

    @contextmanager
    def here(self) -> Iterator[None]:
        import importlib

        with pytest.MonkeyPatch.context() as mp:
            for name in CLOCKED:
                module = importlib.import_module(name)
                mp.setattr(module, "time", module.time)
            self.hook()
            yield


@pytest.fixture(scope="session")
def episode_clock() -> EpisodeClock:
    """The frozen episode clock (:class:`EpisodeClock`)."""
    return EpisodeClock()


@pytest.fixture(scope="session")
def start_ray_cluster():
    """``start_ray_cluster(...)``: a context manager running a real two-node Ray cluster on this machine (a head
    and a second node, each with its own CPUs and a small object store), this process connected to it as the
    driver; yields ``(cluster, head_node, second_node)``. Everything is stopped on exit. ``setup_hook`` runs in
    every worker process of the connection (e.g. ``episode_clock.hook``); ``fast_failure_detection``
    makes the head notice a dead node within a second or two."""

    @contextmanager
    def start(head_cpus: int = 1, node_cpus: int = 1, setup_hook=None, fast_failure_detection: bool = False):
        ray = pytest.importorskip("ray")
        from ray.cluster_utils import Cluster

        if ray.is_initialized():
            ray.shutdown()
        system = {"health_check_period_ms": 500, "health_check_failure_threshold": 2} if fast_failure_detection else {}
        small = {"object_store_memory": 80_000_000}
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": head_cpus, "include_dashboard": False, "_system_config": system, **small},
        )
        try:
            second = cluster.add_node(num_cpus=node_cpus, **small)
            cluster.wait_for_nodes()
            env = {"worker_process_setup_hook": setup_hook} if setup_hook is not None else None
            ray.init(address=cluster.address, runtime_env=env, log_to_driver=False)
            yield cluster, cluster.head_node, second
        finally:
            ray.shutdown()
            cluster.shutdown()

    return start


# ---------------------------------------------------------------------------------------------------------------
# Running code as root and as an unprivileged user (the sandbox takes different paths for each)
# ---------------------------------------------------------------------------------------------------------------

TEST_USER = "brickgym-test"
"""The unprivileged user the ``as_user`` tests run as (created by the fixture when the tests run as root)."""
SECRET = "sk-brickgym-canary-0123456789"
"""A fake API key put in the environment of every ``HostUser.python`` run: it must never reach a sandbox."""


class HostUser:
    """Runs a Python snippet in a fresh interpreter as one kind of user: ``root`` (the tests' own user, when it is
    root) or ``user`` (an unprivileged account, through ``setpriv``), with this checkout's brick_gym importable."""

    def __init__(self, kind: str, home: Path, prefix: list[str], python: str) -> None:
        self.kind, self.home, self.prefix, self.interpreter = kind, home, prefix, python

    def popen(self, code: str, **env: str) -> Any:
        import subprocess
        import sys

        root = str(Path(__file__).resolve().parents[1])
        sites = [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
        environ = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.home),
            "PYTHONPATH": os.pathsep.join([root, *sites]),
            "OPENAI_API_KEY": SECRET,
            "ANTHROPIC_API_KEY": SECRET,
            **env,
        }
        cmd = [*self.prefix, self.interpreter, "-c", code]
        return subprocess.Popen(cmd, env=environ, cwd=self.home, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def python(self, code: str, timeout: float = 120, **env: str) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of ``python -c code`` run as this user."""
        proc = self.popen(code, **env)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _unprivileged(home: Path) -> tuple[list[str], str]:
    """(command prefix that runs as the test user, an interpreter that user can run); creates the user."""
    import pwd
    import subprocess
    import sys

    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            check=True,
            capture_output=True,
        )
    entry = pwd.getpwnam(TEST_USER)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]
    # the virtualenv's interpreter may live where the user cannot go (/root): then the system's, same version
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/local/bin/{version}", f"/usr/bin/{version}"):
        probe = subprocess.run([*prefix, "sh", "-c", 'exec "$0" -c pass', python], capture_output=True)
        if probe.returncode == 0:
            return prefix, python
    pytest.fail(f"no {version} interpreter that user {TEST_USER} can run (tried {sys.executable})")


@pytest.fixture(scope="session", params=["root", "user"])
def host_user(request: pytest.FixtureRequest) -> Iterator[HostUser]:
    """Each test that takes it runs twice: as root and as an unprivileged user. As non-root (CI without root) the
    root run is skipped, and the user run is the tests' own user. Its home (also its TMPDIR) is a fresh folder
    under the system's temporary folder (pytest's own is closed to other users)."""
    import shutil
    import sys
    import tempfile

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: the sandbox cannot run on this host")
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root here: the root path is covered where they do")
    home = Path(tempfile.mkdtemp(prefix=f"brickgym-home-{request.param}-", dir="/tmp"))
    home.chmod(0o755)
    try:
        if request.param == "root" or os.geteuid() != 0:
            yield HostUser(request.param, home, [], sys.executable)
        else:
            yield HostUser("user", home, *_unprivileged(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
