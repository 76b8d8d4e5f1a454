"""InferenceClass: a platform team's description of one node pool's hardware.

It is data only: the XRD's schema is all the validation there is, and the scheduler
reads the class through each InferenceCluster's ``status.gpuPools``. The function
accepts the class and marks it ready.
"""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.models.inferenceclass import InferenceClass


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Accept the class: condition ``Accepted`` True, composite ready."""
    icl = InferenceClass.model_validate(kit.composite(req))
    devices = icl.spec.devices if icl.spec else []
    described = ", ".join(sorted({d.name for d in devices})) or "no devices"
    kit.set_condition(rsp, "Accepted", True, "Accepted", f"publishes {described}")
    kit.set_ready(rsp, True)
    return kit.Released.NOTHING
