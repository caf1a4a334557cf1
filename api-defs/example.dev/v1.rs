//! Widgets, the demonstration group of apiary. `v1` is the stable, stored and preferred version.
#![group = "example.dev"]
#![version = "v1"]
#![storage]
#![priority = 20]
#![proto_package = "dev.example.v1"]

/// A Widget is a unit of work with a desired number of replicas.
#[kind(namespaced, status, short_names = ["wd"], categories = ["all"])]
#[scale(spec_replicas = ".spec.replicas", status_replicas = ".status.replicas", selector = ".status.selector")]
#[print_column(name = "Replicas", type = "integer", json_path = ".spec.replicas", description = "Desired copies of the widget.")]
#[print_column(name = "Color", type = "string", json_path = ".spec.color", priority = 1, description = "The widget's color.")]
#[rule(cel = "!(has(self.spec.color) && self.spec.color == 'red' && self.spec.replicas > 100)", message = "a red widget may have at most 100 replicas")]
pub struct Widget {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state of the widget.
    #[proto(2)]
    pub spec: WidgetSpec,
    /// The observed state of the widget, written by its controller through the status subresource.
    #[proto(3)]
    pub status: Option<WidgetStatus>,
}

/// The desired state of a Widget.
pub struct WidgetSpec {
    /// Desired number of copies of the widget.
    #[proto(1)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 1000)]
    #[json(always)]
    pub replicas: i32,
    /// The widget's color, in lowercase letters.
    #[proto(2)]
    #[validate(pattern = "^[a-z]+$", max_length = 63)]
    pub color: Option<String>,
}

/// The observed state of a Widget.
pub struct WidgetStatus {
    /// Number of copies observed.
    #[proto(1)]
    pub replicas: i32,
    /// Label selector of the widget's copies, in the string form used by the scale subresource.
    #[proto(2)]
    pub selector: Option<String>,
}
