"""The extended resource claim's requests and container mappings, ported from upstream's
``extendeddynamicresources_test.go`` (``Test_createRequestsAndMappings_requests`` / ``_mappings``),
and PreBind's writes as data."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.api.resources import container_requests
from scheduler.plugins.dynamicresources.plugin.extendedclaim import (
    ContainerRequestMapping,
    ExtendedClaimCreation,
    node_extended_resources,
    pod_status_patch,
    requests_and_mappings,
)

GPU = "example.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/classInit"


class _Spec:
    """``st.MakePod()``'s Res / InitReq / SidecarReq: containers named con<i>, init-con<i>, sidecar-con<i>."""

    def __init__(self) -> None:
        self.containers: list[dict[str, Any]] = []
        self.init: list[dict[str, Any]] = []

    def res(self, requests: dict[str, str]) -> _Spec:
        self.containers.append({"name": f"con{len(self.containers)}", "resources": {"requests": requests}})
        return self

    def init_req(self, requests: dict[str, str]) -> _Spec:
        self.init.append({"name": f"init-con{len(self.init)}", "resources": {"requests": requests}})
        return self

    def sidecar_req(self, requests: dict[str, str]) -> _Spec:
        self.init.append(
            {"name": f"sidecar-con{len(self.init)}", "restartPolicy": "Always", "resources": {"requests": requests}}
        )
        return self

    def containers_of(self) -> Any:
        return container_requests({"containers": self.containers, "initContainers": self.init})


def pod1() -> _Spec:
    return _Spec().res({GPU: "1", GPU + "1": "2"})


def pod2() -> _Spec:
    return _Spec().res({GPU: "1"}).res({GPU + "1": "2"})


def pod_init() -> _Spec:
    return _Spec().res({GPU: "1"}).init_req({GPU + "init": "2"})


def pod_init2() -> _Spec:
    return _Spec().res({GPU: "1"}).init_req({GPU + "init": "1"}).init_req({GPU + "init": "2"})


def pod_init3() -> _Spec:
    return (
        _Spec()
        .res({GPU: "1"})
        .init_req({GPU + "init": "1"})
        .sidecar_req({GPU + "init": "1"})
        .init_req({GPU + "init": "2"})
    )


def pod1_init_implicit() -> _Spec:
    return _Spec().init_req({GPU + "init": "1", IMPLICIT: "2"})


def pod_init_implicit() -> _Spec:
    return _Spec().res({GPU: "1"}).init_req({GPU + "init": "1"}).init_req({IMPLICIT: "2"})


DEV_MAP = {GPU: "class"}
DEV_MAP2 = {GPU: "class", GPU + "1": "class1"}
DEV_MAP_INIT = {GPU: "class", GPU + "init": "classInit", IMPLICIT: "classInit"}
RES = (GPU,)
RES2 = (GPU, GPU + "1")
RES_INIT = (GPU, GPU + "init")
RES_INIT_IMPLICIT = (GPU, GPU + "init", IMPLICIT)


@pytest.mark.parametrize(
    ("spec", "extended", "classes", "want"),
    [
        pytest.param(pod1(), (), {}, [], id="nil"),
        pytest.param(pod1(), RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"),
        pytest.param(
            pod1(), RES2, DEV_MAP, [("container-0-request-0", "class", 1)], id="one match, one resource not match"
        ),
        pytest.param(
            pod1(),
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            pod2(),
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            pod_init(),
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            pod_init2(),
            RES_INIT,
            DEV_MAP_INIT,
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            pod_init3(),
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)
def test_requests(spec: _Spec, extended: tuple[str, ...], classes: dict[str, str], want: list[Any]) -> None:
    requests, _ = requests_and_mappings(spec.containers_of(), extended, classes.get)
    got = [(r.name, r.exactly.device_class_name, r.exactly.count) for r in requests if r.exactly is not None]
    assert got == want
    assert all(r.exactly is not None and r.exactly.allocation_mode == "ExactCount" for r in requests)


def _m(container: str, resource: str, request: str) -> tuple[str, str, str]:
    return (request, container, resource)


@pytest.mark.parametrize(
    ("spec", "extended", "classes", "want"),
    [
        pytest.param(
            pod1(),
            RES2,
            DEV_MAP2,
            [_m("con0", GPU, "container-0-request-0"), _m("con0", GPU + "1", "container-0-request-1")],
            id="one container, two requests",
        ),
        pytest.param(
            pod1_init_implicit(),
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                _m("init-con0", IMPLICIT, "container-0-request-0"),
                _m("init-con0", GPU + "init", "container-0-request-1"),
            ],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            pod2(),
            RES2,
            DEV_MAP2,
            [_m("con0", GPU, "container-0-request-0"), _m("con1", GPU + "1", "container-1-request-0")],
            id="two containers, two requests",
        ),
        pytest.param(
            pod_init(),
            RES_INIT,
            DEV_MAP_INIT,
            [_m("init-con0", GPU + "init", "container-0-request-0"), _m("con0", GPU, "container-1-request-0")],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            pod_init2(),
            RES_INIT,
            DEV_MAP_INIT,
            [
                _m("init-con0", GPU + "init", "container-1-request-0"),
                _m("init-con1", GPU + "init", "container-1-request-0"),
                _m("con0", GPU, "container-2-request-0"),
            ],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            pod_init_implicit(),
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                _m("init-con0", GPU + "init", "container-0-request-0"),
                _m("init-con1", IMPLICIT, "container-1-request-0"),
                _m("con0", GPU, "container-2-request-0"),
            ],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            pod_init3(),
            RES_INIT,
            DEV_MAP_INIT,
            [
                _m("init-con0", GPU + "init", "container-1-request-0"),
                _m("sidecar-con1", GPU + "init", "container-1-request-0"),
                _m("init-con2", GPU + "init", "container-2-request-0"),
                _m("con0", GPU, "container-3-request-0"),
            ],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)
def test_mappings(spec: _Spec, extended: tuple[str, ...], classes: dict[str, str], want: list[Any]) -> None:
    _, mappings = requests_and_mappings(spec.containers_of(), extended, classes.get)
    got = sorted((m.request_name, m.container_name, m.resource_name) for m in mappings)
    assert got == want


def test_node_extended_resources_splits_offered_and_backed() -> None:
    backed = {GPU}.__contains__
    # A node offering the resource (a device plugin) needs no devices; one that does not, does.
    assert node_extended_resources({GPU: 2}, {GPU: 4}, backed) == {}
    assert node_extended_resources({GPU: 2}, {}, backed) == {GPU: 2}
    assert node_extended_resources({GPU: 2}, {GPU: 0}, backed) == {GPU: 2}
    # A resource no class backs and the node does not list: "cannot fit resource".
    assert node_extended_resources({GPU: 1, "example.com/fpga": 1}, {}, backed) is None


def _pod() -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"namespace": "ns", "name": "p", "uid": "u-1"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]},
            "status": {},
        }
    )


def test_prebind_writes_as_data() -> None:
    pod = _pod()
    requests, mappings = requests_and_mappings(container_requests(pod.raw["spec"]), [GPU], {GPU: "gpu.example.com"}.get)
    body = ExtendedClaimCreation(pod, requests, mappings).body()
    assert body["metadata"]["generateName"] == "p-extended-resources-"
    assert body["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1", "controller": True}
    ]
    assert body["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
        }
    ]
    assert pod_status_patch(pod, "p-extended-resources-abcde", mappings) == {
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": [
                    {"containerName": "c", "resourceName": GPU, "requestName": "container-0-request-0"}
                ],
                "resourceClaimName": "p-extended-resources-abcde",
            }
        }
    }
    with pytest.raises(ValueError, match="nil or empty request mappings, no update of pod ns/p"):
        pod_status_patch(pod, "x", ())
    assert ContainerRequestMapping("c", GPU, "r").to_dict()["requestName"] == "r"
