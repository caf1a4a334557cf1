#[derive(macros::Object)]
#[object(group = "example.dev", version = "v1", kind = "widgetList", list)]
pub struct WidgetList {
    pub items: Option<String>,
}

#[derive(macros::Object)]
#[object(group = "example.dev", version = "v1", kind = "Mode")]
pub enum Mode {
    A,
}

fn main() {}
