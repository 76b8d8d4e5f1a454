"""A mini control plane: Crossplane's reconciler, Modelplane's functions, fake providers.

:mod:`.harness` reconciles every composite of a fleet pass after pass with Crossplane's
own composite reconciler (``crossplane internal render``) until nothing changes;
:mod:`.fakes` stands in for the providers and controllers that report on what is
composed (cloud managed resources, Helm releases, provider-kubernetes Objects, the
Gateway API); :mod:`.fleets` names the example fleets a user applies. The loop tests
(``tests/loop/``) and ``make demo`` (:mod:`modelplane.dev.demo`) run them.
"""
