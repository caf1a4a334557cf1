#[derive(macros::Object)]
pub struct Widget {
    pub metadata: apimachinery::meta::ObjectMeta,
}

fn main() {}
