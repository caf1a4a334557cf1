use apimachinery::meta::{ListMeta, ObjectMeta};
use apimachinery::object::{ListObject, Object};

#[derive(Clone, Default, macros::Object)]
#[object(group = "example.dev", version = "v1", kind = "Widget")]
pub struct Widget {
    pub metadata: ObjectMeta,
}

#[derive(Default, macros::Object)]
#[object(group = "example.dev", version = "v1", kind = "WidgetList", list)]
pub struct WidgetList {
    pub metadata: ListMeta,
    pub items: Vec<Widget>,
}

#[derive(Default, macros::Object)]
#[object(group = "", version = "v1", kind = "ConfigMap")]
pub struct ConfigMap {
    pub metadata: ObjectMeta,
}

fn main() {
    assert_eq!(<Widget as Object>::API_VERSION, "example.dev/v1");
    assert_eq!(<ConfigMap as Object>::API_VERSION, "v1");
    assert_eq!(<WidgetList as ListObject>::KIND, "WidgetList");
    let mut w = Widget::default();
    w.metadata_mut().name = Some("a".into());
    assert_eq!(w.deep_copy().metadata().name.as_deref(), Some("a"));
    assert_eq!(WidgetList::default().items().len(), 0);
}
