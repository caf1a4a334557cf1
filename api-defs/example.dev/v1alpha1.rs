//! Widgets, first preview version: the desired replica count was called `size`.
#![group = "example.dev"]
#![version = "v1alpha1"]
#![priority = 10]
#![proto_package = "dev.example.v1alpha1"]

/// A Widget is a unit of work with a desired number of copies (its size).
#[kind(namespaced, status, short_names = ["wd"], categories = ["all"])]
#[scale(spec_replicas = ".spec.size", status_replicas = ".status.replicas", selector = ".status.selector")]
#[print_column(name = "Size", type = "integer", json_path = ".spec.size", description = "Desired copies of the widget.")]
#[print_column(name = "Color", type = "string", json_path = ".spec.color", priority = 1, description = "The widget's color.")]
pub struct Widget {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state of the widget.
    #[proto(2)]
    pub spec: WidgetSpec,
    /// The observed state of the widget.
    #[proto(3)]
    pub status: Option<WidgetStatus>,
}

/// The desired state of a Widget.
pub struct WidgetSpec {
    /// Desired number of copies of the widget; called `replicas` from v1 on.
    #[proto(1)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 1000)]
    #[json(always)]
    pub size: i32,
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
