//! Readable one-line descriptions of operations and watch events, for violations.

use std::fmt;

use crate::history::{ChangeKind, History, Input, Operation, Output, WatchEvent, WatchStart};

/// Nanoseconds as milliseconds with three decimals.
fn ms(ns: u64) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, (ns / 1_000) % 1_000)
}

/// `#index` and the operation, as [`Operation`]'s `Display` shows it.
pub fn operation(history: &History, index: usize) -> String {
    format!("#{index} {}", history.operations[index])
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ret = self.ret.map_or_else(|| "no answer".to_string(), ms);
        write!(
            f,
            "client {} [{} .. {}] {} -> {}",
            self.client,
            ms(self.call),
            ret,
            self.input,
            self.output
        )
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cache = |c: &bool| if *c { " (resourceVersion=0)" } else { "" };
        let pre = |p: &Option<u64>| p.map(|p| format!(" if rv={p}")).unwrap_or_default();
        match self {
            Input::Create { key, value } => write!(f, "create {key} = {value:?}"),
            Input::Get { key, from_cache } => write!(f, "get {key}{}", cache(from_cache)),
            Input::Update {
                key,
                value,
                precondition,
            } => write!(f, "update {key} = {value:?}{}", pre(precondition)),
            Input::Patch { key, value } => write!(f, "patch {key} = {value:?}"),
            Input::Delete { key, precondition } => write!(f, "delete {key}{}", pre(precondition)),
            Input::List { prefix, from_cache } => {
                write!(f, "list {prefix:?}{}", cache(from_cache))
            }
        }
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Written { rv } => write!(f, "written rv={rv}"),
            Output::Found { rv, value } => write!(f, "found rv={rv} {value:?}"),
            Output::Listed { rv, items } => {
                write!(f, "listed rv={rv} [")?;
                for (n, (key, rv, value)) in items.iter().enumerate() {
                    let sep = if n == 0 { "" } else { ", " };
                    write!(f, "{sep}{key}@{rv}={value:?}")?;
                }
                write!(f, "]")
            }
            Output::Deleted => write!(f, "deleted (rv unknown)"),
            Output::NotFound => write!(f, "not found"),
            Output::AlreadyExists => write!(f, "already exists"),
            Output::Conflict => write!(f, "conflict"),
            Output::Rejected => write!(f, "rejected"),
            Output::Unknown => write!(f, "unknown"),
        }
    }
}

impl fmt::Display for WatchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchEvent::Change {
                kind,
                key,
                rv,
                value,
            } => {
                let kind = match kind {
                    ChangeKind::Added => "ADDED",
                    ChangeKind::Modified => "MODIFIED",
                    ChangeKind::Deleted => "DELETED",
                };
                write!(f, "{kind} {key}@{rv}={value:?}")
            }
            WatchEvent::Bookmark {
                rv,
                initial_events_end,
            } => {
                let end = if *initial_events_end {
                    " (initial-events-end)"
                } else {
                    ""
                };
                write!(f, "BOOKMARK @{rv}{end}")
            }
            WatchEvent::Error { code } => write!(f, "ERROR {code}"),
        }
    }
}

impl fmt::Display for WatchStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchStart::Unset => write!(f, "resourceVersion unset"),
            WatchStart::Zero => write!(f, "resourceVersion=0"),
            WatchStart::From(rv) => write!(f, "resourceVersion={rv}"),
            WatchStart::InitialEvents(None) => {
                write!(f, "sendInitialEvents, resourceVersion unset")
            }
            WatchStart::InitialEvents(Some(rv)) => {
                write!(f, "sendInitialEvents, resourceVersion={rv} NotOlderThan")
            }
        }
    }
}

/// A watch's events `from..to` (at most a few either side are worth printing).
pub fn events(events: &[WatchEvent], from: usize, to: usize) -> String {
    let mut out = String::new();
    for (n, e) in events.iter().enumerate().take(to).skip(from) {
        out.push_str(&format!("\n      [{n}] {e}"));
    }
    out
}
