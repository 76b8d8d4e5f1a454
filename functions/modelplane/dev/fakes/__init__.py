"""Fake providers: what the providers Modelplane composes through would report, with
nothing real behind them. One library for the loop harness (:mod:`modelplane.dev.loop`)
and for ``e2e/providers.py`` (which runs it against a real kube-apiserver in ``make e2e``).

Per kind, what a real provider reports (``status.atProvider``, conditions, connection
details, readiness), as pure functions of the desired object and of what the world holds
(the caller's: the loop's store, or the e2e's API server):

- :mod:`.cloud`: the upjet providers' managed resources (AWS EKS/VPC/EFS..., GCP GKE and
  service accounts, Azure AKS, Nebius mk8s, Vultr VKE): ``atProvider`` and connection
  details;
- :mod:`.helm`: provider-helm's Release;
- :mod:`.kubernetes`: provider-kubernetes' Object: the wrapped manifest's status on its
  workload cluster (a :class:`.kubernetes.Cluster` answers what is there) and the
  Object's readiness (``spec.readiness``, the CEL queries our functions write);
- :mod:`.gateway`: a Gateway API controller (Envoy Gateway on a workload cluster,
  Traefik on the control plane) on GatewayClasses, Gateways and HTTPRoutes;
- :mod:`.admission`: what an API server refuses (names, label keys and values);
- :mod:`.base`: keys, conditions, field paths, stable digests.

Crossplane's ``Usage``/``ClusterUsage`` and the ProviderConfigs carry no status: nothing
here reports on them.
"""
