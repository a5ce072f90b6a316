"""``spec.volumes``, ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` as the Pod parses them."""

from __future__ import annotations

import pytest

from scheduler.api.objects import Pod
from scheduler.api.volumes import PodResourceClaim, ResourceClaimStatus, Volume
from scheduler.testing import make_pod


class TestVolumes:
    def test_each_volume_keeps_its_name_source_and_claim_name(self) -> None:
        """The source is the field set on the volume; a PVC volume also keeps its claim name."""
        pod = make_pod("p").volume("tmp", emptyDir={}).pvc("data", "data-0").build()
        assert pod.volumes == (
            Volume("tmp", frozenset({"emptyDir"})),
            Volume("data", frozenset({"persistentVolumeClaim"}), "data-0"),
        )
        assert pod.errors == ()

    def test_a_source_set_to_null_is_not_set(self) -> None:
        """Go reads ``persistentVolumeClaim: null`` as a nil pointer."""
        pod = make_pod("p").volume("v", emptyDir={}, persistentVolumeClaim=None).build()
        assert pod.volumes == (Volume("v", frozenset({"emptyDir"})),)

    def test_no_volumes(self) -> None:
        assert make_pod("p").build().volumes == ()

    @pytest.mark.parametrize(
        ("volumes", "message"),
        [
            pytest.param({"name": "v"}, "spec.volumes: must be a list, got dict", id="not-a-list"),
            pytest.param(["v"], "spec.volumes[0]: must be an object, got str", id="item-not-an-object"),
            pytest.param(
                [{"name": "v", "persistentVolumeClaim": {"claimName": 3}}],
                "spec.volumes[0].persistentVolumeClaim.claimName: must be a string, got int",
                id="claim-name-not-a-string",
            ),
        ],
    )
    def test_malformed_volumes_name_the_field(self, volumes: object, message: str) -> None:
        pod = make_pod("p").set("spec.volumes", volumes).build()
        assert pod.error_message == message


class TestResourceClaims:
    def test_claims_and_generated_names(self) -> None:
        """A claim by name, a claim from a template, and the status naming what was generated."""
        pod = (
            make_pod("p")
            .resource_claim("gpu", claim="gpu-claim")
            .resource_claim("nic", template="nic-template")
            .resource_claim_status("nic", "p-nic-x7")
            .build()
        )
        assert pod.resource_claims == (
            PodResourceClaim("gpu", "gpu-claim", None),
            PodResourceClaim("nic", None, "nic-template"),
        )
        assert pod.resource_claim_statuses == (ResourceClaimStatus("nic", "p-nic-x7"),)
        assert pod.errors == ()

    def test_a_status_without_a_claim_name(self) -> None:
        """The controller decided not to generate a claim for this template entry."""
        pod = make_pod("p").resource_claim("nic", template="t").resource_claim_status("nic", None).build()
        assert pod.resource_claim_statuses == (ResourceClaimStatus("nic", None),)

    def test_malformed_claims_name_the_field(self) -> None:
        pod = Pod.from_dict(make_pod("p").set("spec.resourceClaims", [{"name": "a", "resourceClaimName": 1}]).dict())
        assert pod.error_message == "spec.resourceClaims[0].resourceClaimName: must be a string, got int"
