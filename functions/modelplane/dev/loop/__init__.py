"""A mini control plane: Crossplane's reconciler, Modelplane's functions, fake providers.

:mod:`.harness` reconciles every composite of a fleet pass after pass with Crossplane's
own composite reconciler (``crossplane internal render``) until nothing changes, for the
kinds :mod:`.apis` finds under ``apis/``, recording each pass (:mod:`.records`);
:mod:`.fakes` stands in for the providers and controllers that report on what is
composed, asking the shared fake-provider library (:mod:`modelplane.dev.fakes`) what
each kind reports in the world its store holds (:mod:`.world`, :mod:`.capacity`,
:mod:`.nodes`); :mod:`.fleets` names the example fleets a user applies. The loop tests
(``tests/loop/``) and ``make demo`` (:mod:`modelplane.dev.demo`) run them.
"""
