"""validate(doc): a manifest checked against its API schema, one line naming the bad field.

Core objects (Pod) go through the PyPI `kubernetes` models: V1Pod.from_dict catches a missing required field and a
wrong type, a round trip (ApiClient.sanitize_for_serialization) catches unknown or misspelled keys (from_dict drops
them silently), every resource quantity goes through kubernetes.utils.parse_quantity, and the rules the API server
adds on top (enumerations, hugepages and extended resources with requests = limits) are checked here. The CRDs
(NetworkAttachmentDefinition, SriovNetworkNodePolicy, PerformanceProfile) are not in those models: their JSON
schemas are in crd.py, written from the upstream type definitions, and checked with jsonschema.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, get_args, get_origin

from pydantic import AliasChoices, BaseModel, ValidationError

from zeroloss.core.codec import Json, Record
from zeroloss.core.errors import ZeroLossError

from .crd import SCHEMAS
from .manifest import Manifest, Pod, PodSpecDoc, Resources

REMEDY = "fix the manifest's field (Kubernetes API reference)"
# Kubernetes API enumerations the generated models leave as plain strings (core/v1 types.go)
ENUMS = {
    "restartPolicy": ("Always", "OnFailure", "Never"),
    "imagePullPolicy": ("Always", "Never", "IfNotPresent"),
    "hostPath.type": ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
                      "BlockDevice"),
    "terminationMessagePolicy": ("File", "FallbackToLogsOnError"),
}
MEDIUM = re.compile(r"(|Memory|HugePages|HugePages-[0-9]+[KMG]i)")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
NATIVE = ("cpu", "memory", "ephemeral-storage")  # other names are hugepages-<size> or extended (domain/name)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelFault(Record):
    """One error of a pydantic ValidationError (its errors() entries): where (loc), what (msg), the value given."""
    loc: Json = ()
    msg: Json = None
    input: Json = None


def _first_fault(err: ValidationError) -> ModelFault:
    return ModelFault.from_json(err.errors()[0])


def _fail(kind: str, name: str, path: str, what: str) -> ZeroLossError:
    return ZeroLossError(f"{kind} '{name}': {path}: {what}", REMEDY)


def _first_extra(doc: Any, known: Any, path: str) -> str | None:
    """The path of the first key in doc that the round trip lost (an unknown or misspelled field)."""
    if isinstance(doc, dict) and isinstance(known, dict):
        for key, value in doc.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in known:
                return sub
            found = _first_extra(value, known[key], sub)
            if found:
                return found
    elif isinstance(doc, list) and isinstance(known, list):
        for i, (value, kept) in enumerate(zip(doc, known, strict=False)):
            found = _first_extra(value, kept, f"{path}[{i}]")
            if found:
                return found
    return None


def _quantity(text: Any, kind: str, name: str, path: str) -> Decimal:
    from kubernetes.utils import parse_quantity  # the models take half a second to import: only when checking

    if not isinstance(text, str | int):
        raise _fail(kind, name, path, f"{text!r} is not a quantity")
    try:
        value: Decimal = parse_quantity(text)  # type: ignore[no-untyped-call]
    except ValueError:
        raise _fail(kind, name, path, f"'{text}' is not a quantity (e.g. 2, 500m, 1024Mi, 1Gi)") from None
    if value < 0:
        raise _fail(kind, name, path, f"'{text}' is negative")
    return value


def _check_resources(res: Resources, kind: str, name: str, path: str) -> None:
    parsed = [(part, {key: _quantity(text, kind, name, f"{path}.{part}.{key}") for key, text in (given or {}).items()})
              for part, given in (("requests", res.requests), ("limits", res.limits))]
    requests, limits = parsed[0][1], parsed[1][1]
    for key in requests.keys() | limits.keys():
        where = f"{path}.requests.{key}"
        if key.startswith("hugepages-"):
            size = _quantity(key.removeprefix("hugepages-"), kind, name, f"{path}.limits.{key} (page size)")
            for part, values in parsed:
                if key in values and values[key] % size:
                    raise _fail(kind, name, f"{path}.{part}.{key}", "not a multiple of the page size")
        if key not in NATIVE and key not in limits:
            raise _fail(kind, name, f"{path}.limits.{key}", "hugepages and extended resources need a limit")
        if key not in NATIVE and key in requests and requests[key] != limits[key]:
            raise _fail(kind, name, where, "must equal the limit (hugepages and extended resources)")
        if key in NATIVE and key in requests and key in limits and requests[key] > limits[key]:
            raise _fail(kind, name, where, "is above the limit")
    if any(k.startswith("hugepages-") for k in limits) and not ({"cpu", "memory"} & (limits.keys() | requests.keys())):
        raise _fail(kind, name, path, "a container with hugepages must request cpu or memory")


def _model_nodes(node: Any, cls: type[BaseModel], path: str) -> Iterator[tuple[str, type[BaseModel], Any]]:
    """Every (path, model class, dict) in node, following the model's field types (Optional, List, Dict)."""
    yield path, cls, node
    if not isinstance(node, dict):
        return
    fields: dict[str, Any] = {}
    for attr, info in cls.model_fields.items():
        alias = info.validation_alias
        for key in (alias.choices if isinstance(alias, AliasChoices) else [attr]):
            fields[str(key)] = info.annotation
    for key, value in node.items():
        yield from _typed(value, fields.get(key), f"{path}{key}")


def _typed(value: Any, hint: Any, path: str) -> Iterator[tuple[str, type[BaseModel], Any]]:
    args = [a for a in get_args(hint) if a is not type(None)]
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        yield from _model_nodes(value, hint, path + ".")
    elif get_origin(hint) is list and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _typed(item, args[0], f"{path}[{i}]")
    elif get_origin(hint) is dict and isinstance(value, dict):
        for key, item in value.items():
            yield from _typed(item, args[-1], f"{path}.{key}")
    elif len(args) == 1 and get_origin(hint) is not None:  # Optional[X]
        yield from _typed(value, args[0], path)


def _locate(doc: dict[str, Any], root: type[BaseModel], title: str, loc: tuple[Any, ...]) -> str:
    """The path ('spec.containers[0].') of the first object of model `title` whose own validation fails at loc:
    pydantic names the innermost model and the field in it, not where that model sits in the document."""
    for path, cls, node in _model_nodes(doc, root, ""):
        if cls.__name__ == title and isinstance(node, dict):
            try:
                cls.model_validate(node)
            except ValidationError as err:
                if _first_fault(err).loc == loc:
                    return path
    return f"({title}) "


def _check_model(doc: dict[str, Any], model: str, kind: str, name: str, prefix: str) -> None:
    """doc deserialized into the kubernetes model (missing required fields, wrong types), then serialized back:
    a key the round trip lost is unknown to the API (from_dict drops it silently)."""
    import kubernetes.client.models as models
    from kubernetes.client.api_client import ApiClient

    cls: type[BaseModel] = getattr(models, model)
    try:
        obj = cls.from_dict(doc)  # type: ignore[attr-defined]
    except ValidationError as err:
        first = _first_fault(err)
        loc = ".".join(str(p) for p in first.loc)
        what = ("required, missing" if first.input is None else
                f"{first.msg} (got {first.input!r})".replace("\n", " ")[:200])
        raise _fail(kind, name, prefix + _locate(doc, cls, err.title, first.loc) + loc, what) from None
    kept = ApiClient().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    extra = _first_extra(doc, kept, "")
    if extra:
        raise _fail(kind, name, prefix + extra, "unknown field")


def _check_pod(doc: dict[str, Any]) -> None:

    manifest = Manifest.from_json(doc)
    name = manifest.name
    if not isinstance(manifest.metadata, dict) or not DNS_SUBDOMAIN.fullmatch(name) or len(name) > 253:
        raise _fail("Pod", name, "metadata.name", "missing or not a DNS subdomain (lower case, digits, '-', '.')")
    _check_model(doc, "V1Pod", "Pod", name, "")
    spec = Pod.from_json(doc).spec or PodSpecDoc()  # the model check above held: the shapes are the API's
    if not spec.containers:
        raise _fail("Pod", name, "spec.containers", "at least one container is required")
    _enum(spec.to_json(), "restartPolicy", name, "spec.restartPolicy")
    for i, vol in enumerate(spec.volumes or ()):
        path = f"spec.volumes[{i}]"
        if not DNS_LABEL.fullmatch(vol.name):
            raise _fail("Pod", name, f"{path}.name", f"'{vol.name}' is not a DNS label")
        if vol.host_path is not None:
            _enum(vol.host_path, "type", name, f"{path}.hostPath.type", "hostPath.type")
        medium = vol.empty_dir.medium if vol.empty_dir else ""
        if not MEDIUM.fullmatch(medium):
            raise _fail("Pod", name, f"{path}.emptyDir.medium", f"'{medium}' is not '', Memory or HugePages[-<size>]")
    names = {v.name for v in spec.volumes or ()}
    for i, ctr in enumerate(spec.containers):
        path = f"spec.containers[{i}]"
        if not DNS_LABEL.fullmatch(ctr.name):
            raise _fail("Pod", name, f"{path}.name", f"'{ctr.name}' is not a DNS label")
        _enum(ctr.to_json(), "imagePullPolicy", name, f"{path}.imagePullPolicy")
        _enum(ctr.to_json(), "terminationMessagePolicy", name, f"{path}.terminationMessagePolicy")
        _check_resources(ctr.resources or Resources(), "Pod", name, f"{path}.resources")
        for j, mount in enumerate(ctr.volume_mounts or ()):
            if mount.name not in names:
                raise _fail("Pod", name, f"{path}.volumeMounts[{j}].name", f"no volume '{mount.name}'")


def _enum(obj: dict[str, Any], key: str, name: str, path: str, enum: str = "") -> None:
    allowed = ENUMS[enum or key]
    if key in obj and obj[key] not in allowed:
        raise _fail("Pod", name, path, f"'{obj[key]}' is not one of {', '.join(a or repr(a) for a in allowed)}")


def _check_crd(doc: dict[str, Any], schema: dict[str, Any]) -> None:
    import jsonschema

    manifest = Manifest.from_json(doc)
    kind, name = str(manifest.kind), manifest.name
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(doc))
    if error is not None:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
        raise _fail(kind, name, path or "(document)", error.message.replace("\n", " ")[:200])
    _check_model(manifest.metadata, "V1ObjectMeta", kind, name, "metadata.")
    check = SCHEMAS[(str(manifest.api_version), kind)][1]
    if check is not None:
        fault = check(doc)
        if fault:
            raise _fail(kind, name, fault[0], fault[1])


def validate(doc: dict[str, Any]) -> None:
    """Raise ZeroLossError (one line: kind, name, the field's path, what is wrong) unless doc is a valid Pod,
    NetworkAttachmentDefinition, SriovNetworkNodePolicy or PerformanceProfile."""
    if not isinstance(doc, dict):
        raise ZeroLossError(f"a manifest is a mapping, not {type(doc).__name__}", REMEDY)
    manifest = Manifest.from_json(doc)
    key = (str(manifest.api_version), str(manifest.kind))
    if key == ("v1", "Pod"):
        _check_pod(doc)
    elif key in SCHEMAS:
        _check_crd(doc, SCHEMAS[key][0])
    else:
        known = ", ".join(f"{k} ({a})" for a, k in [("v1", "Pod"), *SCHEMAS])
        raise ZeroLossError(f"no schema for apiVersion '{key[0]}' kind '{key[1]}'", f"zeroloss checks {known}")
