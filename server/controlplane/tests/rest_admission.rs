//! The admission chain through the REST handlers: mutating plugins run first, in order, each
//! seeing the changes of the ones before; validating plugins see the final object; every write
//! verb runs admission with its operation and subresource; dry runs are admitted and store
//! nothing; plugins are chosen by the admission flags; warnings reach the client.

mod rest_common;

use std::sync::{Arc, Mutex};

use apimachinery::admission::{Attributes, MutatingPlugin, Operation, Plugin, ValidatingPlugin};
use apimachinery::status::ApiError;
use async_trait::async_trait;
use rest_common::{Harness, WIDGETS, widget};
use serde_json::{Value, json};
use server::admission::AdmissionOptions;

/// Appends a letter to the `order` label of every Widget it admits.
struct Append(&'static str);

#[async_trait]
impl MutatingPlugin for Append {
    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.version.kind == "Widget" && matches!(a.operation, Operation::Create | Operation::Update)
    }

    async fn admit(&self, a: &mut Attributes<'_>) -> Result<(), ApiError> {
        if let Some(o) = a.object_mut() {
            let labels = &mut o.metadata_mut().labels;
            let order = labels.get("order").cloned().unwrap_or_default();
            labels.insert("order".into(), format!("{order}{}", self.0));
        }
        Ok(())
    }
}

/// What a validating plugin saw of one call.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    operation: Operation,
    subresource: String,
    name: String,
    order: Option<String>,
    dry_run: bool,
}

/// Records every Widget operation it validates; refuses objects labelled `deny: "yes"`.
#[derive(Default)]
struct Record(Mutex<Vec<Seen>>);

#[async_trait]
impl ValidatingPlugin for Record {
    fn handles(&self, a: &Attributes<'_>) -> bool {
        a.version.kind == "Widget"
    }

    async fn validate(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        let object = a.object().or(a.old_object);
        let labels = object
            .map(|o| o.metadata().labels.clone())
            .unwrap_or_default();
        self.0.lock().unwrap().push(Seen {
            operation: a.operation,
            subresource: a.subresource.to_string(),
            name: a.object_name().to_string(),
            order: labels.get("order").cloned(),
            dry_run: a.dry_run,
        });
        a.warn("seen by the test");
        if labels.get("deny").map(String::as_str) == Some("yes") {
            return Err(a.forbidden("denied by the test"));
        }
        Ok(())
    }
}

async fn harness(record: Arc<Record>) -> Harness {
    Harness::with(move |b| {
        b.plugin(Plugin {
            name: "TestAppendA",
            default_enabled: true,
            mutating: Some(Arc::new(Append("a"))),
            validating: None,
        })
        .plugin(Plugin {
            name: "TestAppendB",
            default_enabled: true,
            mutating: Some(Arc::new(Append("b"))),
            validating: None,
        })
        .plugin(Plugin {
            name: "TestRecord",
            default_enabled: true,
            mutating: None,
            validating: Some(record),
        })
    })
    .await
}

fn last(record: &Record) -> Seen {
    record.0.lock().unwrap().last().cloned().expect("a call")
}

#[tokio::test]
async fn mutators_run_in_order_and_validators_see_the_final_object() {
    let record = Arc::new(Record::default());
    let h = harness(record.clone()).await;
    let mut w = widget("ordered", 1);
    w["spec"]["color"] = json!("blue");
    let r = h.post(WIDGETS, &w).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let labels = &r.json()["metadata"]["labels"];
    assert_eq!(labels["order"], "ab", "B sees A's change: {labels}");
    // The plugin example.dev ships runs too.
    assert_eq!(labels["example.dev/color"], "blue");
    assert_eq!(
        last(&record),
        Seen {
            operation: Operation::Create,
            subresource: String::new(),
            name: "ordered".into(),
            order: Some("ab".into()),
            dry_run: false,
        }
    );
    assert!(
        r.header("warning").contains("seen by the test"),
        "{}",
        r.header("warning")
    );
    // Stored as admitted.
    let got = h.get(&format!("{WIDGETS}/ordered")).await.json();
    assert_eq!(got["metadata"]["labels"]["order"], "ab");
}

#[tokio::test]
async fn a_denial_is_the_plugins_status_and_stores_nothing() {
    let record = Arc::new(Record::default());
    let h = harness(record).await;
    let mut w = widget("refused", 1);
    w["metadata"]["labels"] = json!({"deny": "yes"});
    let r = h.post(WIDGETS, &w).await;
    assert_eq!(r.status, 403);
    let status = r.json();
    assert_eq!(
        status["message"],
        "widgets.example.dev \"refused\" is forbidden: denied by the test"
    );
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(h.get(&format!("{WIDGETS}/refused")).await.status, 404);
}

#[tokio::test]
async fn every_write_verb_is_admitted_with_its_operation_and_subresource() {
    let record = Arc::new(Record::default());
    let h = harness(record.clone()).await;
    assert_eq!(h.post(WIDGETS, &widget("verbs", 1)).await.status, 201);
    let mut current = h.get(&format!("{WIDGETS}/verbs")).await.json();
    current["spec"]["replicas"] = json!(2);
    assert_eq!(
        h.put(&format!("{WIDGETS}/verbs"), &current).await.status,
        200
    );
    assert_eq!(last(&record).operation, Operation::Update);
    // Each update runs the mutators again.
    assert_eq!(last(&record).order.as_deref(), Some("abab"));
    let r = h
        .patch(
            &format!("{WIDGETS}/verbs"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":3}}"#,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(last(&record).operation, Operation::Update);
    let r = h
        .patch(
            &format!("{WIDGETS}/applied?fieldManager=test"),
            "application/apply-patch+yaml",
            "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: applied\nspec:\n  replicas: 1\n",
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(last(&record).operation, Operation::Create);
    assert_eq!(last(&record).name, "applied");
    let r = h
        .patch(
            &format!("{WIDGETS}/verbs/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":1}}"#,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(last(&record).subresource, "status");
    let r = h
        .patch(
            &format!("{WIDGETS}/verbs/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(last(&record).subresource, "scale");
    assert_eq!(h.delete(&format!("{WIDGETS}/verbs")).await.status, 200);
    let seen = last(&record);
    assert_eq!(
        (seen.operation, seen.name.as_str()),
        (Operation::Delete, "verbs")
    );
    assert_eq!(h.delete(WIDGETS).await.status, 200);
    let seen = last(&record);
    assert_eq!(
        (seen.operation, seen.name.as_str()),
        (Operation::Delete, "applied")
    );
}

#[tokio::test]
async fn dry_runs_are_admitted_and_store_nothing() {
    let record = Arc::new(Record::default());
    let h = harness(record.clone()).await;
    let r = h
        .post(&format!("{WIDGETS}?dryRun=All"), &widget("dry", 1))
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["metadata"]["labels"]["order"], "ab");
    assert!(last(&record).dry_run);
    assert_eq!(h.get(&format!("{WIDGETS}/dry")).await.status, 404);

    assert_eq!(h.post(WIDGETS, &widget("kept", 1)).await.status, 201);
    let before = h.get(&format!("{WIDGETS}/kept")).await.json();
    let mut changed = before.clone();
    changed["spec"]["replicas"] = json!(9);
    let r = h.put(&format!("{WIDGETS}/kept?dryRun=All"), &changed).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["spec"]["replicas"], 9);
    assert!(last(&record).dry_run);
    assert_eq!(h.get(&format!("{WIDGETS}/kept")).await.json(), before);

    let r = h.delete(&format!("{WIDGETS}/kept?dryRun=All")).await;
    assert_eq!(r.status, 200);
    let seen = last(&record);
    assert!(seen.dry_run && seen.operation == Operation::Delete);
    assert_eq!(h.get(&format!("{WIDGETS}/kept")).await.status, 200);
}

#[tokio::test]
async fn plugins_are_chosen_by_the_flags() {
    let h = Harness::with(|b| {
        b.admission(AdmissionOptions {
            enable: Vec::new(),
            disable: vec!["WidgetColorLabel".into()],
        })
    })
    .await;
    let mut w = widget("plain", 1);
    w["spec"]["color"] = json!("green");
    let r = h.post(WIDGETS, &w).await;
    assert_eq!(r.status, 201);
    assert!(
        r.json()["metadata"]["labels"]
            .get("example.dev/color")
            .is_none_or(Value::is_null)
    );
    // kube-apiserver's order: NamespaceLifecycle first, then the webhooks and policies,
    // ResourceQuota last.
    assert_eq!(
        h.ctx.admission.names(),
        [
            "NamespaceLifecycle",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionWebhook",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionWebhook",
            "ResourceQuota"
        ]
    );
    // An unknown name is refused, naming the known ones.
    let dir = tempfile::tempdir().unwrap();
    let backend = storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap();
    let err = server::endpoints::ApiContext::builder(
        Arc::new(demo_api::scheme()),
        Arc::new(backend),
        "/registry".into(),
    )
    .groups(Arc::new(controlplane::KubernetesApis::default()))
    .admission(AdmissionOptions {
        enable: vec!["NoSuchPlugin".into()],
        disable: Vec::new(),
    })
    .build()
    .err()
    .expect("an unknown plugin is refused");
    assert_eq!(
        err.to_string(),
        "admission plugin \"NoSuchPlugin\" is unknown; the known plugins are NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, MutatingAdmissionPolicy, ValidatingAdmissionPolicy, ResourceQuota, WidgetColorLabel"
    );
}
