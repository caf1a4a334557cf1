#[derive(macros::Object)]
#[object(group = "example.dev", version = "v1", knd = "Widget", namespaced)]
pub struct Widget {
    pub metadata: apimachinery::meta::ObjectMeta,
}

fn main() {}
