//! A recorded history: what each client asked, when, and what it was told.
//!
//! Times are nanoseconds since a common origin of the run (one `Instant` shared by every
//! recorder), so call and return times of different clients are comparable. Keys are opaque
//! strings (a test uses `namespace/name`); values are opaque strings that the recorder makes
//! unique per write (for example `client-seq`), so a read or a watch event names the write it
//! shows. Resource versions are the decimal resourceVersion parsed as `u64`.

/// A resourceVersion as an integer (apiary's are decimal revisions, as etcd's).
pub type Rv = u64;

/// One client operation of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// The client (one sequential actor) that issued the operation.
    pub client: usize,
    /// When the request was sent, in nanoseconds since the run's origin.
    pub call: u64,
    /// When the answer arrived; `None` when none did (timeout, connection lost, the server
    /// killed): the operation may or may not have taken effect, at any time after `call`.
    pub ret: Option<u64>,
    /// What was asked.
    pub input: Input,
    /// What the server answered.
    pub output: Output,
}

/// What an operation asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Create `key` holding `value` (POST).
    Create {
        /// The object's key.
        key: String,
        /// The value written (unique in the run).
        value: String,
    },
    /// Read `key` (GET). `from_cache` is true for a read with `resourceVersion=0`, which
    /// Kubernetes allows to be served stale from the watch cache (it must still show a value
    /// the key held at some point not before the client's previous reads); false for a
    /// consistent read, which must be linearizable.
    Get {
        /// The object's key.
        key: String,
        /// Whether the read was `resourceVersion=0` (may be stale).
        from_cache: bool,
    },
    /// Replace `key`'s value (PUT). With `precondition` the body carried that
    /// resourceVersion, and the update must fail with a conflict unless it is current.
    Update {
        /// The object's key.
        key: String,
        /// The value written (unique in the run).
        value: String,
        /// The resourceVersion the update was conditioned on, if any.
        precondition: Option<Rv>,
    },
    /// Set `key`'s value with a merge patch (PATCH), without a precondition.
    Patch {
        /// The object's key.
        key: String,
        /// The value written (unique in the run).
        value: String,
    },
    /// Delete `key` (DELETE), optionally with a resourceVersion precondition.
    Delete {
        /// The object's key.
        key: String,
        /// The resourceVersion the delete was conditioned on, if any.
        precondition: Option<Rv>,
    },
    /// List every key starting with `prefix` (for example a namespace's `ns/`).
    /// `from_cache` as for [`Input::Get`]: `resourceVersion=0` may be stale, unset must be a
    /// consistent (linearizable) snapshot.
    List {
        /// The keys listed are those starting with this prefix.
        prefix: String,
        /// Whether the list was `resourceVersion=0` (may be stale).
        from_cache: bool,
    },
}

impl Input {
    /// The key a single-object operation is about; `None` for a list.
    pub fn key(&self) -> Option<&str> {
        match self {
            Input::Create { key, .. }
            | Input::Get { key, .. }
            | Input::Update { key, .. }
            | Input::Patch { key, .. }
            | Input::Delete { key, .. } => Some(key),
            Input::List { .. } => None,
        }
    }
}

/// What the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// The write succeeded; `rv` is the resourceVersion of the object it returned (for a
    /// delete, the object as deleted carries the deletion's resourceVersion, as
    /// kube-apiserver's storage returns it).
    Written {
        /// The resourceVersion of the change.
        rv: Rv,
    },
    /// The read found the object at resourceVersion `rv` holding `value`.
    Found {
        /// The object's resourceVersion.
        rv: Rv,
        /// The value it held.
        value: String,
    },
    /// The list's items `(key, rv, value)` in the order served, and the list's
    /// resourceVersion.
    Listed {
        /// The list's `metadata.resourceVersion`.
        rv: Rv,
        /// The items as `(key, resourceVersion, value)`.
        items: Vec<(String, Rv, String)>,
    },
    /// The delete succeeded (200 or 202 with a success `Status`, or the deleted object without
    /// a usable resourceVersion, as kube-apiserver answers for kinds whose store does not
    /// return the deleted object): it certainly took effect between call and return, at a
    /// resourceVersion the answer does not tell. A delete answered with the object at its
    /// resourceVersion is [`Output::Written`].
    Deleted,
    /// 404 NotFound.
    NotFound,
    /// 409 AlreadyExists (a create of a key that exists).
    AlreadyExists,
    /// 409 Conflict (a resourceVersion precondition that did not hold).
    Conflict,
    /// The operation certainly did not take effect (an answer such as 429, 400 or 403 that
    /// Kubernetes gives before storage is touched).
    Rejected,
    /// No answer, or an answer that does not say whether the write happened (a timeout, a
    /// 5xx, a reset connection): a write may have taken effect, a read tells nothing.
    Unknown,
}

/// Where a watch started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStart {
    /// `resourceVersion` unset: synthetic ADDED events for the current state (a consistent
    /// snapshot), then every later change.
    Unset,
    /// `resourceVersion=0`: ADDED events for some recent state (may be stale), then every
    /// later change.
    Zero,
    /// `resourceVersion=N`: every change after `N`, nothing before.
    From(Rv),
    /// `sendInitialEvents=true&resourceVersionMatch=NotOlderThan` (WatchList) from `rv`
    /// (`None` for unset): ADDED events for a snapshot not older than `rv`, then a bookmark
    /// annotated `k8s.io/initial-events-end`, then every later change.
    InitialEvents(Option<Rv>),
}

/// One event a watch delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// ADDED, MODIFIED or DELETED of `key` at `rv`, showing `value` (for DELETED, the value
    /// the object held when deleted).
    Change {
        /// ADDED, MODIFIED or DELETED.
        kind: ChangeKind,
        /// The object's key.
        key: String,
        /// The event's resourceVersion.
        rv: Rv,
        /// The value the object shows in the event.
        value: String,
    },
    /// A BOOKMARK at `rv`; `initial_events_end` when it carries the
    /// `k8s.io/initial-events-end` annotation.
    Bookmark {
        /// The bookmark's resourceVersion.
        rv: Rv,
        /// Whether it ends the initial events of a WatchList.
        initial_events_end: bool,
    },
    /// An ERROR event with this HTTP code (410 Gone for a compacted resourceVersion).
    Error {
        /// The Status code of the error.
        code: u16,
    },
}

/// The kind of a change event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
}

/// What one watch delivered, from when it was opened until the recorder stopped reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchRecord {
    /// Which watch (for messages).
    pub id: usize,
    /// The keys watched are those starting with this prefix.
    pub prefix: String,
    /// Where it started.
    pub start: WatchStart,
    /// When the watch request was sent (nanoseconds since the run's origin).
    pub opened: u64,
    /// When the recorder stopped reading (or the stream ended).
    pub closed: u64,
    /// Whether the request asked for bookmarks (`allowWatchBookmarks=true`).
    pub bookmarks: bool,
    /// The HTTP status of the watch request itself when it was not 200 (for example 410 for a
    /// compacted resourceVersion); `None` when the stream opened.
    pub refused: Option<u16>,
    /// The events in the order delivered.
    pub events: Vec<WatchEvent>,
    /// Whether the recorder stopped reading while the stream was still open (the run stopped,
    /// or its read time passed): the events are then what arrived until then, and a watch
    /// from the current state may have been cut before its initial ADDED events were all
    /// delivered (under load the server may not have sent any yet).
    pub cut: bool,
}

/// A whole recorded run: every client operation and every watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Every client operation, in any order.
    pub operations: Vec<Operation>,
    /// Every watch.
    pub watches: Vec<WatchRecord>,
    /// The storage was compacted up to this resourceVersion at some point of the run, if
    /// known (a watch from below it may be refused with 410 Gone).
    pub compacted: Option<Rv>,
}
