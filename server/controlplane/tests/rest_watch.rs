//! Watch streams: JSON lines, single-object watches, WatchList, Tables, protobuf frames and
//! the 410 `ERROR` event.

mod rest_common;

use std::time::Duration;

use futures::StreamExt;
use http_body_util::BodyStream;
use rest_common::*;
use serde_json::{Value, json};

/// Reads events from a streaming response until `n` complete JSON lines arrived.
async fn read_lines(resp: http::Response<axum::body::Body>, n: usize) -> Vec<Value> {
    let mut stream = BodyStream::new(resp.into_body());
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let frame = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("watch event in time")
            .expect("stream open")
            .expect("frame");
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line).expect("event JSON"));
        }
    }
    out
}

#[tokio::test]
async fn watch_sees_added_modified_deleted() {
    let h = Harness::new().await;
    let list = h.get(WIDGETS).await.json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let resp = h
        .send_raw(
            "GET",
            &format!("{WIDGETS}?watch=true&resourceVersion={rv}"),
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(resp.status(), 200);
    h.post(WIDGETS, &widget("w", 1)).await;
    h.patch(
        &format!("{WIDGETS}/w"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":2}}"#,
    )
    .await;
    h.delete(&format!("{WIDGETS}/w")).await;
    let events = read_lines(resp, 3).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED"]);
    assert_eq!(events[1]["object"]["spec"]["replicas"], 2);
    assert_eq!(events[0]["object"]["kind"], "Widget");
}

#[tokio::test]
async fn single_object_watch_from_zero_starts_with_added() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("one", 1)).await;
    h.post(WIDGETS, &widget("two", 1)).await;
    let resp = h
        .send_raw(
            "GET",
            &format!("{WIDGETS}?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Done"),
            &[],
            Vec::new(),
        )
        .await;
    let events = read_lines(resp, 1).await;
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "one");
}

#[tokio::test]
async fn watch_list_ends_initial_events_with_bookmark() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("a", 1)).await;
    h.post(WIDGETS, &widget("b", 1)).await;
    let resp = h.send_raw("GET", &format!("{WIDGETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"), &[], Vec::new()).await;
    assert_eq!(resp.status(), 200);
    let events = read_lines(resp, 3).await;
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "ADDED");
    assert_eq!(events[2]["type"], "BOOKMARK");
    assert_eq!(
        events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(events[2]["object"]["kind"], "Widget");
    let r = h
        .get(&format!("{WIDGETS}?watch=true&sendInitialEvents=true"))
        .await;
    assert_eq!(r.status, 422);
}

#[tokio::test]
async fn watch_table_first_event_has_columns() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("t", 1)).await;
    h.post(WIDGETS, &widget("u", 1)).await;
    let resp = h
        .send_raw(
            "GET",
            &format!("{WIDGETS}?watch=true&resourceVersion=0"),
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
            Vec::new(),
        )
        .await;
    let events = read_lines(resp, 2).await;
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert!(
        events[0]["object"]["columnDefinitions"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    assert!(events[1]["object"]["columnDefinitions"].is_null());
}

#[tokio::test]
async fn protobuf_watch_frames() {
    let h = Harness::new().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pw"}, "data": {"k": "v"}});
    h.post("/api/v1/namespaces/default/configmaps", &cm).await;
    let resp = h
        .send_raw(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
            &[("accept", "application/vnd.kubernetes.protobuf;stream=watch")],
            Vec::new(),
        )
        .await;
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut stream = BodyStream::new(resp.into_body());
    let mut buf = Vec::new();
    loop {
        if let Some((msg, _)) = apimachinery::protobuf::split_frame(&buf) {
            let ev = <apimachinery::protobuf::WatchEvent as apimachinery::protobuf::ProtoMessage>::decode(msg).unwrap();
            assert_eq!(ev.type_, "ADDED");
            let obj =
                apimachinery::protobuf::decode_envelope(ev.object.raw.as_deref().unwrap()).unwrap();
            assert_eq!(obj.type_meta.kind, "ConfigMap");
            break;
        }
        let frame = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Ok(d) = frame.into_data() {
            buf.extend_from_slice(&d);
        }
    }
}

#[tokio::test]
async fn watch_from_compacted_revision_is_410_error_event() {
    let h = Harness::new().await;
    for i in 0..3 {
        h.post(WIDGETS, &widget(&format!("c{i}"), 1)).await;
    }
    let current = h.ctx.registry.backend().current_revision().await.unwrap();
    h.ctx.registry.backend().compact(current).await.unwrap();
    let resp = h
        .send_raw(
            "GET",
            &format!("{WIDGETS}?watch=true&resourceVersion=1"),
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(resp.status(), 200);
    let events = read_lines(resp, 1).await;
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["kind"], "Status");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
    assert!(
        events[0]["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version: 1 ("),
        "{}",
        events[0]
    );
}

#[tokio::test]
async fn watches_end_cleanly_on_shutdown() {
    let h = Harness::new().await;
    h.post(WIDGETS, &widget("s", 1)).await;
    let resp = h
        .send_raw(
            "GET",
            &format!("{WIDGETS}?watch=true&resourceVersion=0"),
            &[],
            Vec::new(),
        )
        .await;
    let mut stream = BodyStream::new(resp.into_body());
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("ADDED in time");
    assert!(first.is_some());
    h.ctx.end_watches();
    let mut ended = false;
    for _ in 0..10 {
        match tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("stream ends in time")
        {
            None => {
                ended = true;
                break;
            }
            Some(frame) => assert!(frame.is_ok(), "the stream ends without an error"),
        }
    }
    assert!(ended);
    // Watches started after shutdown began end at once.
    let resp = h
        .send_raw("GET", &format!("{WIDGETS}?watch=true"), &[], Vec::new())
        .await;
    let mut stream = BodyStream::new(resp.into_body());
    assert!(
        tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("ends in time")
            .is_none()
    );
}
