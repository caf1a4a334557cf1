//! The watch-guarantee checker on known good and bad watches.

use super::*;

pub(super) fn change(kind: ChangeKind, key: &str, rv: Rv, value: &str) -> WatchEvent {
    WatchEvent::Change {
        kind,
        key: key.into(),
        rv,
        value: value.into(),
    }
}

pub(super) fn bookmark(rv: Rv) -> WatchEvent {
    WatchEvent::Bookmark {
        rv,
        initial_events_end: false,
    }
}

pub(super) fn watch(start: WatchStart, opened: u64, events: Vec<WatchEvent>) -> WatchRecord {
    WatchRecord {
        id: 0,
        prefix: "ns/".into(),
        start,
        opened: opened * MS,
        closed: 100 * MS,
        bookmarks: true,
        refused: None,
        events,
        cut: false,
    }
}

/// a: created 1, updated 3, deleted 5; b: created 2, updated 4; c (outside) at 6.
fn watched_writes() -> Vec<Operation> {
    vec![
        at(0, 0, 1, create("ns/a", "a1"), written(1)),
        at(0, 2, 3, create("ns/b", "b1"), written(2)),
        at(0, 4, 5, update("ns/a", "a2", Some(1)), written(3)),
        at(
            0,
            6,
            7,
            Input::Patch {
                key: "ns/b".into(),
                value: "b2".into(),
            },
            written(4),
        ),
        at(0, 8, 9, delete("ns/a", None), written(5)),
        at(0, 10, 11, create("other/c", "c1"), written(6)),
    ]
}

fn all_changes() -> Vec<WatchEvent> {
    use ChangeKind::*;
    vec![
        change(Added, "ns/a", 1, "a1"),
        change(Added, "ns/b", 2, "b1"),
        change(Modified, "ns/a", 3, "a2"),
        change(Modified, "ns/b", 4, "b2"),
        change(Deleted, "ns/a", 5, "a2"),
    ]
}

fn watched(watches: Vec<WatchRecord>) -> History {
    History {
        operations: watched_writes(),
        watches,
        compacted: None,
    }
}

#[test]
fn a_complete_watch_is_accepted() {
    let mut events = all_changes();
    events.insert(2, bookmark(2));
    events.push(bookmark(6));
    accepted(&watched(vec![watch(WatchStart::From(0), 0, events)]));
    // From a delivered resourceVersion (a resumed watch).
    accepted(&watched(vec![watch(
        WatchStart::From(3),
        0,
        all_changes()[3..].to_vec(),
    )]));
}

#[test]
fn a_watch_with_a_gap_is_a_violation() {
    let mut events = all_changes();
    events.remove(2);
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "a commit is missing",
    );
    // A bookmark past an undelivered commit is a gap too.
    let events = vec![all_changes()[0].clone(), bookmark(2)];
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "passes a commit never delivered",
    );
}

#[test]
fn a_watch_delivering_an_event_twice_is_a_violation() {
    let mut events = all_changes();
    events.insert(2, events[1].clone());
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "delivered twice",
    );
}

#[test]
fn a_watch_out_of_order_is_a_violation() {
    let mut events = all_changes();
    events.swap(2, 3);
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "out of order",
    );
}

#[test]
fn a_bookmark_behind_the_last_event_is_a_violation() {
    let mut events = all_changes();
    events.insert(3, bookmark(2));
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "is behind the last event",
    );
    // And bookmarks only when asked for.
    let mut w = watch(WatchStart::From(0), 0, vec![bookmark(1)]);
    w.bookmarks = false;
    rejected(&watched(vec![w]), "not asked for");
}

#[test]
fn a_deleted_event_shows_the_value_before_the_delete() {
    let mut events = all_changes();
    events[4] = change(ChangeKind::Deleted, "ns/a", 5, "a1");
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "does not show its commit",
    );
    let mut events = all_changes();
    events[2] = change(ChangeKind::Added, "ns/a", 3, "a2");
    rejected(
        &watched(vec![watch(WatchStart::From(0), 0, events)]),
        "does not show its commit",
    );
}

#[test]
fn a_watch_cut_by_the_recorder_may_end_inside_its_snapshot() {
    use ChangeKind::*;
    let cut = |events: Vec<WatchEvent>| {
        let mut w = watch(WatchStart::Unset, 6, events);
        w.cut = true;
        w
    };
    // Cut before the server sent anything, or after part of the snapshot at 3.
    accepted(&watched(vec![cut(Vec::new())]));
    accepted(&watched(vec![cut(vec![change(Added, "ns/b", 2, "b1")])]));
    // The same watch ended by the server is held to the whole snapshot.
    rejected(
        &watched(vec![watch(WatchStart::Unset, 6, Vec::new())]),
        "not the snapshot",
    );
    // What did arrive must still be states the keys held.
    rejected(
        &watched(vec![cut(vec![change(Added, "ns/b", 2, "b9")])]),
        "no key under the prefix held",
    );
    // Once a change after the snapshot arrived, the snapshot was whole.
    rejected(
        &watched(vec![cut(vec![
            change(Added, "ns/b", 2, "b1"),
            change(Modified, "ns/b", 4, "b2"),
        ])]),
        "not the snapshot",
    );
}

#[test]
fn initial_events_are_a_snapshot() {
    use ChangeKind::*;
    // Unset, opened after rv 3 returned: snapshot at 3, then 4 and 5.
    let good = vec![
        change(Added, "ns/b", 2, "b1"),
        change(Added, "ns/a", 3, "a2"),
        change(Modified, "ns/b", 4, "b2"),
        change(Deleted, "ns/a", 5, "a2"),
    ];
    accepted(&watched(vec![watch(WatchStart::Unset, 6, good.clone())]));
    // Opened after rv 4 returned, a snapshot at 3 is stale for unset, fine for 0.
    rejected(
        &watched(vec![watch(WatchStart::Unset, 8, good.clone())]),
        "no resourceVersion at or above 4",
    );
    accepted(&watched(vec![watch(WatchStart::Zero, 8, good)]));
    // A snapshot missing ns/b.
    let wrong = vec![
        change(Added, "ns/a", 3, "a2"),
        change(Modified, "ns/b", 4, "b2"),
    ];
    rejected(
        &watched(vec![watch(WatchStart::Zero, 0, wrong)]),
        "not the snapshot",
    );
    // sendInitialEvents: the end bookmark names the snapshot's point.
    let end = |rv| WatchEvent::Bookmark {
        rv,
        initial_events_end: true,
    };
    let good = vec![
        change(Added, "ns/b", 4, "b2"),
        end(4),
        change(Deleted, "ns/a", 5, "a2"),
    ];
    rejected(
        &watched(vec![watch(
            WatchStart::InitialEvents(Some(4)),
            0,
            good.clone(),
        )]),
        "not the snapshot at 4",
    );
    let good = vec![
        change(Added, "ns/a", 3, "a2"),
        change(Added, "ns/b", 4, "b2"),
        end(4),
        change(Deleted, "ns/a", 5, "a2"),
    ];
    accepted(&watched(vec![watch(
        WatchStart::InitialEvents(Some(4)),
        0,
        good.clone(),
    )]));
    rejected(
        &watched(vec![watch(WatchStart::InitialEvents(Some(5)), 0, good)]),
        "older than 5",
    );
}

#[test]
fn gone_only_below_the_compacted_resource_version() {
    let mut w = watch(WatchStart::From(2), 0, vec![]);
    w.refused = Some(410);
    rejected(&watched(vec![w.clone()]), "410 Gone");
    let mut h = watched(vec![w]);
    h.compacted = Some(4);
    accepted(&h);
    let w = watch(
        WatchStart::From(2),
        0,
        vec![all_changes()[2].clone(), WatchEvent::Error { code: 410 }],
    );
    rejected(&watched(vec![w.clone()]), "ERROR 410");
    let mut h = watched(vec![w]);
    h.compacted = Some(3);
    accepted(&h);
    // Another error ends the watch without a violation.
    let w = watch(
        WatchStart::From(0),
        0,
        vec![all_changes()[0].clone(), WatchEvent::Error { code: 500 }],
    );
    accepted(&watched(vec![w]));
}

#[test]
fn a_watch_event_resolves_an_unanswered_write() {
    use ChangeKind::*;
    let h = History {
        operations: vec![
            at(0, 0, 1, create("ns/a", "a1"), written(1)),
            unanswered(0, 2, update("ns/a", "a2", None)),
            unanswered(1, 3, delete("ns/a", None)),
            at(1, 30, 31, create("ns/a", "a3"), written(4)),
        ],
        watches: vec![watch(
            WatchStart::From(0),
            0,
            vec![
                change(Added, "ns/a", 1, "a1"),
                change(Modified, "ns/a", 2, "a2"),
                change(Deleted, "ns/a", 3, "a2"),
                change(Added, "ns/a", 4, "a3"),
            ],
        )],
        compacted: None,
    };
    accepted(&h);
}
