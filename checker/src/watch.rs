//! The watch guarantees, checked for each recorded watch against the committed writes.
//!
//! For a watch of `prefix`, the changes it must deliver after its starting point `R0` are
//! exactly the commits of keys under `prefix` with resourceVersion above `R0`, in
//! resourceVersion order ([`Timeline`]). Checked, up to the last event delivered:
//!
//! - ordered: resourceVersions never go back, and a change never has a resourceVersion at
//!   or below a bookmark delivered before it;
//! - unique: no `(key, resourceVersion)` twice;
//! - atomic: the events of one resourceVersion are consecutive (each write here changes one
//!   key, so this is ordered and unique, but it is checked as such);
//! - each change is a commit: the key is under the prefix, the kind is ADDED for a create,
//!   MODIFIED for an update or patch, DELETED for a delete showing the value the object held
//!   before it, and the resourceVersion and value are the commit's;
//! - reliable: no commit missing between `R0` and the last event (a change or bookmark
//!   after a commit that was not delivered is a gap), including a delete whose outcome the
//!   client never learnt but that the key's linearization needs between two commits the
//!   watch covers, and a delete acknowledged without its resourceVersion (a DELETED event
//!   of its key between the bounds real time gives it, when the watch covers both);
//! - bookmarks: only when asked for, never behind the last change, and a bookmark at `B`
//!   promises every commit at or below `B` was delivered.
//!
//! The starting point `R0`: for `resourceVersion=N` it is `N`. For unset and `0` the watch
//! first sends ADDED events of a snapshot: `R0` is a resourceVersion at which the keys under
//! the prefix held exactly those objects, and the rest of the stream must then be the commits
//! after it; the checker tries each candidate `R0` (the commits' resourceVersions) from the
//! lowest allowed, which for unset is every resourceVersion written before the watch was
//! opened (a consistent snapshot) and for `0` none (it may be stale). For
//! `sendInitialEvents` the `k8s.io/initial-events-end` bookmark names `R0`, which must be at
//! least the requested resourceVersion (NotOlderThan), or, when none was requested, at least
//! every resourceVersion written before the watch was opened.
//!
//! 410 Gone (the request refused, or an ERROR event) is allowed only for a watch from a
//! resourceVersion below [`History::compacted`]. Another error, or an ERROR event with another
//! code, ends what is checked of the watch but is not by itself a violation (a fault test
//! breaks connections on purpose). Resuming from any delivered resourceVersion is checked by
//! the recorder opening watches from such resourceVersions, each checked as above.

use std::collections::{BTreeSet, HashSet};

use crate::describe;
use crate::history::{ChangeKind, History, Rv, WatchEvent, WatchRecord, WatchStart};
use crate::lists;
use crate::resolve::Resolution;
use crate::timeline::{self, Commit, Timeline};

/// Checks every watch; returns the number of events checked.
pub fn check(
    history: &History,
    resolution: &Resolution,
    timeline: &Timeline,
    violations: &mut Vec<String>,
) -> usize {
    let mut events = 0;
    for w in &history.watches {
        events += w.events.len();
        if let Err(problem) = check_watch(history, resolution, timeline, w) {
            violations.push(format!(
                "watch {} of {:?} ({}, opened at {:.3}ms, bookmarks {}): {problem}",
                w.id,
                w.prefix,
                w.start,
                w.opened as f64 / 1e6,
                if w.bookmarks { "asked" } else { "not asked" },
            ));
        }
    }
    events
}

/// Whether 410 Gone is allowed for this watch.
fn gone_allowed(history: &History, w: &WatchRecord) -> bool {
    let start = match w.start {
        WatchStart::From(rv) | WatchStart::InitialEvents(Some(rv)) => rv,
        WatchStart::Unset | WatchStart::Zero | WatchStart::InitialEvents(None) => return false,
    };
    history.compacted.is_some_and(|c| start < c)
}

fn check_watch(
    history: &History,
    resolution: &Resolution,
    timeline: &Timeline,
    w: &WatchRecord,
) -> Result<(), String> {
    if let Some(code) = w.refused {
        if code == 410 && !gone_allowed(history, w) {
            return Err(format!(
                "refused with 410 Gone but nothing below it was compacted (compacted: {:?})",
                history.compacted
            ));
        }
        return Ok(());
    }
    let cut = w
        .events
        .iter()
        .position(|e| matches!(e, WatchEvent::Error { .. }))
        .unwrap_or(w.events.len());
    if let Some(WatchEvent::Error { code: 410 }) = w.events.get(cut)
        && !gone_allowed(history, w)
    {
        return Err(format!(
            "ERROR 410 Gone at event {cut} but nothing below its start was compacted \
             (compacted: {:?})",
            history.compacted
        ));
    }
    let events = &w.events[..cut];
    let lower_bound = || timeline::floor_before(history, resolution, w.opened).map_or(0, |f| f.0);
    match w.start {
        WatchStart::From(rv) => changes(history, timeline, w, events, 0, rv),
        WatchStart::InitialEvents(min) => {
            let end = events.iter().position(|e| {
                matches!(
                    e,
                    WatchEvent::Bookmark {
                        initial_events_end: true,
                        ..
                    }
                )
            });
            let Some(end) = end else {
                // The initial events never ended: each must still show a committed state.
                return initial_states(timeline, w, events);
            };
            let WatchEvent::Bookmark { rv: r0, .. } = events[end] else {
                unreachable!("position found a bookmark")
            };
            let lower = min.unwrap_or_else(lower_bound);
            if r0 < lower {
                return Err(format!(
                    "the initial-events-end bookmark at {r0} is older than {lower}, which the \
                     snapshot had to reach{}",
                    describe::events(events, end, end + 1)
                ));
            }
            let problems = snapshot(history, timeline, w, &events[..end], r0)?;
            if !problems.is_empty() {
                return Err(format!(
                    "the initial events are not the snapshot at {r0}: {}{}",
                    problems.join("; "),
                    describe::events(events, 0, end + 1)
                ));
            }
            changes(history, timeline, w, events, end + 1, r0)
        }
        WatchStart::Unset | WatchStart::Zero
            if w.cut
                && events.iter().all(|e| {
                    matches!(
                        e,
                        WatchEvent::Change {
                            kind: ChangeKind::Added,
                            ..
                        }
                    )
                }) =>
        {
            // Cut before any change after the snapshot arrived: the snapshot may be
            // incomplete, so each of its events must only show a committed state.
            initial_states(timeline, w, events)
        }
        WatchStart::Unset | WatchStart::Zero => {
            let lower = if w.start == WatchStart::Unset {
                lower_bound()
            } else {
                0
            };
            snapshot_then_changes(history, timeline, w, events, lower)
        }
    }
}

/// The initial ADDED events `events` as list items, or why they are not all ADDED events.
fn snapshot(
    history: &History,
    timeline: &Timeline,
    w: &WatchRecord,
    events: &[WatchEvent],
    r0: Rv,
) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    for (n, e) in events.iter().enumerate() {
        match e {
            WatchEvent::Change {
                kind: ChangeKind::Added,
                key,
                rv,
                value,
            } => items.push((key.clone(), *rv, value.clone())),
            _ => {
                return Err(format!(
                    "an initial event is not ADDED{}",
                    describe::events(events, n, n + 1)
                ));
            }
        }
    }
    Ok(lists::snapshot(history, timeline, &w.prefix, r0, &items))
}

/// Initial events of a watch whose initial-events-end bookmark never came.
fn initial_states(
    timeline: &Timeline,
    w: &WatchRecord,
    events: &[WatchEvent],
) -> Result<(), String> {
    for (n, e) in events.iter().enumerate() {
        let WatchEvent::Change {
            kind: ChangeKind::Added,
            key,
            rv,
            value,
        } = e
        else {
            return Err(format!(
                "an event before the initial-events-end bookmark is not ADDED{}",
                describe::events(events, n, n + 1)
            ));
        };
        let held = key.starts_with(&w.prefix)
            && timeline.keys.get(key).is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.rv == *rv && c.after.as_deref() == Some(value))
            });
        if !held {
            return Err(format!(
                "an initial event shows a state no key under the prefix held{}",
                describe::events(events, n, n + 1)
            ));
        }
    }
    Ok(())
}

/// A watch that starts with the snapshot at some `R0 >= lower`, then every change after it.
fn snapshot_then_changes(
    history: &History,
    timeline: &Timeline,
    w: &WatchRecord,
    events: &[WatchEvent],
    lower: Rv,
) -> Result<(), String> {
    let rvs: Vec<Rv> = timeline
        .commits_under(&w.prefix)
        .iter()
        .map(|c| c.rv)
        .collect();
    let mut candidates: BTreeSet<Rv> = rvs.iter().copied().filter(|&r| r >= lower).collect();
    // The snapshot can also sit just before a known commit, after commits whose
    // resourceVersions nobody saw (an acknowledged delete answered with a Status, a write
    // without an answer): the point right below each known commit is a candidate too.
    candidates.extend(rvs.iter().filter(|&&r| r > lower).map(|&r| r - 1));
    candidates.insert(lower);
    let mut first_problem: Option<String> = None;
    for r0 in candidates {
        let split = events
            .iter()
            .position(|e| {
                !matches!(e, WatchEvent::Change { kind: ChangeKind::Added, rv, .. } if *rv <= r0)
            })
            .unwrap_or(events.len());
        // The first change after the snapshot must be the first commit after R0.
        if let Some(WatchEvent::Change { rv, .. }) = events.get(split) {
            let next = rvs.get(rvs.partition_point(|&r| r <= r0));
            if next != Some(rv) {
                continue;
            }
        }
        let problems = snapshot(history, timeline, w, &events[..split], r0)?;
        if !problems.is_empty() {
            first_problem.get_or_insert_with(|| {
                format!(
                    "the initial ADDED events are not the snapshot at {r0}: {}{}",
                    problems.join("; "),
                    describe::events(events, 0, split.min(8))
                )
            });
            continue;
        }
        match changes(history, timeline, w, events, split, r0) {
            Ok(()) => return Ok(()),
            Err(problem) => {
                first_problem.get_or_insert(problem);
            }
        }
    }
    Err(format!(
        "no resourceVersion at or above {lower} explains the events (a snapshot at it, then \
         every commit after it); {}",
        first_problem.unwrap_or_else(|| format!(
            "no snapshot point precedes the first change{}",
            describe::events(events, 0, events.len().min(8))
        ))
    ))
}

/// Whether `key` has a delete commit strictly between `after` and `before`.
fn deleted_between(timeline: &Timeline, key: &str, after: Rv, before: Rv) -> bool {
    timeline
        .keys
        .get(key)
        .into_iter()
        .flatten()
        .any(|c| c.kind == ChangeKind::Deleted && after < c.rv && c.rv < before)
}

/// Checks `events[from..]` as the changes of the watch after resourceVersion `r0`.
fn changes(
    history: &History,
    timeline: &Timeline,
    w: &WatchRecord,
    events: &[WatchEvent],
    from: usize,
    r0: Rv,
) -> Result<(), String> {
    let expected: Vec<&Commit> = timeline
        .commits_under(&w.prefix)
        .into_iter()
        .filter(|c| c.rv > r0)
        .collect();
    let context = |n: usize| describe::events(events, n.saturating_sub(2), n + 1);
    let commit = |c: &Commit| describe::operation(history, c.op);
    // First the order of the whole stream, then its completeness: a swap is reported as
    // out of order rather than as the gap it also opens.
    let mut last = r0;
    let mut last_change: Option<Rv> = None;
    let mut seen: HashSet<(&str, Rv)> = HashSet::new();
    for (n, e) in events.iter().enumerate().skip(from) {
        match e {
            WatchEvent::Change { key, rv, .. } => {
                if !key.starts_with(&w.prefix) {
                    return Err(format!("event {n} is outside the prefix{}", context(n)));
                }
                if !seen.insert((key, *rv)) {
                    return Err(format!("event {n} is delivered twice{}", context(n)));
                }
                if *rv < last || (*rv == last && last_change != Some(*rv)) {
                    return Err(format!(
                        "event {n} is out of order: at {rv}, after {last}{}",
                        context(n)
                    ));
                }
                last = *rv;
                last_change = Some(*rv);
            }
            WatchEvent::Bookmark {
                rv,
                initial_events_end,
            } => {
                if *initial_events_end {
                    return Err(format!(
                        "event {n} is an unexpected initial-events-end bookmark{}",
                        context(n)
                    ));
                }
                if !w.bookmarks {
                    return Err(format!(
                        "event {n} is a bookmark not asked for{}",
                        context(n)
                    ));
                }
                if *rv < last {
                    return Err(format!(
                        "bookmark {n} at {rv} is behind the last event at {last}{}",
                        context(n)
                    ));
                }
                last = *rv;
                last_change = None;
            }
            WatchEvent::Error { .. } => unreachable!("events are cut at the first error"),
        }
    }
    let mut pos = 0;
    for (n, e) in events.iter().enumerate().skip(from) {
        match e {
            WatchEvent::Change {
                kind,
                key,
                rv,
                value,
            } => {
                if let Some(c) = expected.get(pos)
                    && c.rv < *rv
                {
                    return Err(format!(
                        "a commit is missing before event {n}: {}{}",
                        commit(c),
                        context(n)
                    ));
                }
                let Some(c) = expected.get(pos).filter(|c| c.rv == *rv && c.key == *key) else {
                    let what = timeline
                        .commit_at(*rv)
                        .map_or_else(|| "no write".to_string(), commit);
                    return Err(format!(
                        "event {n} is no commit under the prefix (at {rv} the history has {what}){}",
                        context(n)
                    ));
                };
                let shown = if c.kind == ChangeKind::Deleted {
                    &c.before
                } else {
                    &c.after
                };
                if *kind != c.kind || shown.as_deref() != Some(value.as_str()) {
                    return Err(format!(
                        "event {n} does not show its commit {}{}",
                        commit(c),
                        context(n)
                    ));
                }
                pos += 1;
            }
            WatchEvent::Bookmark { rv, .. } => {
                if let Some(c) = expected.get(pos)
                    && c.rv <= *rv
                {
                    return Err(format!(
                        "bookmark {n} at {rv} passes a commit never delivered: {}{}",
                        commit(c),
                        context(n)
                    ));
                }
            }
            WatchEvent::Error { .. } => unreachable!("events are cut at the first error"),
        }
    }
    // A delete that nothing showed but that a key's operations need (an unanswered delete
    // between two commits that need the key absent) must be in a watch that covers both,
    // unless a delete between them is known (a DELETED event whose author is ambiguous).
    for key in timeline.keys_under(&w.prefix) {
        for &(after, before, op) in timeline.maybe_absent.get(key).into_iter().flatten() {
            if let Some(before) = before
                && r0 <= after
                && before <= last
                && !deleted_between(timeline, key, after, before)
            {
                return Err(format!(
                    "no DELETED event of {key} between {after} and {before}, where the key's \
                     operations need the unanswered delete {}",
                    describe::operation(history, op)
                ));
            }
        }
        // An acknowledged delete is between the bounds real time gives it.
        for d in timeline.acknowledged(key) {
            if let Some(below) = d.below
                && r0 <= d.above
                && below <= last
                && !deleted_between(timeline, key, d.above, below)
            {
                return Err(format!(
                    "no DELETED event of {key} between {} and {below}, where the acknowledged \
                     delete {} took effect",
                    d.above,
                    describe::operation(history, d.op)
                ));
            }
        }
    }
    Ok(())
}
