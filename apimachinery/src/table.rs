//! What the kinds' `Table` convertors share: the columns every kind prints (`Name`, `Age`,
//! `Created At`) as kube-apiserver defines them, the human age format of `kubectl get`
//! (`duration.HumanDuration`), kube-apiserver's default convertor (`Name` and `Created At`, for
//! built-in kinds without a printer) and [`TypedTable`], a convertor over one typed struct.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::Value;

use crate::meta::{MicroTime, ObjectMeta, Time};
use crate::resource::PrinterColumn;
use crate::runtime::Object;
use crate::strategy::TableConvertor;

/// The description of `metadata.name` (`ObjectMeta`'s Swagger documentation).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// The description of `metadata.creationTimestamp` (`ObjectMeta`'s Swagger documentation).
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A column of a kind's own Table (its `json_path` is empty: the convertor computes the cell).
pub const fn column(
    name: &'static str,
    type_: &'static str,
    priority: i32,
    description: &'static str,
) -> PrinterColumn {
    PrinterColumn {
        name,
        type_,
        format: "",
        description,
        priority,
        json_path: "",
    }
}

/// The `Name` column (type `string`, format `name`).
pub const NAME_COLUMN: PrinterColumn = PrinterColumn {
    format: "name",
    ..column("Name", "string", 0, NAME_DESCRIPTION)
};

/// The `Age` column of kube-apiserver's built-in printers: a `string` cell holding the human
/// age ([`age`]).
pub const AGE_COLUMN: PrinterColumn = column("Age", "string", 0, CREATION_TIMESTAMP_DESCRIPTION);

/// The `Created At` column of kube-apiserver's default convertor: a `date` cell holding the
/// creation time in RFC 3339 ([`created_at`]).
pub const CREATED_AT_COLUMN: PrinterColumn =
    column("Created At", "date", 0, CREATION_TIMESTAMP_DESCRIPTION);

/// Formats a duration like Kubernetes' `duration.HumanDuration`: `45s`, `5m`, `5m30s`, `3h`,
/// `3h20m`, `2d`, `2d5h`, `45d`, `2y30d`, `5y`; `0s` for up to a second in the future and
/// `<invalid>` beyond.
pub fn human_duration(d: Duration) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Go's zero `time.Time` (January 1 of year 1, UTC), which `IsZero` reports as unset.
fn is_go_zero(t: &DateTime<Utc>) -> bool {
    t.timestamp() == -62_135_596_800 && t.timestamp_subsec_nanos() == 0
}

/// Whether a `metav1.Time` is unset (`IsZero`): absent or Go's zero instant.
pub fn time_is_zero(t: Option<&Time>) -> bool {
    t.is_none_or(|t| is_go_zero(&t.0))
}

/// Whether a `metav1.MicroTime` is unset (`IsZero`): absent or Go's zero instant.
pub fn micro_time_is_zero(t: Option<&MicroTime>) -> bool {
    t.is_none_or(|t| is_go_zero(&t.0))
}

/// The human time elapsed from `t` to `now` (`translateTimestampSince`): `<unknown>` when `t`
/// is unset.
pub fn since(t: Option<&Time>, now: DateTime<Utc>) -> String {
    match t {
        Some(t) if !time_is_zero(Some(t)) => human_duration(now.signed_duration_since(t.0)),
        _ => "<unknown>".to_string(),
    }
}

/// The human time elapsed from the microsecond time `t` to `now`
/// (`translateMicroTimestampSince`): `<unknown>` when `t` is unset.
pub fn micro_since(t: Option<&MicroTime>, now: DateTime<Utc>) -> String {
    match t {
        Some(t) if !micro_time_is_zero(Some(t)) => human_duration(now.signed_duration_since(t.0)),
        _ => "<unknown>".to_string(),
    }
}

/// The `Name` cell: `metadata.name`, empty when unset.
pub fn name(meta: &ObjectMeta) -> Value {
    Value::from(meta.name.clone().unwrap_or_default())
}

/// The `Age` cell: the human age of `metadata.creationTimestamp` at `now`.
pub fn age(meta: &ObjectMeta, now: DateTime<Utc>) -> Value {
    Value::from(since(meta.creation_timestamp.as_ref(), now))
}

/// The `Created At` cell: `metadata.creationTimestamp` in RFC 3339, UTC, to the second (Go's
/// zero time when unset, as kube-apiserver's default convertor prints it).
pub fn created_at(meta: &ObjectMeta) -> Value {
    let text = match &meta.creation_timestamp {
        Some(t) => t.0.to_rfc3339_opts(SecondsFormat::Secs, true),
        None => "0001-01-01T00:00:00Z".to_string(),
    };
    Value::from(text)
}

/// The number of entries of a map or list as a cell (Go's `int64(len(…))`).
pub fn count(n: usize) -> Value {
    Value::from(n as u64)
}

/// kube-apiserver's default convertor (`rest.NewDefaultTableConvertor`), for built-in kinds
/// without a printer of their own (Roles, ClusterRoles, the reviews): `Name` and `Created At`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultTableConvertor;

static DEFAULT_COLUMNS: [PrinterColumn; 2] = [NAME_COLUMN, CREATED_AT_COLUMN];

impl TableConvertor for DefaultTableConvertor {
    fn columns(&self) -> &'static [PrinterColumn] {
        &DEFAULT_COLUMNS
    }

    fn cells(&self, object: &dyn Object, _now: DateTime<Utc>) -> Vec<Value> {
        let meta = object.metadata();
        vec![name(meta), created_at(meta)]
    }
}

/// A convertor over the struct `T` of one kind's version: its columns and a function computing
/// the cells of one object at an instant. An object of another type (which the kind's table
/// never receives) gets its name and empty cells, so its row still fits the columns.
pub struct TypedTable<T> {
    columns: &'static [PrinterColumn],
    cells: fn(&T, DateTime<Utc>) -> Vec<Value>,
}

impl<T> TypedTable<T> {
    /// A convertor with these columns and this cell function (usable in a `static`).
    pub const fn new(
        columns: &'static [PrinterColumn],
        cells: fn(&T, DateTime<Utc>) -> Vec<Value>,
    ) -> Self {
        Self { columns, cells }
    }
}

impl<T: Object> TableConvertor for TypedTable<T> {
    fn columns(&self) -> &'static [PrinterColumn] {
        self.columns
    }

    fn cells(&self, object: &dyn Object, now: DateTime<Utc>) -> Vec<Value> {
        match object.downcast_ref::<T>() {
            Some(typed) => (self.cells)(typed, now),
            None => self
                .columns
                .iter()
                .map(|c| {
                    if c.format == "name" {
                        name(object.metadata())
                    } else {
                        Value::Null
                    }
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_duration_matches_kubernetes() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (300, "5m"),
            (330, "5m30s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 1200, "3h20m"),
            (10 * 3600, "10h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 5 * 3600, "2d5h"),
            (45 * 86400, "45d"),
            (2 * 365 * 86400 + 30 * 86400, "2y30d"),
            (3 * 365 * 86400, "3y"),
            (10 * 365 * 86400, "10y"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(Duration::seconds(s)), want, "{s}");
        }
    }

    #[test]
    fn since_reports_unset_times_as_unknown() {
        let now = Time::from_timestamp(1_700_000_000).0;
        let t = Time::from_timestamp(1_700_000_000 - 330);
        assert_eq!(since(Some(&t), now), "5m30s");
        assert_eq!(since(None, now), "<unknown>");
        let go_zero = Time::from_timestamp(-62_135_596_800);
        assert!(time_is_zero(Some(&go_zero)));
        assert_eq!(since(Some(&go_zero), now), "<unknown>");
        assert_eq!(
            micro_since(Some(&MicroTime(now - Duration::hours(3))), now),
            "3h"
        );
        assert_eq!(micro_since(None, now), "<unknown>");
    }

    #[test]
    fn default_convertor_prints_name_and_created_at() {
        let meta = ObjectMeta {
            name: Some("reader".into()),
            creation_timestamp: Some(Time::from_timestamp(1_700_000_000)),
            ..Default::default()
        };
        assert_eq!(name(&meta), "reader");
        assert_eq!(created_at(&meta), "2023-11-14T22:13:20Z");
        assert_eq!(created_at(&ObjectMeta::default()), "0001-01-01T00:00:00Z");
        let names: Vec<_> = DEFAULT_COLUMNS.iter().map(|c| (c.name, c.type_)).collect();
        assert_eq!(names, [("Name", "string"), ("Created At", "date")]);
        assert_eq!(DEFAULT_COLUMNS[0].format, "name");
    }
}
