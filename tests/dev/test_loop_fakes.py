"""The loop's fake providers resolve references as the real ones do, and the loop's
canonical encoding is the object's encoding without its volatile fields."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from modelplane.dev.fakes.base import Key, Obj, conditions_of, copy_tree, key_of
from modelplane.dev.loop.fakes import Providers, _members_by_collection, _sync_members
from modelplane.dev.loop.nodes import MEMBERSHIP_LABEL
from modelplane.dev.loop.records import _encode, _strip, canonical

AWS = "aws.m.upbound.io"
EC2 = f"ec2.{AWS}/v1beta1"
NAMESPACE = "crossplane-system"
OWNER = "uid-of-the-composite"


def _config() -> Obj:
    return {
        "apiVersion": f"{AWS}/v1beta1",
        "kind": "ClusterProviderConfig",
        "metadata": {"name": "default"},
        "spec": {"credentials": {"source": "IRSA"}},
    }


def _managed(
    kind: str, name: str, labels: dict[str, str], owner: str = OWNER, **fields: Any
) -> Obj:
    return {
        "apiVersion": EC2,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": labels,
            "ownerReferences": [{"controller": True, "uid": owner, "kind": "X", "name": "x"}],
        },
        "spec": {"forProvider": {"region": "us-east-1", **fields}},
    }


def _observed(*objs: Obj) -> dict[Key, Obj]:
    store = {key_of(obj): obj for obj in (_config(), *objs)}
    Providers().observe(store, {})
    return store


def _synced(store: dict[Key, Obj], obj: Obj) -> dict[str, Any]:
    return conditions_of(store[key_of(obj)])["Synced"]


def test_a_selector_resolves_to_a_resource_with_its_labels_and_controller() -> None:
    vpc = _managed("VPC", "vpc-a", {"role": "vpc"})
    subnet = _managed(
        "Subnet",
        "subnet-a",
        {},
        vpcIdSelector={"matchLabels": {"role": "vpc"}, "matchControllerRef": True},
    )
    assert _synced(_observed(vpc, subnet), subnet)["status"] == "True"


def test_a_selector_that_matches_no_resource_leaves_it_unsynced() -> None:
    other_labels = _managed("VPC", "vpc-a", {"role": "other"})
    other_owner = _managed("VPC", "vpc-b", {"role": "vpc"}, owner="someone-else")
    selector = {"matchLabels": {"role": "vpc"}, "matchControllerRef": True}
    subnet = _managed("Subnet", "subnet-a", {}, vpcIdSelector=selector)
    synced = _synced(_observed(other_labels, other_owner, subnet), subnet)
    assert synced["status"] == "False"
    assert "spec.forProvider.vpcIdSelector matches no resource" in synced["message"]
    # Without matchControllerRef, the other composite's VPC is a match.
    anyone = _managed("Subnet", "subnet-b", {}, vpcIdSelector={"matchLabels": {"role": "vpc"}})
    assert _synced(_observed(other_labels, other_owner, anyone), anyone)["status"] == "True"


def test_a_reference_by_name_resolves_only_to_a_resource_of_that_name() -> None:
    vpc = _managed("VPC", "vpc-a", {})
    found = _managed("Subnet", "subnet-a", {}, vpcIdRef={"name": "vpc-a"})
    missing = _managed("Subnet", "subnet-b", {}, vpcIdRef={"name": "vpc-z"})
    listed = _managed(
        "SecurityGroup", "sg", {}, subnetIdRefs=[{"name": "subnet-a"}, {"name": "subnet-y"}]
    )
    store = _observed(vpc, found, missing, listed)
    assert _synced(store, found)["status"] == "True"
    assert "vpcIdRef names vpc-z, which does not exist" in _synced(store, missing)["message"]
    assert "subnetIdRefs names subnet-y, which does not exist" in _synced(store, listed)["message"]


def test_a_secret_reference_resolves_to_a_secret_in_its_namespace() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "password", "namespace": NAMESPACE},
        "data": {"password": "cGFzcw=="},
    }
    ref = {"name": "password", "key": "password"}
    found = _managed("Instance", "db-a", {}, passwordSecretRef=ref)
    elsewhere = _managed("Instance", "db-b", {}, passwordSecretRef={**ref, "namespace": "other"})
    store = _observed(secret, found, elsewhere)
    assert _synced(store, found)["status"] == "True"
    assert "names Secret password, which does not exist" in _synced(store, elsewhere)["message"]


def test_a_spec_written_anew_is_read_anew_and_one_status_write_keeps_its_reading() -> None:
    vpc = _managed("VPC", "vpc-a", {})
    subnet = _managed("Subnet", "subnet-a", {}, vpcIdRef={"name": "vpc-a"})
    store = _observed(vpc, subnet)
    assert _synced(store, subnet)["status"] == "True"
    # A render writes a new spec: its references are read again, not remembered.
    rendered = _managed("Subnet", "subnet-a", {}, vpcIdRef={"name": "vpc-z"})
    store[key_of(rendered)] = {**store[key_of(subnet)], "spec": rendered["spec"]}
    Providers().observe(store, {})
    assert "vpcIdRef names vpc-z, which does not exist" in _synced(store, rendered)["message"]
    # The VPC it names appears: the same spec now resolves (the world is read every time).
    named = _managed("VPC", "vpc-z", {})
    store[key_of(named)] = named
    Providers().observe(store, {})
    assert _synced(store, rendered)["status"] == "True"


# --- the canonical encoding ------------------------------------------------------------------

_VOLATILE_KEYS = st.sampled_from(["lastTransitionTime", "resourceVersion"])
_KEYS = st.one_of(_VOLATILE_KEYS, st.text(max_size=4), st.sampled_from(['"', "\\", '",{"']))
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(['","lastTransitionTime":"', "\\", '{"resourceVersion":1}']),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_canonical_is_the_encoding_without_the_volatile_fields(obj: dict[str, Any]) -> None:
    assert canonical(obj) == _encode(_strip(obj))


def test_canonical_cuts_volatile_members_wherever_they_stand() -> None:
    obj = {
        "metadata": {"resourceVersion": "7", "name": "a"},
        "status": {
            "conditions": [
                {"lastTransitionTime": "2026-01-01T00:00:00Z", "type": "Ready"},
                {"type": "Synced", "lastTransitionTime": None},
                {"lastTransitionTime": 1, "resourceVersion": "2"},
                {"resourceVersion": {"nested": True}},
            ],
            "note": '","lastTransitionTime":"kept, it is text"',
        },
    }
    assert canonical(obj) == (
        '{"metadata":{"name":"a"},"status":{"conditions":[{"type":"Ready"},{"type":"Synced"},'
        '{},{}],"note":"\\",\\"lastTransitionTime\\":\\"kept, it is text\\""}}'
    )


@given(_VALUES)
def test_copy_tree_copies_as_deepcopy_does(value: Any) -> None:
    copied = copy_tree({"v": value, "nested": [value, {"again": value}]})
    assert copied == copy.deepcopy({"v": value, "nested": [value, {"again": value}]})
    assert copied == {"v": value, "nested": [value, {"again": value}]}


def test_copy_tree_shares_no_container_with_the_original() -> None:
    original = {"spec": {"containers": [{"args": ["--a"]}]}, "n": 1}
    copied = copy_tree(original)
    copied["spec"]["containers"][0]["args"].append("--b")
    copied["spec"]["replicas"] = 2
    assert original == {"spec": {"containers": [{"args": ["--a"]}]}, "n": 1}


def _member(name: str, namespace: str, collection: str, phase: str = "Running") -> Obj:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MEMBERSHIP_LABEL: collection},
        },
        "status": {"atProvider": {"manifest": {"status": {"phase": phase}}}},
    }


def test_a_collection_prunes_only_its_own_members_and_keeps_the_index_true() -> None:
    ours = [_member("pod-a", "ml-team", "pods"), _member("pod-b", "ml-team", "pods")]
    theirs = _member("pod-c", "ml-team", "other-pods")
    elsewhere = _member("pod-d", "other-team", "pods")  # same name, another namespace
    store = {key_of(o): o for o in (*ours, theirs, elsewhere)}
    members = _members_by_collection(store)
    collection = {"metadata": {"name": "pods", "namespace": "ml-team"}}
    updated = _member("pod-b", "ml-team", "pods", phase="Pending")
    added = _member("pod-e", "ml-team", "pods")

    assert _sync_members(store, members, collection, [updated, added])
    assert set(store) == {key_of(o) for o in (updated, added, theirs, elsewhere)}
    assert store[key_of(updated)] == updated
    assert members == _members_by_collection(store)
    assert not _sync_members(store, members, collection, [updated, added])
