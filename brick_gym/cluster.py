"""Ray clusters: connect to one (or start a private local one) and say where a task runs.

One place for what every Ray face of brick_gym shares (``bench run --ray``, ``bench score --ray``, RLlib
training): the meaning of an address, the connection's lifetime, and the node facts recorded with each result.
Importing this module does not import Ray; :func:`connect` does, through :func:`brick_gym.extras.require`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator, Mapping
from typing import Any

from brick_gym.extras import require

__all__ = ["LOCAL", "connect", "node_info", "ray_module"]

LOCAL = "local"
"""Address meaning "start a private Ray instance in this process" (what ``ray.init()`` with no address does)."""


def ray_module(needed_by: str) -> Any:
    """The ``ray`` package, or the one error naming the ``ray`` extra."""
    return require("ray", needed_by)


@contextlib.contextmanager
def connect(
    address: str | None,
    *,
    needed_by: str = "brick_gym on Ray",
    num_cpus: int | None = None,
    object_store_memory: int | None = None,
    runtime_env: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """Be connected to a Ray cluster for the ``with`` block; yields the ``ray`` module.

    ``address``: ``"auto"`` (the cluster started on this machine with ``ray start``), ``HOST:PORT`` (a head's GCS
    address), ``ray://HOST:PORT`` (Ray Client), or ``"local"``/None (a private instance started here and stopped
    at the end; ``num_cpus`` and ``object_store_memory`` size it). A connection this process already has (e.g.
    a test's ``ray.init``) is used as it is and left open. Worker output is not echoed to the driver (it lands in
    the session's log folder); results and errors come back through the tasks themselves.
    """
    ray = ray_module(needed_by)
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING, "include_dashboard": False}
    if runtime_env:
        kwargs["runtime_env"] = dict(runtime_env)
    if address in (None, "", LOCAL):
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        if object_store_memory is not None:
            kwargs["object_store_memory"] = object_store_memory
        ray.init(**kwargs)
    else:
        kwargs.pop("include_dashboard")  # a setting of the head, not of a driver joining it
        ray.init(address=address, **kwargs)
    try:
        yield ray
    finally:
        ray.shutdown()


def node_info() -> dict[str, str]:
    """Where the calling Ray task or actor runs: Ray's node id, the node's IP address, host name and process id."""
    import ray

    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "node_ip": ray.util.get_node_ip_address(),
        "hostname": socket.gethostname(),
        "pid": str(os.getpid()),
    }
