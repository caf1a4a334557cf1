//! Lists as snapshots at their resourceVersion, and reads served from the watch cache.
//!
//! A list answered `rv` with items must be exactly what the keys under its prefix held at
//! `rv` (each key's last commit at or below `rv`; see [`Timeline`]): every present key listed
//! once with that commit's resourceVersion and value, no absent key, no key or value the
//! history never wrote. A consistent list (resourceVersion unset) is a linearizable read at
//! the point `rv`: `rv` is at least every resourceVersion written before the list was called,
//! and below every one written by a write called after the list returned, and it shows no
//! object that a delete acknowledged without its resourceVersion, called after the object's
//! write returned, removed before the list was called.
//!
//! Reads with `resourceVersion=0` (gets and lists from the watch cache) may be stale, so they
//! have no lower real-time bound (a cached list still has the upper one), but each must show a state the key really held, and a client's
//! reads from the cache must not go back: a cached list at `rv` needs `rv` at least the
//! point of the client's earlier cache reads, and a cached get needs a state that still held
//! at that point (its next commit above it). The point of a cached list is its `rv`; of a
//! cached get, at least the resourceVersion it found. A client's own writes and consistent
//! reads do not raise it: Kubernetes lets a `resourceVersion=0` read lag them.

use std::collections::{HashMap, HashSet};

use crate::describe;
use crate::history::{History, Input, Output, Rv};
use crate::model::{self, Class};
use crate::resolve::Resolution;
use crate::timeline::{self, Timeline};

/// Checks every list and every read from the cache; returns the number of lists checked.
pub fn check(
    history: &History,
    resolution: &Resolution,
    timeline: &Timeline,
    violations: &mut Vec<String>,
) -> usize {
    let ops = &history.operations;
    let mut order: Vec<usize> = (0..ops.len())
        .filter(|&i| model::classify(&ops[i]) == Class::Read)
        .collect();
    order.sort_by_key(|&i| (ops[i].call, i));
    // Per client, the point of its last read from the cache, and which read set it.
    let mut floor: HashMap<usize, (Rv, usize)> = HashMap::new();
    let mut lists = 0;
    for i in order {
        let op = &ops[i];
        let client_floor = floor.get(&op.client).copied();
        match (&op.input, &op.output) {
            (Input::List { prefix, from_cache }, Output::Listed { rv, items }) => {
                lists += 1;
                let mut problems = snapshot(history, timeline, prefix, *rv, items);
                problems.extend(real_time(history, resolution, i, *rv, *from_cache));
                if !*from_cache {
                    problems.extend(deleted_before(history, timeline, i, prefix, *rv, items));
                }
                if *from_cache {
                    if let Some((f, by)) = client_floor
                        && *rv < f
                    {
                        problems.push(format!(
                            "went back from the client's earlier cached read at {f} ({})",
                            describe::operation(history, by)
                        ));
                    }
                    raise(&mut floor, op.client, *rv, i);
                }
                if !problems.is_empty() {
                    violations.push(format!(
                        "list is not a snapshot at its resourceVersion:\n    {}\n  because:\n    - {}",
                        describe::operation(history, i),
                        problems.join("\n    - ")
                    ));
                }
            }
            (Input::List { .. }, _) => violations.push(format!(
                "list answered something other than a list: {}",
                describe::operation(history, i)
            )),
            (
                Input::Get {
                    key,
                    from_cache: true,
                },
                output,
            ) => {
                let problem = cached_get(timeline, key, output, client_floor.map(|f| f.0));
                if let Some(problem) = problem {
                    let by = client_floor
                        .map(|(_, by)| format!("\n    after {}", describe::operation(history, by)))
                        .unwrap_or_default();
                    violations.push(format!(
                        "read from the cache {problem}:\n    {}{by}",
                        describe::operation(history, i)
                    ));
                }
                if let Output::Found { rv, .. } = output {
                    raise(&mut floor, op.client, *rv, i);
                }
            }
            _ => {}
        }
    }
    lists
}

fn raise(floor: &mut HashMap<usize, (Rv, usize)>, client: usize, rv: Rv, by: usize) {
    let f = floor.entry(client).or_insert((rv, by));
    if rv > f.0 {
        *f = (rv, by);
    }
}

/// What is wrong with `items` as the snapshot of `prefix` at `rv`.
pub(crate) fn snapshot(
    history: &History,
    timeline: &Timeline,
    prefix: &str,
    rv: Rv,
    items: &[(String, Rv, String)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut listed: HashMap<&str, (Rv, &str)> = HashMap::new();
    let mut seen = HashSet::new();
    for (key, at, value) in items {
        if !seen.insert(key.as_str()) {
            problems.push(format!("{key} listed twice"));
        }
        if !key.starts_with(prefix) {
            problems.push(format!("{key} is outside the prefix"));
        }
        if *at > rv {
            problems.push(format!("{key}@{at} is newer than the list"));
        }
        if !timeline.all_keys.contains(key) {
            problems.push(format!("{key} is no key of the history"));
        }
        listed.insert(key, (*at, value));
    }
    for key in timeline.keys_under(prefix) {
        let expected = timeline.at(key, rv);
        let got = listed.get(key.as_str()).copied();
        if !expected.allows(got) {
            let show = |s: Option<(Rv, &str)>| match s {
                Some((rv, v)) => format!("{key}@{rv}={v:?}"),
                None => format!("{key} absent"),
            };
            let by = expected
                .by
                .map(|op| format!(" (made by {})", describe::operation(history, op)))
                .unwrap_or_default();
            problems.push(format!(
                "{} at {rv}{by} but the list shows {}",
                show(expected.state),
                show(got)
            ));
        }
    }
    problems
}

/// The real-time bounds of a consistent read at `rv` by operation `i`.
/// (A list from the cache has only the upper one: it may be stale, never from the future.)
fn real_time(
    history: &History,
    resolution: &Resolution,
    i: usize,
    rv: Rv,
    stale_allowed: bool,
) -> Vec<String> {
    let ops = &history.operations;
    let op = &ops[i];
    let mut problems = Vec::new();
    if let Some((floor, w)) = timeline::floor_before(history, resolution, op.call)
        && rv < floor
        && !stale_allowed
    {
        problems.push(format!(
            "a write returned at {floor} before the list was called ({})",
            describe::operation(history, w)
        ));
    }
    let later = timeline::ceiling_after(history, resolution, op.ret.unwrap_or(u64::MAX));
    if let Some((ceiling, w)) = later
        && rv >= ceiling
    {
        problems.push(format!(
            "a write called after the list returned has resourceVersion {ceiling} ({})",
            describe::operation(history, w)
        ));
    }
    problems
}

/// What is wrong with a consistent list (operation `i`) at `rv` showing a key that a delete
/// acknowledged without its resourceVersion had removed: the delete returned before the list
/// was called (so it is below `rv`) and was called after the item's commit returned (so it is
/// above the item's resourceVersion).
fn deleted_before(
    history: &History,
    timeline: &Timeline,
    i: usize,
    prefix: &str,
    rv: Rv,
    items: &[(String, Rv, String)],
) -> Vec<String> {
    let ops = &history.operations;
    let mut problems = Vec::new();
    for (key, at, value) in items.iter().filter(|(key, ..)| key.starts_with(prefix)) {
        let gone = timeline.acknowledged(key).iter().find(|d| {
            d.above >= *at
                && ops[d.op].ret.is_some_and(|r| r < ops[i].call)
                // Else the snapshot already has the key absent.
                && d.below.is_none_or(|b| b > rv)
        });
        if let Some(d) = gone {
            problems.push(format!(
                "{key}@{at}={value:?} was deleted before the list was called ({})",
                describe::operation(history, d.op)
            ));
        }
    }
    problems
}

/// What is wrong with a cached get of `key` answered `output`, for a client whose cache reads
/// had reached `floor`.
fn cached_get(
    timeline: &Timeline,
    key: &str,
    output: &Output,
    floor: Option<Rv>,
) -> Option<String> {
    let floor = floor.unwrap_or(0);
    let commits = timeline.keys.get(key).map(Vec::as_slice).unwrap_or(&[]);
    match output {
        Output::Found { rv, value } => {
            let Some(pos) = commits
                .iter()
                .position(|c| c.rv == *rv && c.after.as_deref() == Some(value))
            else {
                return Some("shows a state the key never held".to_string());
            };
            let until = commits.get(pos + 1).map(|c| c.rv);
            until.is_some_and(|u| u <= floor).then(|| {
                format!(
                    "went back: that state ended at {} before {floor}",
                    until.unwrap_or(0)
                )
            })
        }
        Output::NotFound => {
            // Absent before the first commit, after each delete, and in uncertain windows.
            let mut ends: Vec<Option<Rv>> = vec![commits.first().map(|c| c.rv)];
            for (n, c) in commits.iter().enumerate() {
                if c.after.is_none() {
                    ends.push(commits.get(n + 1).map(|c| c.rv));
                }
            }
            if let Some(windows) = timeline.maybe_absent.get(key) {
                ends.extend(windows.iter().map(|&(_, to, _)| to));
            }
            // An acknowledged delete is below its `below`: the key's next commit after it is
            // at the latest the first at or above that.
            for d in timeline.acknowledged(key) {
                ends.push(
                    d.below
                        .and_then(|b| commits.iter().find(|c| c.rv >= b).map(|c| c.rv)),
                );
            }
            let held = ends.iter().any(|end| end.is_none_or(|e| e > floor));
            (!held).then(|| format!("went back: the key was not absent at or after {floor}"))
        }
        _ => Some("answered something other than found or not found".to_string()),
    }
}
