"""A small, generic Kubernetes REST client over the ``kubernetes`` library's ApiClient.

Every object is a plain dict; any kind is addressed by ``apiVersion`` and ``kind``, its
resource name found through discovery. Server-side apply, status patches, watches.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes import client, config

Obj = dict[str, Any]
FIELD_MANAGER = "modelplane-e2e"
log = logging.getLogger("e2e.kube")


class KubeError(Exception):
    """An API call that failed, with the HTTP status and the server's message."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        try:
            self.message = str(json.loads(body).get("message", body))
        except (ValueError, AttributeError):
            self.message = body
        super().__init__(f"{status} {reason}: {self.message}")


@dataclass(frozen=True)
class Resource:
    """Where a kind is served."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def base(self) -> str:
        prefix = "/api" if "/" not in self.api_version else "/apis"
        return f"{prefix}/{self.api_version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, sub: str | None = None
    ) -> str:
        path = self.base()
        if self.namespaced and namespace:
            path += f"/namespaces/{namespace}"
        path += f"/{self.plural}"
        if name:
            path += f"/{name}"
        if sub:
            path += f"/{sub}"
        return path


class Kube:
    """A client for one API server, thread-safe for concurrent calls.

    The ``kubernetes`` library reads the kubeconfig; requests go through urllib3 with
    the TLS settings and token it found (the library's generated ApiClient changes shape
    between releases; the kubeconfig loader does not).
    """

    def __init__(self, kubeconfig: str | None = None) -> None:
        cfg = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig or os.environ.get("KUBECONFIG"), client_configuration=cfg
        )
        self.host = str(cfg.host).rstrip("/")
        self.headers: dict[str, str] = {}
        for key, value in (cfg.api_key or {}).items():
            if key in ("authorization", "BearerToken") and value:
                prefix = (cfg.api_key_prefix or {}).get(key)
                self.headers["Authorization"] = f"{prefix} {value}" if prefix else str(value)
        self.http = urllib3.PoolManager(
            maxsize=64,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
            ca_certs=cfg.ssl_ca_cert,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
        )
        self._resources: dict[tuple[str, str], Resource] = {}
        self._lock = threading.Lock()

    # -- raw calls ---------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float = 60,
        stream: bool = False,
        accept: str = "application/json",
    ) -> Any:
        url = self.host + path
        if query:
            url += "?" + urlencode(dict(query))
        headers = {**self.headers, "Accept": accept}
        data = None
        if body is not None:
            data = body if isinstance(body, str | bytes) else json.dumps(body)
            headers["Content-Type"] = content_type
        resp = self.http.request(
            method,
            url,
            body=data,
            headers=headers,
            preload_content=not stream,
            timeout=urllib3.Timeout(connect=10, read=timeout),
            retries=False,
        )
        if resp.status >= 400:
            text = resp.data.decode(errors="replace") if not stream else resp.read().decode()
            raise KubeError(resp.status, str(resp.reason), text)
        return resp

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float = 60,
        accept: str = "application/json",
    ) -> Any:
        """Call the API; return the decoded JSON answer (or None for an empty one)."""
        try:
            resp = self._send(method, path, body, query, content_type, timeout, accept=accept)
        except urllib3.exceptions.HTTPError as exc:
            raise KubeError(0, "ConnectionError", json.dumps({"message": str(exc)})) from None
        return json.loads(resp.data) if resp.data else None

    # -- discovery ---------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        """Return where ``kind`` is served; rediscover once on a miss (new CRDs)."""
        key = (api_version, kind)
        with self._lock:
            if key in self._resources:
                return self._resources[key]
        for _ in range(2):
            self._discover(api_version)
            with self._lock:
                if key in self._resources:
                    return self._resources[key]
            time.sleep(1)
        msg = f"{kind}.{api_version} is not served"
        raise KubeError(404, "NotFound", json.dumps({"message": msg}))

    def _discover(self, api_version: str) -> None:
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            found = self.request("GET", base)
        except KubeError as exc:
            if exc.status == 404:
                return
            raise
        with self._lock:
            for r in found.get("resources", []):
                if "/" in r["name"]:
                    continue
                self._resources[(api_version, r["kind"])] = Resource(
                    api_version, r["kind"], r["name"], bool(r["namespaced"])
                )

    def served(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
        except KubeError:
            return False
        return True

    # -- objects -----------------------------------------------------------------

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        """Return the object, or None when it does not exist."""
        r = self.resource(api_version, kind)
        try:
            got: Obj = self.request("GET", r.path(namespace, name))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        return got

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]:
        r = self.resource(api_version, kind)
        query = {}
        if labels:
            query["labelSelector"] = ",".join(f"{k}={v}" for k, v in labels.items())
        items: list[Obj] = self.request("GET", r.path(namespace), query=query)["items"]
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def apply(
        self, obj: Mapping[str, Any], manager: str = FIELD_MANAGER, dry_run: bool = False
    ) -> Obj:
        """Server-side apply ``obj`` (forcing conflicts)."""
        r = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        query: dict[str, Any] = {
            "fieldManager": manager,
            "force": "true",
            "fieldValidation": "Strict",  # as kubectl sends it
        }
        if dry_run:
            query["dryRun"] = "All"
        got: Obj = self.request(
            "PATCH",
            r.path(meta.get("namespace"), meta["name"]),
            body=json.dumps(obj),
            query=query,
            content_type="application/apply-patch+yaml",
        )
        return got

    def create(self, obj: Mapping[str, Any], dry_run: bool = False) -> Obj:
        r = self.resource(obj["apiVersion"], obj["kind"])
        query = {"fieldValidation": "Strict"}  # as kubectl sends it
        if dry_run:
            query["dryRun"] = "All"
        got: Obj = self.request(
            "POST", r.path(obj["metadata"].get("namespace")), body=dict(obj), query=query
        )
        return got

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        sub: str | None = None,
    ) -> Obj:
        """JSON merge patch the object (or its ``sub``resource, e.g. ``status``)."""
        r = self.resource(api_version, kind)
        got: Obj = self.request(
            "PATCH",
            r.path(namespace, name, sub),
            body=dict(patch),
            content_type="application/merge-patch+json",
        )
        return got

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        propagation: str = "Background",
    ) -> bool:
        """Delete the object; False when it was already gone."""
        r = self.resource(api_version, kind)
        try:
            self.request(
                "DELETE",
                r.path(namespace, name),
                body={"propagationPolicy": propagation},
            )
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # -- watching ----------------------------------------------------------------

    def watch(
        self, api_version: str, kind: str, stop: threading.Event, timeout: int = 300
    ) -> Iterator[tuple[str, Obj]]:
        """Yield (event type, object) for every object of ``kind``, listing first.

        Reconnects when the server ends the watch; relists on 410 Gone. Ends when
        ``stop`` is set (within the timeout of a quiet watch).
        """
        r = self.resource(api_version, kind)
        version = ""
        while not stop.is_set():
            if not version:
                listed = self.request("GET", r.path())
                version = listed["metadata"]["resourceVersion"]
                for item in listed["items"]:
                    item.setdefault("apiVersion", api_version)
                    item.setdefault("kind", kind)
                    yield "ADDED", item
            try:
                resp = self._send(
                    "GET",
                    r.path(),
                    query={
                        "watch": "1",
                        "resourceVersion": version,
                        "allowWatchBookmarks": "true",
                        "timeoutSeconds": str(timeout),
                    },
                    timeout=timeout + 30,
                    stream=True,
                )
            except KubeError as exc:
                if exc.status == 410:
                    version = ""
                    continue
                time.sleep(1)
                continue
            except urllib3.exceptions.HTTPError:
                time.sleep(1)
                continue
            try:
                for line in _lines(resp):
                    event = json.loads(line)
                    kind_of_event = event.get("type")
                    item = event.get("object") or {}
                    if kind_of_event == "ERROR":
                        log.info("watch %s: %s", kind, item.get("message") or item)
                        if item.get("code") == 410:
                            version = ""
                        break
                    version = item.get("metadata", {}).get("resourceVersion", version)
                    if kind_of_event == "BOOKMARK":
                        continue
                    yield kind_of_event, item
                    if stop.is_set():
                        return
            except Exception as exc:
                log.info("watch %s: %s; reconnecting", kind, exc)
                time.sleep(0.5)
            finally:
                resp.release_conn()


def _lines(resp: Any) -> Iterator[bytes]:
    buf = b""
    for chunk in resp.stream(8192):
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield line
    if buf.strip():
        yield buf


def conditions(obj: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """The object's status conditions by type."""
    if not obj:
        return {}
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def condition_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    return conditions(obj).get(kind, {}).get("status") == "True"


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return None
            obj = obj[step]
        else:
            if not isinstance(obj, Mapping):
                return None
            obj = obj.get(step)
    return obj


def wait_until(what: str, probe: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    """Call ``probe`` until it returns something truthy; raise TimeoutError with ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout:.0f}s waiting for {what}"
            raise TimeoutError(msg)
        time.sleep(interval)
