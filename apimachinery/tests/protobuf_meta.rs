//! Protobuf codecs of the meta types: bytes as Kubernetes' gogo marshallers write them, and
//! round trips.

use std::collections::BTreeMap;

use apimachinery::duration::{format_go_duration, parse_go_duration};
use apimachinery::meta::{
    Condition, IntOrString, LabelSelector, LabelSelectorRequirement, ListMeta, ManagedFieldsEntry,
    MicroTime, ObjectMeta, OwnerReference, Quantity, Status, StatusCause, StatusDetails, Time,
};
use apimachinery::protobuf::ProtoMessage;
use serde_json::json;

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ObjectMeta{name: "foo"}`: Go holds fields 1–8 by value, so gogo writes them all, empty.
///
/// ```text
/// 0a 03 66 6f 6f   name (1) = "foo"
/// 12 00            generateName (2) = ""
/// 1a 00            namespace (3) = ""
/// 22 00            selfLink (4) = ""
/// 2a 00            uid (5) = ""
/// 32 00            resourceVersion (6) = ""
/// 38 00            generation (7) = 0 (varint)
/// 42 00            creationTimestamp (8) = zero Time: an empty message
/// ```
#[test]
fn object_meta_with_only_a_name() {
    let meta = ObjectMeta {
        name: Some("foo".into()),
        ..Default::default()
    };
    assert_eq!(
        hex(&meta.encode_to_vec()),
        "0a 03 66 6f 6f 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00"
    );
    let back = ObjectMeta::decode(&meta.encode_to_vec()).unwrap();
    assert_eq!(back, meta, "empty by-value strings decode as absent");
}

/// A creation time of 2024-01-01T00:00:00Z is `Timestamp{seconds = 1704067200, nanos = 0}`:
/// `42 08 | 08 80 81 c8 ac 06 | 10 00` (seconds as a varint, nanos always written).
#[test]
fn time_is_seconds_and_zero_nanos() {
    let t: Time = serde_json::from_value(json!("2024-01-01T00:00:00Z")).unwrap();
    let meta = ObjectMeta {
        creation_timestamp: Some(t),
        ..Default::default()
    };
    let bytes = meta.encode_to_vec();
    assert!(
        hex(&bytes).contains("42 08 08 80 81 c8 ac 06 10 00"),
        "{}",
        hex(&bytes)
    );
    assert_eq!(
        ObjectMeta::decode(&bytes).unwrap().creation_timestamp,
        Some(t)
    );
}

#[test]
fn full_object_meta_round_trips() {
    let doc = json!({
        "name": "a", "generateName": "a-", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
        "generation": 3, "creationTimestamp": "2024-01-01T00:00:00Z",
        "deletionTimestamp": "2024-01-02T00:00:00Z", "deletionGracePeriodSeconds": 30,
        "labels": {"b": "2", "a": "1"}, "annotations": {"note": "x"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x",
            "controller": true, "blockOwnerDeletion": false}],
        "finalizers": ["f1", "f2"],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}}, "subresource": "status"}]
    });
    let meta: ObjectMeta = serde_json::from_value(doc.clone()).unwrap();
    let back = ObjectMeta::decode(&meta.encode_to_vec()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), doc);
}

/// Labels are map entries `{key = 1, value = 2}` in sorted key order:
/// `5a 06 | 0a 01 61 12 01 31` for `a=1`, then `5a 06 | 0a 01 62 12 01 32` for `b=2`.
#[test]
fn labels_are_sorted_map_entries() {
    let mut labels = BTreeMap::new();
    labels.insert("b".to_string(), "2".to_string());
    labels.insert("a".to_string(), "1".to_string());
    let meta = ObjectMeta {
        labels,
        ..Default::default()
    };
    assert!(
        hex(&meta.encode_to_vec())
            .ends_with("42 00 5a 06 0a 01 61 12 01 31 5a 06 0a 01 62 12 01 32")
    );
}

/// `ListMeta{resourceVersion: "7"}`: `0a 00 | 12 01 37 | 1a 00` (remainingItemCount unset).
#[test]
fn list_meta_bytes() {
    let list = ListMeta {
        resource_version: Some("7".into()),
        ..Default::default()
    };
    assert_eq!(hex(&list.encode_to_vec()), "0a 00 12 01 37 1a 00");
    let with_count = ListMeta {
        remaining_item_count: Some(5),
        ..list.clone()
    };
    assert_eq!(
        hex(&with_count.encode_to_vec()),
        "0a 00 12 01 37 1a 00 20 05"
    );
    assert_eq!(
        ListMeta::decode(&with_count.encode_to_vec()).unwrap(),
        with_count
    );
}

/// A NotFound `Status`:
///
/// ```text
/// 0a 06 0a 00 12 00 1a 00        metadata (1) = empty ListMeta (its three strings)
/// 12 07 "Failure"                status (2)
/// 1a 04 "gone"                   message (3)
/// 22 08 "NotFound"               reason (4)
/// 2a 0d                          details (5)
///    0a 01 "x" 12 00 1a 02 "cm"    name, group, kind
///    28 00 32 00                   retryAfterSeconds (5) = 0, uid (6) = ""
/// 30 94 03                       code (6) = 404
/// ```
#[test]
fn status_bytes() {
    let status = Status {
        api_version: Some("v1".into()),
        kind: Some("Status".into()),
        metadata: ListMeta::default(),
        status: Some("Failure".into()),
        message: Some("gone".into()),
        reason: Some("NotFound".into()),
        details: Some(StatusDetails {
            name: Some("x".into()),
            kind: Some("cm".into()),
            ..Default::default()
        }),
        code: Some(404),
    };
    let expected = "0a 06 0a 00 12 00 1a 00 12 07 46 61 69 6c 75 72 65 1a 04 67 6f 6e 65 \
                    22 08 4e 6f 74 46 6f 75 6e 64 2a 0d 0a 01 78 12 00 1a 02 63 6d 28 00 32 00 30 94 03";
    assert_eq!(hex(&status.encode_to_vec()), expected);
    let back = Status::decode(&status.encode_to_vec()).unwrap();
    assert_eq!(back.code, Some(404));
    assert_eq!(back.details.unwrap().kind.as_deref(), Some("cm"));
}

#[test]
fn other_meta_types_round_trip() {
    let selector = LabelSelector {
        match_labels: [("app".to_string(), "web".to_string())].into(),
        match_expressions: vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: vec!["a".into(), "b".into()],
        }],
    };
    assert_eq!(
        LabelSelector::decode(&selector.encode_to_vec()).unwrap(),
        selector
    );

    let condition: Condition = serde_json::from_value(json!({
        "type": "Ready", "status": "True", "observedGeneration": 2,
        "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Ok", "message": "fine"
    }))
    .unwrap();
    assert_eq!(
        Condition::decode(&condition.encode_to_vec()).unwrap(),
        condition
    );

    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: "p".into(),
        uid: "u".into(),
        ..Default::default()
    };
    // kind (1), name (3), uid (4), apiVersion (5): field-number order, not declaration order.
    assert_eq!(
        hex(&owner.encode_to_vec()),
        "0a 03 50 6f 64 1a 01 70 22 01 75 2a 02 76 31"
    );

    let entry = ManagedFieldsEntry {
        manager: Some("m".into()),
        fields_v1: Some(apimachinery::meta::FieldsV1::from_value(
            &json!({"f:a": {}}),
        )),
        ..Default::default()
    };
    assert_eq!(
        ManagedFieldsEntry::decode(&entry.encode_to_vec())
            .unwrap()
            .fields_v1,
        entry.fields_v1
    );

    let cause = StatusCause {
        reason: Some("FieldValueInvalid".into()),
        ..Default::default()
    };
    assert_eq!(StatusCause::decode(&cause.encode_to_vec()).unwrap(), cause);
}

/// `IntOrString{type = 1, intVal = 2, strVal = 3}`, all written: `08 00 10 05 1a 00` for 5,
/// `08 01 10 00 1a 03 32 35 25` for "25%". `Quantity{string = 1}`: `0a 04 31 30 30 6d`.
#[test]
fn int_or_string_and_quantity_bytes() {
    assert_eq!(
        hex(&IntOrString::Int(5).encode_to_vec()),
        "08 00 10 05 1a 00"
    );
    let s = IntOrString::String("25%".into());
    assert_eq!(hex(&s.encode_to_vec()), "08 01 10 00 1a 03 32 35 25");
    assert_eq!(IntOrString::decode(&s.encode_to_vec()).unwrap(), s);
    assert_eq!(
        IntOrString::decode(&IntOrString::Int(-3).encode_to_vec()).unwrap(),
        IntOrString::Int(-3)
    );
    assert_eq!(
        hex(&Quantity("100m".into()).encode_to_vec()),
        "0a 04 31 30 30 6d"
    );
}

#[test]
fn micro_time_keeps_microseconds() {
    use apimachinery::protobuf::ProtoField;
    let t: MicroTime = serde_json::from_value(json!("2024-01-01T00:00:00.123456Z")).unwrap();
    let mut buf = Vec::new();
    t.encode_field(1, &mut buf);
    let mut dec = apimachinery::protobuf::Decoder::new(&buf);
    let (field, wire) = dec.key().unwrap().unwrap();
    let mut back = MicroTime::default();
    back.merge_field_value(field, wire, &mut dec).unwrap();
    assert_eq!(back, t);
}

#[test]
fn go_durations() {
    assert_eq!(parse_go_duration("1h0m0s"), Ok(3_600_000_000_000));
    assert_eq!(parse_go_duration("1.5s"), Ok(1_500_000_000));
    assert_eq!(parse_go_duration("300ms"), Ok(300_000_000));
    assert!(parse_go_duration("bogus").is_err());
    assert_eq!(format_go_duration(3_600_000_000_000), "1h0m0s");
    assert_eq!(format_go_duration(1_500_000_000), "1.5s");
    assert_eq!(format_go_duration(300_000_000), "300ms");
    assert_eq!(format_go_duration(90_000_000_000), "1m30s");
}

#[test]
fn status_from_json_in_the_envelope() {
    let json = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "gone", "reason": "NotFound", "details": {"name": "x", "kind": "cm"}, "code": 404});
    let bytes = apimachinery::protobuf::meta::encode_status_envelope(&json).expect("a Status");
    let unknown = apimachinery::protobuf::decode_envelope(&bytes).expect("enveloped");
    assert_eq!(
        (
            unknown.type_meta.api_version.as_str(),
            unknown.type_meta.kind.as_str()
        ),
        ("v1", "Status")
    );
    let status = Status::decode(unknown.raw.as_deref().unwrap_or_default()).expect("decodes");
    assert_eq!(status.code, Some(404));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert!(apimachinery::protobuf::meta::encode_status_envelope(&json!({"code": "x"})).is_err());
}

/// Decoders answer errors, never panic, on corrupted input: every single-byte change and every
/// truncation of a full ObjectMeta, plus pseudo-random byte strings, through every meta codec.
#[test]
fn corrupted_input_never_panics() {
    fn try_all(bytes: &[u8]) {
        let _ = ObjectMeta::decode(bytes);
        let _ = ListMeta::decode(bytes);
        let _ = Status::decode(bytes);
        let _ = Condition::decode(bytes);
        let _ = LabelSelector::decode(bytes);
        let _ = ManagedFieldsEntry::decode(bytes);
        let _ = IntOrString::decode(bytes);
        let _ = apimachinery::protobuf::WatchEvent::decode(bytes);
        let _ = apimachinery::protobuf::decode_envelope(bytes);
    }
    let doc = json!({
        "name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "5", "generation": 2,
        "creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "2024-01-01T00:00:00Z",
        "labels": {"a": "1"}, "annotations": {"b": "2"}, "finalizers": ["f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x", "controller": true}],
        "managedFields": [{"manager": "m", "operation": "Apply", "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}}]
    });
    let meta: ObjectMeta = serde_json::from_value(doc).unwrap();
    let good = meta.encode_to_vec();
    for i in 0..good.len() {
        try_all(&good[..i]);
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            try_all(&bad);
        }
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..5000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = (state % 64) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|j| (state.rotate_left(j as u32 * 8) & 0xff) as u8)
            .collect();
        try_all(&bytes);
    }
}

/// `PartialObjectMetadata{metadata = 1}` and its list `{metadata = 1, items = 2}`.
#[test]
fn partial_object_metadata() {
    use apimachinery::protobuf::meta::{
        encode_partial_object_metadata, encode_partial_object_metadata_list,
    };
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "foo"}, "data": {"a": "b"}});
    let bytes = encode_partial_object_metadata(&object).expect("encodes");
    assert_eq!(
        hex(&bytes),
        "0a 13 0a 03 66 6f 6f 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00"
    );
    let list = json!({"metadata": {"resourceVersion": "7"}, "items": [object]});
    let bytes = encode_partial_object_metadata_list(&list).expect("encodes");
    assert_eq!(
        hex(&bytes),
        "0a 07 0a 00 12 01 37 1a 00 12 15 0a 13 0a 03 66 6f 6f 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00"
    );
    assert!(encode_partial_object_metadata(&json!({"metadata": {"name": 5}})).is_err());
}
