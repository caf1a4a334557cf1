//! The internal (hub) version of example.dev: every served version converts to and from it.
#![group = "example.dev"]
#![version = "internal"]

/// A Widget is a unit of work with a desired number of replicas.
#[kind(namespaced, status)]
#[rule(cel = "!(has(self.spec.color) && self.spec.color == 'red' && self.spec.replicas > 100)", message = "a red widget may have at most 100 replicas")]
pub struct Widget {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: WidgetSpec,
    /// The observed state.
    pub status: Option<WidgetStatus>,
}

/// The desired state of a Widget.
pub struct WidgetSpec {
    /// Desired number of copies.
    #[validate(minimum = 0, maximum = 1000)]
    pub replicas: i32,
    /// The widget's color.
    #[validate(pattern = "^[a-z]+$", max_length = 63)]
    pub color: Option<String>,
}

/// The observed state of a Widget.
pub struct WidgetStatus {
    /// Number of copies observed.
    pub replicas: i32,
    /// Label selector of the widget's copies.
    pub selector: Option<String>,
}
