//! stable.example.com/v1beta1: imported from the CustomResourceDefinition `crontabs.stable.example.com` by `codegen import-crd`.
#![group = "stable.example.com"]
#![version = "v1beta1"]
#![priority = 10]
#![crd_validation]

/// A CronTab runs an image on a cron schedule.
#[kind(namespaced, status, plural = "crontabs", singular = "crontab", short_names = ["ct"], categories = ["all"])]
#[print_column(name = "Spec", type = "string", json_path = ".spec.cronSpec", description = "The cron schedule.")]
#[print_column(name = "Image", type = "string", json_path = ".spec.image", description = "Custom resource definition column (in JSONPath format): .spec.image")]
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
pub struct CronTabSpec {
    /// The schedule, in cron format (five fields).
    #[proto(1)]
    #[validate(required, pattern = "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$")]
    pub cron_spec: Option<String>,
    /// The container image to run.
    #[proto(2)]
    #[validate(required, max_length = 253)]
    pub image: Option<String>,
    /// How many copies run at once.
    #[proto(3)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 100)]
    pub replicas: i32,
}

/// The observed state.
pub struct CronTabStatus {
    /// How many copies run.
    #[proto(1)]
    pub replicas: Option<i32>,
}
