"""The Python `kubernetes` client against a running apiary.

Usage: client_test.py <kubeconfig> <namespace>

Loads the kubeconfig apiary wrote, then drives ConfigMaps through CoreV1Api (create, read,
list with selectors, watch with kubernetes.watch.Watch, a 409 on a stale update) and Widgets
through kubernetes.dynamic.DynamicClient (create, get, list, patch, server-side apply, the
status subresource, delete) and CustomObjectsApi (CRUD, watch, scale, status, versions). Every failed check is printed; the exit code is 1 when a check
failed and 2 when a step raised.
"""

import json
import os
import sys
import tempfile
import threading
import time
import traceback

import kubernetes
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import NotFoundError

FAILURES = []


def check(cond, message):
    """Records message as a failure unless cond holds."""
    if not cond:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)


def status_of(exc):
    """The decoded Status body of an ApiException."""
    try:
        return json.loads(exc.body)
    except (TypeError, ValueError):
        return {}


def core_v1(ns):
    """CoreV1Api: namespaces and ConfigMaps."""
    v1 = client.CoreV1Api()
    created_ns = v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    check(created_ns.metadata.name == ns, f"namespace name: {created_ns.metadata.name}")
    check(created_ns.status.phase == "Active", f"namespace phase: {created_ns.status.phase}")
    names = [n.metadata.name for n in v1.list_namespace().items]
    for expected in (ns, "default", "kube-system", "kube-public"):
        check(expected in names, f"namespace {expected} missing from {names}")

    cm = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="settings", labels={"app": "py"}),
        data={"color": "blue"},
    )
    created = v1.create_namespaced_config_map(ns, cm)
    check(created.metadata.uid, "created ConfigMap has no uid")
    check(created.metadata.resource_version.isdigit(), f"resourceVersion: {created.metadata.resource_version}")
    check(created.data == {"color": "blue"}, f"created data: {created.data}")
    v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="other", labels={"app": "other"}), data={"a": "1"})
    )

    read = v1.read_namespaced_config_map("settings", ns)
    check(read.data == {"color": "blue"}, f"read data: {read.data}")
    listed = v1.list_namespaced_config_map(ns)
    check(sorted(i.metadata.name for i in listed.items) == ["other", "settings"], f"list: {[i.metadata.name for i in listed.items]}")
    check(listed.metadata.resource_version.isdigit(), f"list resourceVersion: {listed.metadata.resource_version}")
    selected = v1.list_namespaced_config_map(ns, label_selector="app=py")
    check([i.metadata.name for i in selected.items] == ["settings"], f"label selector: {[i.metadata.name for i in selected.items]}")
    # A label selector of about 100 KB (a request URI over the 64 KiB of hyper and the http
    # crate; the client speaks HTTP/1.1).
    values = ",".join(f"v{i:05}" for i in range(11200)) + ",py"
    long_selector = f"app in ({values})"
    long_selected = v1.list_namespaced_config_map(ns, label_selector=long_selector)
    check([i.metadata.name for i in long_selected.items] == ["settings"], f"long label selector: {[i.metadata.name for i in long_selected.items]}")
    by_field = v1.list_namespaced_config_map(ns, field_selector="metadata.name=other")
    check([i.metadata.name for i in by_field.items] == ["other"], f"field selector: {[i.metadata.name for i in by_field.items]}")
    everywhere = v1.list_config_map_for_all_namespaces(label_selector="app=py")
    check(any(i.metadata.namespace == ns for i in everywhere.items), "list for all namespaces misses the ConfigMap")
    page = v1.list_namespaced_config_map(ns, limit=1)
    check(len(page.items) == 1 and page.metadata._continue, f"limit=1 page: {len(page.items)} items, continue {page.metadata._continue!r}")
    rest = v1.list_namespaced_config_map(ns, limit=1, _continue=page.metadata._continue)
    check(len(rest.items) == 1 and not rest.metadata._continue, "second page")

    # A stale update is refused with 409 Conflict.
    stale = v1.read_namespaced_config_map("settings", ns)
    fresh = v1.read_namespaced_config_map("settings", ns)
    fresh.data["color"] = "green"
    updated = v1.replace_namespaced_config_map("settings", ns, fresh)
    check(updated.data["color"] == "green", f"replace: {updated.data}")
    check(int(updated.metadata.resource_version) > int(stale.metadata.resource_version), "replace did not move resourceVersion")
    stale.data["color"] = "red"
    try:
        v1.replace_namespaced_config_map("settings", ns, stale)
        check(False, "a stale update succeeded")
    except ApiException as e:
        body = status_of(e)
        check(e.status == 409, f"stale update status {e.status}")
        check(body.get("reason") == "Conflict", f"stale update reason: {body}")
        check(
            "the object has been modified; please apply your changes to the latest version and try again" in body.get("message", ""),
            f"stale update message: {body.get('message')}",
        )
        check(body.get("kind") == "Status" and body.get("code") == 409, f"stale update body: {body}")

    try:
        v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings")))
        check(False, "creating an existing ConfigMap succeeded")
    except ApiException as e:
        check(e.status == 409 and status_of(e).get("reason") == "AlreadyExists", f"duplicate create: {e.status} {e.body}")
    try:
        v1.read_namespaced_config_map("missing", ns)
        check(False, "reading a missing ConfigMap succeeded")
    except ApiException as e:
        body = status_of(e)
        check(e.status == 404 and body.get("reason") == "NotFound", f"missing read: {e.status} {e.body}")
        check(body.get("message") == 'configmaps "missing" not found', f"missing message: {body.get('message')}")

    patched = v1.patch_namespaced_config_map("settings", ns, {"data": {"size": "3"}})
    check(patched.data == {"color": "green", "size": "3"}, f"strategic patch: {patched.data}")

    # Watch from the list's resourceVersion sees ADDED, MODIFIED, DELETED in order.
    start = v1.list_namespaced_config_map(ns).metadata.resource_version

    def mutate():
        time.sleep(0.5)
        v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="watched"), data={"n": "1"}))
        v1.patch_namespaced_config_map("watched", ns, {"data": {"n": "2"}})
        v1.delete_namespaced_config_map("watched", ns)

    writer = threading.Thread(target=mutate)
    writer.start()
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=20):
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, (obj.data or {}).get("n")))
        if event["type"] == "DELETED" and obj.metadata.name == "watched":
            w.stop()
    writer.join()
    expected = [("ADDED", "watched", "1"), ("MODIFIED", "watched", "2"), ("DELETED", "watched", "2")]
    check(seen == expected, f"watch events: {seen}")

    # A watch with a label selector and a short timeout ends by itself.
    began = time.time()
    quiet = list(watch.Watch().stream(v1.list_namespaced_config_map, ns, label_selector="app=none", timeout_seconds=2))
    check(quiet == [], f"selector watch events: {quiet}")
    check(time.time() - began < 15, "timeout_seconds=2 watch did not end")
    print("PASS: CoreV1Api", flush=True)


def dynamic_widgets(ns):
    """The dynamic client on Widgets."""
    cache = os.path.join(tempfile.mkdtemp(), "discovery.json")
    dyn = dynamic.DynamicClient(client.ApiClient(), cache_file=cache)
    widgets = dyn.resources.get(api_version="example.dev/v1", kind="Widget")
    check(widgets.namespaced, "Widget is not namespaced")
    check(widgets.name == "widgets", f"resource name: {widgets.name}")
    check("wd" in (widgets.short_names or []), f"short names: {widgets.short_names}")

    body = {
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "py", "labels": {"lang": "python"}},
        "spec": {"replicas": 2, "color": "blue"},
    }
    created = widgets.create(body=body, namespace=ns)
    check(created.metadata.name == "py" and created.metadata.namespace == ns, f"created: {created.metadata}")
    check(created.spec.replicas == 2, f"created spec: {created.spec}")
    check(created.metadata.generation == 1, f"generation: {created.metadata.generation}")
    widgets.create(body={**body, "metadata": {"name": "py2"}, "spec": {"replicas": 1}}, namespace=ns)

    got = widgets.get(name="py", namespace=ns)
    check(got.spec.color == "blue", f"get: {got.spec}")
    listed = widgets.get(namespace=ns)
    check(listed.kind == "WidgetList", f"list kind: {listed.kind}")
    check(sorted(i.metadata.name for i in listed.items) == ["py", "py2"], f"list: {[i.metadata.name for i in listed.items]}")
    selected = widgets.get(namespace=ns, label_selector="lang=python")
    check([i.metadata.name for i in selected.items] == ["py"], f"selected: {[i.metadata.name for i in selected.items]}")

    patched = widgets.patch(
        body={"spec": {"replicas": 5}}, name="py", namespace=ns, content_type="application/merge-patch+json"
    )
    check(patched.spec.replicas == 5 and patched.spec.color == "blue", f"merge patch: {patched.spec}")
    check(patched.metadata.generation == 2, f"generation after patch: {patched.metadata.generation}")
    jsonpatched = widgets.patch(
        body=[{"op": "replace", "path": "/spec/color", "value": "green"}],
        name="py",
        namespace=ns,
        content_type="application/json-patch+json",
    )
    check(jsonpatched.spec.color == "green", f"json patch: {jsonpatched.spec}")
    try:
        widgets.patch(body={"spec": {"replicas": 6}}, name="py", namespace=ns)
        check(False, "a strategic merge patch of a Widget succeeded")
    except ApiException as e:
        check(e.status == 415, f"strategic patch status {e.status}: {e.body}")

    applied = widgets.server_side_apply(
        body={"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "py"}, "spec": {"replicas": 7}},
        namespace=ns,
        field_manager="python",
        force_conflicts=True,
    )
    check(applied.spec.replicas == 7, f"server-side apply: {applied.spec}")
    managers = [m.manager for m in applied.metadata.managedFields]
    check("python" in managers, f"managers: {managers}")

    status = widgets.status.patch(
        body={"status": {"replicas": 3, "selector": "app=py"}},
        name="py",
        namespace=ns,
        content_type="application/merge-patch+json",
    )
    check(status.status.replicas == 3, f"status patch: {status.status}")
    check(status.spec.replicas == 7, f"status patch changed spec: {status.spec}")

    try:
        widgets.create(body={**body, "metadata": {"name": "bad"}, "spec": {"replicas": -1}}, namespace=ns)
        check(False, "an invalid Widget was created")
    except ApiException as e:
        s = status_of(e)
        check(e.status == 422 and s.get("reason") == "Invalid", f"invalid create: {e.status} {e.body}")
        causes = (s.get("details") or {}).get("causes") or []
        check(
            any(c.get("field") == "spec.replicas" and c.get("reason") == "FieldValueInvalid" for c in causes),
            f"invalid causes: {causes}",
        )

    alpha = dyn.resources.get(api_version="example.dev/v1alpha1", kind="Widget")
    old = alpha.get(name="py", namespace=ns)
    check(old.apiVersion == "example.dev/v1alpha1" and old.spec.size == 7, f"v1alpha1 read: {old}")

    deleted = widgets.delete(name="py2", namespace=ns)
    check(deleted.kind == "Status" and deleted.status == "Success", f"delete: {deleted}")
    try:
        widgets.get(name="py2", namespace=ns)
        check(False, "a deleted Widget is still readable")
    except NotFoundError:
        pass
    widgets.delete(name="py", namespace=ns)
    check(widgets.get(namespace=ns).items == [], "widgets left after deleting")
    print("PASS: DynamicClient", flush=True)


def custom_objects(ns):
    """CustomObjectsApi, the usual way Python code reaches custom resources, on Widgets."""
    api = client.CustomObjectsApi()
    group, version, plural = "example.dev", "v1", "widgets"
    body = {
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "custom", "labels": {"via": "custom-objects"}},
        "spec": {"replicas": 1},
    }
    created = api.create_namespaced_custom_object(group, version, ns, plural, body)
    check(created["spec"] == {"replicas": 1}, f"custom create: {created}")
    got = api.get_namespaced_custom_object(group, version, ns, plural, "custom")
    check(got["metadata"]["uid"] == created["metadata"]["uid"], "custom get uid")
    listed = api.list_namespaced_custom_object(group, version, ns, plural, label_selector="via=custom-objects")
    check([i["metadata"]["name"] for i in listed["items"]] == ["custom"], f"custom list: {listed}")
    everywhere = api.list_cluster_custom_object(group, version, plural)
    check(any(i["metadata"]["name"] == "custom" for i in everywhere["items"]), "cluster-wide custom list")

    start = listed["metadata"]["resourceVersion"]

    def mutate():
        time.sleep(0.5)
        api.patch_namespaced_custom_object(group, version, ns, plural, "custom", {"spec": {"replicas": 2}})
        api.patch_namespaced_custom_object(
            group,
            version,
            ns,
            plural,
            "custom",
            [{"op": "add", "path": "/spec/color", "value": "blue"}],
            _content_type="application/json-patch+json",
        )
        api.delete_namespaced_custom_object(group, version, ns, plural, "custom")

    writer = threading.Thread(target=mutate)
    writer.start()
    seen = []
    w = watch.Watch()
    for event in w.stream(
        api.list_namespaced_custom_object, group, version, ns, plural, resource_version=start, timeout_seconds=20
    ):
        obj = event["object"]
        seen.append((event["type"], obj["metadata"]["name"], obj["spec"].get("replicas"), obj["spec"].get("color")))
        if event["type"] == "DELETED":
            w.stop()
    writer.join()
    expected = [("MODIFIED", "custom", 2, None), ("MODIFIED", "custom", 2, "blue"), ("DELETED", "custom", 2, "blue")]
    check(seen == expected, f"custom watch events: {seen}")

    api.create_namespaced_custom_object(group, version, ns, plural, {**body, "spec": {"replicas": 3}})
    scale = api.get_namespaced_custom_object_scale(group, version, ns, plural, "custom")
    check(scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3, f"custom scale: {scale}")
    api.patch_namespaced_custom_object_scale(group, version, ns, plural, "custom", {"spec": {"replicas": 8}})
    status = api.patch_namespaced_custom_object_status(group, version, ns, plural, "custom", {"status": {"replicas": 8}})
    check(status["spec"]["replicas"] == 8 and status["status"]["replicas"] == 8, f"custom status: {status}")
    alpha = api.get_namespaced_custom_object(group, "v1alpha1", ns, plural, "custom")
    check(alpha["apiVersion"] == "example.dev/v1alpha1" and alpha["spec"]["size"] == 8, f"custom v1alpha1: {alpha}")
    try:
        api.create_namespaced_custom_object(group, version, ns, plural, {**body, "spec": {"replicas": 200, "color": "red"}})
        check(False, "a red widget with 200 replicas was created")
    except ApiException as e:
        check(e.status == 422, f"CEL rule status {e.status}")
        check("a red widget may have at most 100 replicas" in status_of(e).get("message", ""), f"CEL message: {e.body}")
    api.delete_namespaced_custom_object(group, version, ns, plural, "custom")
    print("PASS: CustomObjectsApi", flush=True)


def crd_objects(ns):
    """A CustomResourceDefinition through ApiextensionsV1Api, then its objects through
    CustomObjectsApi: established, created (defaulted, pruned), listed, patched, scaled,
    written through status, refused by its schema and its CEL rule, deleted with the CRD."""
    ext = client.ApiextensionsV1Api()
    api = client.CustomObjectsApi()
    group, version, plural = "python.example.com", "v1", "gizmos"
    name = f"{plural}.{group}"
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.size <= 10", "message": "size must be at most 10"}
                ],
                "properties": {
                    "size": {"type": "integer", "default": 1},
                    "label": {"type": "string", "maxLength": 8},
                },
            },
            "status": {"type": "object", "properties": {"size": {"type": "integer"}}},
        },
    }
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": "gizmo", "kind": "Gizmo"},
            "versions": [{
                "name": version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}},
            }],
        },
    })
    established = False
    deadline = time.time() + 30
    while time.time() < deadline and not established:
        crd = ext.read_custom_resource_definition(name)
        established = any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))
        if not established:
            time.sleep(0.2)
    check(established, "the CRD was not established in 30 s")
    body = {"apiVersion": f"{group}/{version}", "kind": "Gizmo", "metadata": {"name": "g"},
            "spec": {"label": "x", "extra": 1}}
    created = None
    while created is None and time.time() < deadline:
        try:
            created = api.create_namespaced_custom_object(group, version, ns, plural, body)
        except ApiException as e:
            if e.status != 404:
                raise
            time.sleep(0.2)
    check(created is not None, "the resource was not served in 30 s")
    check(created["spec"] == {"label": "x", "size": 1}, f"defaulted and pruned: {created['spec']}")
    listed = api.list_namespaced_custom_object(group, version, ns, plural)
    check([i["metadata"]["name"] for i in listed["items"]] == ["g"], f"list: {listed}")
    patched = api.patch_namespaced_custom_object(group, version, ns, plural, "g", {"spec": {"size": 3}})
    check(patched["spec"]["size"] == 3, f"patch: {patched['spec']}")
    scaled = api.patch_namespaced_custom_object_scale(group, version, ns, plural, "g", {"spec": {"replicas": 5}})
    check(scaled["spec"]["replicas"] == 5, f"scale: {scaled}")
    status = api.patch_namespaced_custom_object_status(group, version, ns, plural, "g", {"status": {"size": 5}})
    check(status["status"] == {"size": 5}, f"status: {status}")
    for spec, want in [({"label": "far-too-long"}, "Too long"), ({"size": 11}, "size must be at most 10")]:
        try:
            api.create_namespaced_custom_object(group, version, ns, plural, {**body, "metadata": {"name": "bad"}, "spec": spec})
            check(False, f"{spec} was created")
        except ApiException as e:
            check(e.status == 422, f"{spec}: status {e.status}")
            check(want in status_of(e).get("message", ""), f"{spec}: {e.body}")
    ext.delete_custom_resource_definition(name)
    gone = False
    while time.time() < deadline + 30 and not gone:
        try:
            ext.read_custom_resource_definition(name)
            time.sleep(0.2)
        except ApiException as e:
            gone = e.status == 404
    check(gone, "the CRD was not deleted")
    print("PASS: CustomResourceDefinition", flush=True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    kubeconfig, ns = sys.argv[1], sys.argv[2]
    print("kubernetes", kubernetes.__version__, flush=True)
    config.load_kube_config(config_file=kubeconfig)
    try:
        core_v1(ns)
        dynamic_widgets(ns)
        custom_objects(ns)
        crd_objects(ns)
    except Exception:  # noqa: BLE001 - any error is a failure of the run, reported in full.
        traceback.print_exc()
        return 2
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", flush=True)
    return min(len(FAILURES), 1)


if __name__ == "__main__":
    sys.exit(main())
