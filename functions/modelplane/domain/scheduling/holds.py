"""Why a deployment places nothing new: a device selector that does not compile, or costs too much.

The scheduler holds such a deployment (what runs stays, nothing new is placed) and names
the first device request whose selector is at fault.
"""

from __future__ import annotations

from modelplane.domain.scheduling.fit import Selectors
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import CostlySelector, InvalidSelector
from modelplane.domain.scheduling.selectors import SelectorCostError


def costly_selector(deployment: Deployment, exc: SelectorCostError) -> CostlySelector:
    """Name the first device request of the deployment that uses the costly selector."""
    for engine in deployment.engines:
        for member in engine.members:
            for request in member.devices:
                if exc.expression in request.selectors:
                    return CostlySelector(
                        engine.name, member.role, request.name, exc.expression, exc.message
                    )
    return CostlySelector("", "", "", exc.expression, exc.message)


def invalid_selector(deployment: Deployment, selectors: Selectors) -> InvalidSelector | None:
    """Return the first device selector of the deployment that does not compile."""
    seen: dict[str, str | None] = {}
    for engine in deployment.engines:
        for member in engine.members:
            for request in member.devices:
                for selector in request.selectors:
                    if selector not in seen:
                        seen[selector] = selectors.check(selector)
                    error = seen[selector]
                    if error is not None:
                        return InvalidSelector(
                            engine.name, member.role, request.name, selector, error
                        )
    return None
