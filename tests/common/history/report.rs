//! What a recorded history holds, by kind ([`Counts`]): what [`super::check`] prints and
//! [`super::assert_exercised`] asks of a run.

use super::*;

/// The name of an input's kind, for counts.
fn input_kind(input: &Input) -> &'static str {
    match input {
        Input::Create { .. } => "create",
        Input::Get {
            from_cache: false, ..
        } => "get",
        Input::Get {
            from_cache: true, ..
        } => "get rv=0",
        Input::Update {
            precondition: Some(_),
            ..
        } => "update rv",
        Input::Update {
            precondition: None, ..
        } => "update",
        Input::Patch { .. } => "patch",
        Input::Delete {
            precondition: Some(_),
            ..
        } => "delete rv",
        Input::Delete {
            precondition: None, ..
        } => "delete",
        Input::List {
            from_cache: false, ..
        } => "list",
        Input::List {
            from_cache: true, ..
        } => "list rv=0",
    }
}

/// The name of an output's kind (`unknown+` for one with an answer), for counts.
fn output_kind(operation: &Operation) -> &'static str {
    match (&operation.output, operation.ret) {
        (Output::Written { .. }, _) => "written",
        (Output::Found { .. }, _) => "found",
        (Output::Listed { .. }, _) => "listed",
        (Output::NotFound, _) => "not-found",
        (Output::AlreadyExists, _) => "exists",
        (Output::Conflict, _) => "conflict",
        (Output::Rejected, _) => "rejected",
        (Output::Deleted, _) => "deleted",
        (Output::Unknown, Some(_)) => "unknown+",
        (Output::Unknown, None) => "unknown",
    }
}

/// What a history holds, by kind: operations per input and output, watches per start, events
/// per kind.
#[derive(Debug, Default)]
pub struct Counts {
    /// `(input kind, output kind)` → operations.
    pub operations: BTreeMap<(&'static str, &'static str), usize>,
    /// Output kind → operations.
    pub outputs: BTreeMap<&'static str, usize>,
    /// Start kind → watches.
    pub watches: BTreeMap<&'static str, usize>,
    /// Event kind → events.
    pub events: BTreeMap<&'static str, usize>,
    /// Watches refused (status ≠ 200).
    pub refused: usize,
}

impl Counts {
    /// Counts `history`.
    pub fn of(history: &History) -> Counts {
        let mut counts = Counts::default();
        for op in &history.operations {
            let (input, output) = (input_kind(&op.input), output_kind(op));
            *counts.operations.entry((input, output)).or_default() += 1;
            *counts.outputs.entry(output).or_default() += 1;
        }
        for watch in &history.watches {
            let start = match watch.start {
                WatchStart::Unset => "unset",
                WatchStart::Zero => "rv=0",
                WatchStart::From(_) => "from rv",
                WatchStart::InitialEvents(None) => "initial events",
                WatchStart::InitialEvents(Some(_)) => "initial events from rv",
            };
            *counts.watches.entry(start).or_default() += 1;
            counts.refused += usize::from(watch.refused.is_some());
            for event in &watch.events {
                let kind = match event {
                    WatchEvent::Change {
                        kind: ChangeKind::Added,
                        ..
                    } => "added",
                    WatchEvent::Change {
                        kind: ChangeKind::Modified,
                        ..
                    } => "modified",
                    WatchEvent::Change {
                        kind: ChangeKind::Deleted,
                        ..
                    } => "deleted",
                    WatchEvent::Bookmark {
                        initial_events_end: true,
                        ..
                    } => "initial-events-end",
                    WatchEvent::Bookmark { .. } => "bookmark",
                    WatchEvent::Error { code: 410 } => "error 410",
                    WatchEvent::Error { .. } => "error other",
                };
                *counts.events.entry(kind).or_default() += 1;
            }
        }
        counts
    }

    /// Operations with `output` kind.
    pub fn output(&self, output: &str) -> usize {
        self.outputs.get(output).copied().unwrap_or_default()
    }

    /// Events of `kind`.
    pub fn event(&self, kind: &str) -> usize {
        self.events.get(kind).copied().unwrap_or_default()
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "operations by output: {:?}", self.outputs)?;
        writeln!(f, "operations by input and output: {:?}", self.operations)?;
        writeln!(
            f,
            "watches by start: {:?} ({} refused)",
            self.watches, self.refused
        )?;
        write!(f, "watch events: {:?}", self.events)
    }
}
