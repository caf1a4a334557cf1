//! stable.example.com/v1: imported from the CustomResourceDefinition `crontabs.stable.example.com` by `codegen import-crd`.
#![group = "stable.example.com"]
#![version = "v1"]
#![storage]
#![priority = 20]
#![crd_validation]

/// A CronTab runs an image on a cron schedule.
#[kind(namespaced, status, plural = "crontabs", singular = "crontab", short_names = ["ct"], categories = ["all"])]
#[scale(spec_replicas = ".spec.replicas", status_replicas = ".status.replicas", selector = ".status.labelSelector")]
#[print_column(name = "Spec", type = "string", json_path = ".spec.cronSpec", description = "The cron schedule.")]
#[print_column(name = "Image", type = "string", json_path = ".spec.image", description = "Custom resource definition column (in JSONPath format): .spec.image")]
#[print_column(name = "Replicas", type = "integer", json_path = ".spec.replicas", description = "How many copies run at once.")]
#[print_column(name = "Policy", type = "string", json_path = ".spec.concurrencyPolicy", description = "What happens when a run is due while the last one still runs.", priority = 1)]
pub struct CronTab {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired schedule and what it runs.
    #[proto(2)]
    pub spec: Option<CronTabSpec>,
    /// The observed state.
    #[proto(3)]
    pub status: Option<CronTabStatus>,
}

/// The desired schedule and what it runs.
#[rule(cel = "self.minReplicas <= self.replicas", message = "replicas may not be fewer than minReplicas")]
pub struct CronTabSpec {
    /// What happens when a run is due while the last one still runs.
    #[proto(1)]
    #[default("Allow")]
    #[validate(enum = ["Allow", "Forbid", "Replace"])]
    pub concurrency_policy: String,
    /// The schedule, in cron format (five fields).
    #[proto(2)]
    #[validate(required, pattern = "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$")]
    pub cron_spec: Option<String>,
    /// Environment variables of a run.
    #[proto(3)]
    pub env: Option<BTreeMap<String, String>>,
    /// The container image to run.
    #[proto(4)]
    #[validate(required, max_length = 253)]
    pub image: Option<String>,
    /// The fewest copies the CronTab may be scaled to.
    #[proto(5)]
    #[default(0)]
    #[validate(minimum = 0)]
    pub min_replicas: i32,
    /// The ports a run listens on, by name.
    #[proto(6)]
    #[list(type = "map", map_keys = ["name"])]
    pub ports: Option<Vec<CronTabSpecPortsItem>>,
    /// How many copies run at once.
    #[proto(7)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 100)]
    pub replicas: i32,
    /// Free-form tags, each at most once.
    #[proto(8)]
    #[validate(max_items = 10)]
    #[list(type = "set")]
    pub tags: Option<Vec<String>>,
    /// How long a run may take, in seconds or as a duration such as 90s.
    #[proto(9)]
    pub timeout: Option<IntOrString>,
}

/// A named port.
pub struct CronTabSpecPortsItem {
    /// The port's name.
    #[proto(1)]
    #[validate(required)]
    pub name: Option<String>,
    /// The port number.
    #[proto(2)]
    #[validate(required, minimum = 1, maximum = 65535)]
    pub port: Option<i32>,
    /// The protocol.
    #[proto(3)]
    #[default("TCP")]
    #[validate(enum = ["TCP", "UDP"])]
    pub protocol: String,
}

/// The observed state.
pub struct CronTabStatus {
    /// The label selector of the runs, for the scale subresource.
    #[proto(1)]
    pub label_selector: Option<String>,
    /// When a run was last scheduled.
    #[proto(2)]
    #[validate(format = "date-time")]
    pub last_schedule_time: Option<String>,
    /// How many copies run.
    #[proto(3)]
    pub replicas: Option<i32>,
}
