"""Strict decoding of a KubeSchedulerConfiguration: unknown and duplicate fields are errors.

kube-scheduler's codec is built with ``serializer.EnableStrict`` (``apis/config/scheme``), so a typo
such as ``plugin:`` for ``plugins:`` stops it instead of silently leaving a plugin enabled. The field
tree below is the v1 API (``k8s.io/kube-scheduler/config/v1``, component-base's ``v1alpha1``
LeaderElection/ClientConnection/Debugging, core/v1 types inside plugin args); messages and their
order are apimachinery's: YAML duplicate keys (``yaml.YAMLToJSONStrict``), then unknown fields
(``sigs.k8s.io/json``, case-sensitive, path like ``profiles[0].plugin``), then the args of each
``pluginConfig`` entry (``PluginConfig.decodeNestedObjects``). Pure: text in, errors out.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from scheduler.boundedyaml import BoundedLoader, load_single
from scheduler.framework.runtime import EXTENSION_POINTS
from scheduler.plugins import names
from scheduler.plugins.registry import REGISTRY

__all__ = [
    "PLUGIN_ARGS",
    "ArgsKindError",
    "load_yaml_strict",
    "strict_errors",
]


@dataclass(frozen=True, slots=True)
class ListOf:
    """A JSON array whose items have ``item``'s shape."""

    item: Shape


# A struct's fields, a list of structs, or None: a value whose keys are not fields (a scalar, a
# ``map[string]string`` such as matchLabels, a list of strings, or a plugin's raw args).
Shape = Mapping[str, "Shape"] | ListOf | None


def _struct(*leaves: str, **nested: Shape) -> dict[str, Shape]:
    return {**dict.fromkeys(leaves), **nested}


_TYPE_META = ("apiVersion", "kind")

_PLUGIN = _struct("name", "weight")
_PLUGIN_SET = _struct(enabled=ListOf(_PLUGIN), disabled=ListOf(_PLUGIN))
_PLUGINS = _struct(**dict.fromkeys((*EXTENSION_POINTS, "multiPoint"), _PLUGIN_SET))
# ``args`` is a RawExtension here; its fields are checked per plugin, against PLUGIN_ARGS.
_PROFILE = _struct(
    "schedulerName",
    "percentageOfNodesToScore",
    plugins=_PLUGINS,
    pluginConfig=ListOf(_struct("name", "args")),
)
_EXTENDER = _struct(
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "httpTimeout",
    "nodeCacheCapable",
    "ignorable",
    tlsConfig=_struct("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"),
    managedResources=ListOf(_struct("name", "ignoredByScheduler")),
)
KUBE_SCHEDULER_CONFIGURATION = _struct(
    *_TYPE_META,
    "parallelism",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "delayCacheUntilActive",
    "enableProfiling",  # DebuggingConfiguration, inlined
    "enableContentionProfiling",
    leaderElection=_struct(
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceLock",
        "resourceName",
        "resourceNamespace",
    ),
    clientConnection=_struct("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"),
    profiles=ListOf(_PROFILE),
    extenders=ListOf(_EXTENDER),
)

# core/v1 and meta/v1 types that plugin args embed.
_LABEL_SELECTOR = _struct("matchLabels", matchExpressions=ListOf(_struct("key", "operator", "values")))
_NODE_SELECTOR_TERM = _struct(
    matchExpressions=ListOf(_struct("key", "operator", "values")),
    matchFields=ListOf(_struct("key", "operator", "values")),
)
_NODE_AFFINITY = _struct(
    requiredDuringSchedulingIgnoredDuringExecution=_struct(nodeSelectorTerms=ListOf(_NODE_SELECTOR_TERM)),
    preferredDuringSchedulingIgnoredDuringExecution=ListOf(_struct("weight", preference=_NODE_SELECTOR_TERM)),
)
_TOPOLOGY_SPREAD_CONSTRAINT = _struct(
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
    labelSelector=_LABEL_SELECTOR,
)
_RESOURCE_SPEC = _struct("name", "weight")
_SHAPE_POINT = _struct("utilization", "score")

# The v1 ``<Plugin>Args`` types (types_pluginargs.go, DynamicResourcesArgs in types.go). A plugin we
# ship without an args type takes only TypeMeta: upstream skips decoding such args and ignores them,
# we refuse their fields, since a field there can only be a mistake (docs/configuration.md).
PLUGIN_ARGS: Mapping[str, Mapping[str, Shape]] = {
    names.DEFAULT_PREEMPTION: _struct(*_TYPE_META, "minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    names.INTER_POD_AFFINITY: _struct(*_TYPE_META, "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    names.NODE_RESOURCES_FIT: _struct(
        *_TYPE_META,
        "ignoredResources",
        "ignoredResourceGroups",
        scoringStrategy=_struct(
            "type",
            resources=ListOf(_RESOURCE_SPEC),
            requestedToCapacityRatio=_struct(shape=ListOf(_SHAPE_POINT)),
        ),
    ),
    names.POD_TOPOLOGY_SPREAD: _struct(
        *_TYPE_META, "defaultingType", defaultConstraints=ListOf(_TOPOLOGY_SPREAD_CONSTRAINT)
    ),
    names.NODE_RESOURCES_BALANCED_ALLOCATION: _struct(*_TYPE_META, resources=ListOf(_RESOURCE_SPEC)),
    names.VOLUME_BINDING: _struct(*_TYPE_META, "bindTimeoutSeconds", shape=ListOf(_SHAPE_POINT)),
    names.NODE_AFFINITY: _struct(*_TYPE_META, addedAffinity=_NODE_AFFINITY),
    names.DYNAMIC_RESOURCES: _struct(*_TYPE_META, "filterTimeout", "bindingTimeout"),
}
_NO_ARGS_TYPE = _struct(*_TYPE_META)
_GROUP = "kubescheduler.config.k8s.io"


class ArgsKindError(ValueError):
    """``args.kind`` names another plugin's args type: upstream's non-strict (fatal) decoding error."""


def _unknown_fields(value: object, shape: Shape, path: str, out: list[str]) -> None:
    """Append ``unknown field "<path>"`` for every key ``shape`` does not have, depth first.

    Keys are visited sorted, as upstream meets them: sigs.k8s.io/yaml turns the YAML into JSON through
    a Go map, which json.Marshal writes sorted, before the strict JSON decoder walks it.
    """
    if isinstance(shape, ListOf):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _unknown_fields(item, shape.item, f"{path}[{i}]", out)
        return
    if shape is None or not isinstance(value, Mapping):
        return  # a leaf, or a wrong type that validation names later
    for key, item in sorted(value.items(), key=lambda kv: str(kv[0])):  # YAMLToJSON sorts keys
        field = f"{path}.{key}" if path else str(key)
        if key not in shape:
            out.append(f"unknown field {_go_quote(field)}")
        else:
            _unknown_fields(item, shape[key], field, out)


def _go_quote(text: str) -> str:
    """``strconv.Quote`` for the printable strings field names are."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _args_errors(doc: Mapping[str, Any]) -> list[str]:
    """``KubeSchedulerConfiguration.DecodeNestedObjects``: each pluginConfig's args against its plugin's type.

    Names we do not know are left to validation (upstream skips out-of-tree args the same way).
    """
    errors: list[str] = []
    profiles = doc.get("profiles")
    for i, profile in enumerate(profiles if isinstance(profiles, list) else []):
        configs = profile.get("pluginConfig") if isinstance(profile, Mapping) else None
        for j, entry in enumerate(configs if isinstance(configs, list) else []):
            if not isinstance(entry, Mapping):
                continue
            name, args = entry.get("name"), entry.get("args")
            if not isinstance(name, str) or name not in REGISTRY or not isinstance(args, Mapping):
                continue
            kind = args.get("kind")
            if kind is not None and kind != f"{name}Args":
                raise ArgsKindError(
                    f"decoding .profiles[{i}].pluginConfig[{j}]: args for plugin {name} were not of type "
                    f"{name}Args.{_GROUP}, got {kind}.{_GROUP}"
                )
            unknown: list[str] = []
            _unknown_fields(args, PLUGIN_ARGS.get(name, _NO_ARGS_TYPE), "", unknown)
            if unknown:
                errors.append(
                    f"decoding .profiles[{i}].pluginConfig[{j}]: strict decoding error: "
                    f"decoding args for plugin {name}: strict decoding error: {', '.join(unknown)}"
                )
    return errors


def strict_errors(doc: object) -> list[str]:
    """Unknown fields of the configuration, then of each plugin's args, in upstream's wording.

    Raises ``ArgsKindError`` when args name another type (upstream fails on that before strictness).
    """
    if not isinstance(doc, Mapping):
        return []
    errors: list[str] = []
    _unknown_fields(doc, KUBE_SCHEDULER_CONFIGURATION, "", errors)
    return errors + _args_errors(doc)


class _StrictLoader(BoundedLoader):
    """The bounded SafeLoader, recording each repeated mapping key as go-yaml's strict mode reports it."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges keys; that is not a repeat
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                shown = _go_quote(key) if isinstance(key, str) else repr(key)
                line = key_node.start_mark.line + 1
                self.duplicates.append((line, f"line {line}: key {shown} already set in map"))
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml_strict(text: str) -> tuple[object, list[str]]:
    """The document (the last value of a repeated key wins, as in YAMLToJSON) and the duplicate-key errors.

    The errors come as one entry, as ``YAMLToJSONStrict`` returns them: ``yaml: unmarshal errors:``
    followed by one indented line per repeated key. Raises ``ReadError`` (one line) for YAML that is
    not a document within ``scheduler.boundedyaml``'s bounds.
    """
    doc, loader = load_single(text, _StrictLoader)
    if not loader.duplicates:
        return doc, []
    return doc, ["yaml: unmarshal errors:\n  " + "\n  ".join(msg for _, msg in sorted(loader.duplicates))]
