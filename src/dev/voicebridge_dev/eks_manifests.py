"""The EKS manifests under ``deploy/eks/``, rendered as ``kubectl apply -k`` would, without the kustomize binary.

A kustomization here is the subset of kustomize's ``Kustomization`` (kustomize.config.k8s.io/v1beta1,
https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/) that the manifests use, read strictly:

- ``resources``: YAML files (one or more documents each) and folders holding a ``kustomization.yaml``, in order;
- ``images``: ``name`` → ``newName`` / ``newTag`` / ``digest`` on every container and init container of a pod
  template whose image has that name;
- ``patches``: JSON 6902 patches (RFC 6902: ``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``; paths are
  JSON Pointers, RFC 6901) inline (``patch``) or in a file (``path``), applied to the resources their ``target``
  selects by ``kind``, ``name``, ``namespace``, ``group`` and ``version``.

Anything else (another field, a strategic-merge patch, a target that selects nothing, two resources with one
identity) is an error, so what renders here renders the same under kustomize::

    resources = render(Path("deploy/eks/overlays/nlb"))
    print(to_yaml(resources))

Every value still reading ``REPLACE`` is an account value left to fill in: ``render`` refuses them unless asked not
to (``allow_placeholders``), naming each one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PLACEHOLDER = "REPLACE"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_FIELDS = {"apiVersion", "kind", "resources", "images", "patches"}
_TARGET_FIELDS = {"kind", "name", "namespace", "group", "version"}
_POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}
# What `kubectl apply -f` of the rendered stream needs first: the namespace, then what pods bind to.
_FIRST_KINDS = ("Namespace", "StorageClass", "PersistentVolume", "PersistentVolumeClaim", "ServiceAccount")


class KustomizationError(ValueError):
    """A kustomization, resource or patch this renderer does not accept, with where it is."""


class PlaceholderError(ValueError):
    """Values still reading REPLACE: the account's own values are not filled in yet."""

    def __init__(self, found: list[str]) -> None:
        self.found = found
        super().__init__("values still to fill in (REPLACE…): " + "; ".join(found))


@dataclass(frozen=True)
class Identity:
    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def identity(resource: dict[str, Any]) -> Identity:
    api_version = str(resource.get("apiVersion", ""))
    metadata = resource.get("metadata") or {}
    group = api_version.rpartition("/")[0]
    kind, namespace, name = resource.get("kind", ""), metadata.get("namespace", ""), metadata.get("name", "")
    return Identity(group, str(kind), str(namespace), str(name))


def render(folder: Path, *, allow_placeholders: bool = False) -> list[dict[str, Any]]:
    """The resources the kustomization in ``folder`` builds, in the order ``kubectl apply -f`` needs them."""
    resources = _build(folder.resolve(), ())
    if not allow_placeholders:
        found = [f"{identity(resource)}: {path}" for resource in resources for path in _placeholders(resource, "")]
        if found:
            raise PlaceholderError(found)
    first = {kind: index for index, kind in enumerate(_FIRST_KINDS)}
    return sorted(resources, key=lambda resource: first.get(str(resource.get("kind")), len(first)))


def to_yaml(resources: list[dict[str, Any]]) -> str:
    return "---\n".join(yaml.safe_dump(resource, sort_keys=False, width=120) for resource in resources)


def _build(folder: Path, stack: tuple[Path, ...]) -> list[dict[str, Any]]:
    if folder in stack:
        raise KustomizationError(f"{folder}: includes itself ({' -> '.join(p.name for p in stack)})")
    file = next((folder / name for name in KUSTOMIZATION_FILES if (folder / name).is_file()), None)
    if file is None:
        raise KustomizationError(f"{folder}: no kustomization.yaml")
    kustomization = _load_one(file)
    if not isinstance(kustomization, dict):
        raise KustomizationError(f"{file}: not a mapping")
    unknown = set(kustomization) - _FIELDS
    if unknown:
        raise KustomizationError(f"{file}: fields this renderer does not apply: {', '.join(sorted(unknown))}")
    if kustomization.get("kind", "Kustomization") != "Kustomization":
        raise KustomizationError(f"{file}: kind {kustomization.get('kind')} is not Kustomization")

    resources: list[dict[str, Any]] = []
    for entry in kustomization.get("resources") or []:
        path = (folder / str(entry)).resolve()
        if path.is_dir():
            resources.extend(_build(path, (*stack, folder)))
        elif path.is_file():
            resources.extend(_load_resources(path))
        else:
            raise KustomizationError(f"{file}: resource {entry} does not exist")
    seen: dict[Identity, None] = {}
    for resource in resources:
        key = identity(resource)
        if key in seen:
            raise KustomizationError(f"{file}: {key} is defined twice")
        seen[key] = None

    for patch in kustomization.get("patches") or []:
        _apply_patch(file, patch, resources)
    for image in kustomization.get("images") or []:
        _apply_image(file, image, resources)
    return resources


def _load_one(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise KustomizationError(f"{path}: not YAML: {exc}") from exc


def _load_resources(path: Path) -> list[dict[str, Any]]:
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]
    except yaml.YAMLError as exc:
        raise KustomizationError(f"{path}: not YAML: {exc}") from exc
    for doc in documents:
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
            raise KustomizationError(f"{path}: a document without apiVersion and kind")
        if not (doc.get("metadata") or {}).get("name"):
            raise KustomizationError(f"{path}: a {doc['kind']} without metadata.name")
    return documents


# --- patches


def _apply_patch(file: Path, entry: Any, resources: list[dict[str, Any]]) -> None:
    if not isinstance(entry, dict) or set(entry) - {"target", "patch", "path"}:
        raise KustomizationError(f"{file}: a patch takes target and patch (or path) only: {entry!r}")
    target = entry.get("target")
    if not isinstance(target, dict) or not target or set(target) - _TARGET_FIELDS:
        raise KustomizationError(f"{file}: a patch needs a target of {', '.join(sorted(_TARGET_FIELDS))}: {entry!r}")
    if ("patch" in entry) == ("path" in entry):
        raise KustomizationError(f"{file}: a patch has either patch or path")
    try:
        operations = yaml.safe_load(entry["patch"]) if "patch" in entry else _load_one(file.parent / entry["path"])
    except yaml.YAMLError as exc:
        raise KustomizationError(f"{file}: a patch is not YAML: {exc}") from exc
    if not isinstance(operations, list):
        raise KustomizationError(f"{file}: only JSON 6902 patches (a list of operations) are applied here")
    selected = [resource for resource in resources if _selects(target, resource)]
    if not selected:
        raise KustomizationError(f"{file}: the patch target {target} selects no resource")
    for resource in selected:
        patched = copy.deepcopy(resource)
        for operation in operations:
            try:
                patched = json_patch(patched, operation)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise KustomizationError(f"{file}: {identity(resource)}: {operation!r}: {exc}") from exc
        resource.clear()
        resource.update(patched)


def _selects(target: dict[str, Any], resource: dict[str, Any]) -> bool:
    api_version = str(resource.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    metadata = resource.get("metadata") or {}
    actual = {
        "kind": resource.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace", ""),
        "group": group,
        "version": version,
    }
    return all(actual[key] == value for key, value in target.items())


def json_patch(document: Any, operation: dict[str, Any]) -> Any:
    """``document`` with one RFC 6902 operation applied (the document is changed in place where it can be)."""
    op = operation.get("op")
    if op not in {"add", "remove", "replace", "move", "copy", "test"}:
        raise ValueError(f"unknown op {op!r}")
    path = _pointer(operation["path"])
    if op == "test":
        if _get(document, path) != operation["value"]:
            raise ValueError(f"test failed at {operation['path']}")
        return document
    if op in {"move", "copy"}:
        source = _pointer(operation["from"])
        value = copy.deepcopy(_get(document, source))
        if op == "move":
            document = _remove(document, source)
        return _add(document, path, value)
    if op == "remove":
        return _remove(document, path)
    if op == "replace":
        _get(document, path)
        document = _remove(document, path)
    return _add(document, path, copy.deepcopy(operation["value"]))


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise ValueError(f"{text!r} is not a JSON Pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _get(document: Any, path: list[str]) -> Any:
    for part in path:
        document = document[_index(document, part)] if isinstance(document, list) else document[part]
    return document


def _index(array: list[Any], part: str, *, insert: bool = False) -> int:
    if insert and part == "-":
        return len(array)
    if not part.isdigit() or (part != "0" and part.startswith("0")):
        raise ValueError(f"{part!r} is not an array index")
    index = int(part)
    if index > len(array) or (index == len(array) and not insert):
        raise IndexError(f"index {index} is past the array's end")
    return index


def _add(document: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1])
    if isinstance(parent, list):
        parent.insert(_index(parent, path[-1], insert=True), value)
    elif isinstance(parent, dict):
        parent[path[-1]] = value
    else:
        raise TypeError(f"/{'/'.join(path[:-1])} holds no object or array")
    return document


def _remove(document: Any, path: list[str]) -> Any:
    if not path:
        raise ValueError("the whole document cannot be removed")
    parent = _get(document, path[:-1])
    if isinstance(parent, list):
        del parent[_index(parent, path[-1])]
    else:
        del parent[path[-1]]
    return document


# --- images


def _apply_image(file: Path, entry: Any, resources: list[dict[str, Any]]) -> None:
    if not isinstance(entry, dict) or "name" not in entry or set(entry) - {"name", "newName", "newTag", "digest"}:
        raise KustomizationError(f"{file}: an image takes name, newName, newTag, digest: {entry!r}")
    for container in _containers(resources):
        name, tag, digest = _split_image(str(container.get("image", "")))
        if name != entry["name"]:
            continue
        name = str(entry.get("newName", name))
        if "digest" in entry:
            container["image"] = f"{name}@{entry['digest']}"
        elif "newTag" in entry:
            container["image"] = f"{name}:{entry['newTag']}"
        else:
            container["image"] = name + (f"@{digest}" if digest else f":{tag}" if tag else "")


def _containers(resources: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for resource in resources:
        path = _POD_TEMPLATE_PATHS.get(str(resource.get("kind")))
        if path is None:
            continue
        spec: Any = resource
        for key in path:
            spec = spec.get(key) if isinstance(spec, dict) else None
        if isinstance(spec, dict):
            for key in ("initContainers", "containers"):
                yield from spec.get(key) or []


def _split_image(image: str) -> tuple[str, str, str]:
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :], digest
    return name, "", digest


def _placeholders(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _placeholders(item, f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _placeholders(item, f"{path}/{index}")
    elif isinstance(value, str) and PLACEHOLDER in value:
        yield path
