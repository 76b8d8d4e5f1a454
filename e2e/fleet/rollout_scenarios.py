"""Rolling updates on the real workload clusters (make e2e-fleet: rollout, bad-image).

qwen-demo runs three replicas with ``maxSurge: 0, maxUnavailable: 1``. Each scenario
edits the engine's image and watches, about once a second, the ModelReplicas that are
Ready (their Ready condition of their current generation), those on the new template,
and the ModelService's backends; it prints the timeline.

- ``rollout``: a good image. At every observation at least two replicas are Ready and
  the ModelService routes to at least two; at the end all three run the new image on
  the workload clusters.
- ``bad-image``: an image whose pod can never run (its template also asks for a node
  label no node has, so the pod stays Pending, as a pull that never succeeds would).
  The rollout stops after one replica (maxUnavailable), ``Progressing`` says how far it
  got, and the two others keep serving the previous image.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from e2e.context import ML, MP
from e2e.fleet.context import Fleet
from e2e.fleet.serving import fresh_ready, routed_backends, scale_ready
from e2e.kube import Obj, conditions, dig

REPLICAS = 3
STRATEGY = {"maxSurge": 0, "maxUnavailable": 1}
FLOOR = REPLICAS - STRATEGY["maxUnavailable"]
GOOD_IMAGE = "vllm/vllm-openai:v0.24.0"
BAD_IMAGE = "vllm/vllm-openai:v0.0.0-does-not-exist"
# A bad image's pod never runs; no node carries this label, so it stays Pending.
NEVER = {"modelplane.ai/e2e": "never-scheduled"}


def engine_image(replica: Mapping[str, Any]) -> str:
    member = dig(replica, "spec", "engines", 0, "members", 0) or {}
    return str(dig(member, "template", "spec", "containers", 0, "image"))


def set_image(ctx: Fleet, image: str, pod_extra: Mapping[str, Any] | None = None) -> None:
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    engines = dig(md, "spec", "template", "spec", "engines")
    for engine in engines:
        for member in engine["members"]:
            pod = member["template"]["spec"]
            pod["containers"][0]["image"] = image
            pod.update(dict(pod_extra or {}))
    ctx.kube.patch(
        MP,
        "ModelDeployment",
        "qwen-demo",
        {"spec": {"template": {"spec": {"engines": engines}}}},
        ML,
    )


def observe(ctx: Fleet, image: str, started: float) -> tuple[float, int, int, int]:
    """(seconds, Ready replicas, replicas on ``image``, ModelService backends) now."""
    replicas = ctx.replicas()
    ready = sorted(r["metadata"]["name"][-5:] for r in replicas if fresh_ready(r))
    updated = sorted(r["metadata"]["name"][-5:] for r in replicas if engine_image(r) == image)
    routed = sorted(b[-5:] for b in routed_backends(ctx))
    seen = (ready, updated, routed)
    if seen != _LAST.get("seen"):
        _LAST["seen"] = seen
        print(
            f"    t={time.monotonic() - started:.0f}s ready={ready} updated={updated} "
            f"routed={routed}",
            flush=True,
        )
    return time.monotonic() - started, len(ready), len(updated), len(routed)


_LAST: dict[str, Any] = {}


def watch(ctx: Fleet, image: str, done: Any, timeout: float) -> list[tuple[float, int, int, int]]:
    """Observe about once a second until ``done(observation)``; fail below the floor."""
    started = time.monotonic()
    timeline: list[tuple[float, int, int, int]] = []
    while True:
        seen = observe(ctx, image, started)
        timeline.append(seen)
        _, ready, _, routed = seen
        assert ready >= FLOOR, f"{ready} Ready replicas, below {FLOOR}: {_timeline(timeline)}"
        assert routed >= FLOOR, f"the ModelService routes to {routed}: {_timeline(timeline)}"
        if done(seen):
            return timeline
        assert seen[0] < timeout, f"not done within {timeout:.0f}s: {_timeline(timeline)}"
        time.sleep(1.0)


def _timeline(timeline: list[tuple[float, int, int, int]]) -> str:
    """Each change: ``t=12s ready=2 updated=1 routed=2``."""
    out, last = [], None
    for t, ready, updated, routed in timeline:
        if (ready, updated, routed) != last:
            out.append(f"t={t:.0f}s ready={ready} updated={updated} routed={routed}")
            last = (ready, updated, routed)
    return "; ".join(out)


def three_ready(ctx: Fleet) -> None:
    """qwen-demo at three Ready replicas on the rolling-update strategy."""
    scale_ready(ctx, REPLICAS, {"strategy": {"rollingUpdate": dict(STRATEGY)}})
    ctx.step(f"strategy {STRATEGY}")


def rollout(ctx: Fleet) -> None:
    three_ready(ctx)
    set_image(ctx, GOOD_IMAGE)
    ctx.step(f"image edited to {GOOD_IMAGE}")
    timeline = watch(ctx, GOOD_IMAGE, lambda s: s[1:] == (REPLICAS,) * 3, timeout=420)
    ctx.step(f"timeline: {_timeline(timeline)}")
    md = ctx.wait_for(
        "Progressing=True RolloutComplete",
        lambda: (
            m
            if (
                conditions(m := ctx.get(MP, "ModelDeployment", "qwen-demo", ML)).get("Progressing")
                or {}
            ).get("reason")
            == "RolloutComplete"
            else None
        ),
        120,
        lambda: str(conditions(ctx.get(MP, "ModelDeployment", "qwen-demo", ML)).get("Progressing")),
    )
    ctx.step(f"status.replicas {dig(md, 'status', 'replicas')}")
    for replica in ctx.replicas():
        check_runs(ctx, replica, GOOD_IMAGE)
    ctx.stats["rollout_timeline"] = _timeline(timeline)


def check_runs(ctx: Fleet, replica: Obj, image: str) -> None:
    """The replica's Deployment on its workload cluster runs ``image``, available."""
    name, cluster = replica["metadata"]["name"], str(dig(replica, "spec", "clusterName"))
    kube = ctx.clusters[cluster]
    # The engines' workloads (<replica>-<engine>), not the endpoint picker beside them.
    engines = {f"{name}-{e.get('name')}" for e in dig(replica, "spec", "engines") or []}
    for kind, ns, workload in ctx.workloads_of(name):
        got = kube.get("apps/v1", kind, workload, ns) if kind == "Deployment" else None
        if got is None or workload not in engines:
            continue
        images = [c.get("image") for c in dig(got, "spec", "template", "spec", "containers") or []]
        assert image in images, f"{cluster}/{workload} runs {images}, not {image}"
        assert (dig(got, "status", "availableReplicas") or 0) >= 1, (
            f"{cluster}/{workload}: {got.get('status')}"
        )
        ctx.step(f"{name} on {cluster}: Deployment {workload} runs {image}, available")


def bad_image(ctx: Fleet) -> None:
    three_ready(ctx)
    before = {r["metadata"]["name"]: engine_image(r) for r in ctx.replicas()}
    set_image(ctx, BAD_IMAGE, {"nodeSelector": dict(NEVER)})
    ctx.step(f"image edited to {BAD_IMAGE} (its pod can never run)")
    timeline = watch(ctx, BAD_IMAGE, lambda s: s[2] >= 1 and s[0] > 60, timeout=180)
    ctx.step(f"timeline: {_timeline(timeline)}")
    replicas = ctx.replicas()
    bad = [r["metadata"]["name"] for r in replicas if engine_image(r) == BAD_IMAGE]
    assert len(bad) == STRATEGY["maxUnavailable"], f"on the bad image: {bad}"
    serving = [r for r in replicas if engine_image(r) != BAD_IMAGE]
    assert all(fresh_ready(r) for r in serving), [ctx.explain(r) for r in serving]
    assert all(engine_image(r) == before[r["metadata"]["name"]] for r in serving), before
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    progressing = conditions(md).get("Progressing") or {}
    assert progressing.get("reason") in ("ReplicasUpdating", "ProgressDeadlineExceeded"), (
        progressing
    )
    assert "1 of 3 replicas updated, 0 of them Ready" in str(progressing.get("message")), (
        progressing
    )
    ctx.step(f"stopped: Progressing {progressing.get('reason')}: {progressing.get('message')}")
    ctx.step(f"{len(serving)} replicas keep serving {sorted({engine_image(r) for r in serving})}")
    ctx.stats["bad_image_timeline"] = _timeline(timeline)
