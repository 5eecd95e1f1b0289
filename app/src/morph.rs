//! Part of a page patched to new markup in place, rather than replaced: what the reader opened
//! (a compact line, the transcript), where the focus is, and the slider they are dragging stay
//! as they were, and only what changed is touched (a new row of a live run is the only one
//! that fades in). The timeline is drawn this way in every app, from `shared::timeline_html`'s
//! text, and the player draws its whole page so. The markup is parsed once into
//! a template, then walked beside the page: a node of the same kind (the same tag and first
//! class) is kept and its attributes and children brought up to date; one that is not is
//! removed, or the new one put in its place.
//!
//! The one attribute never touched is `open`: a `<details>` is the reader's to open and close,
//! and the markup never opens one.

use wasm_bindgen::JsCast;

/// `root`'s children made what `markup` says.
pub fn patch(root: &web_sys::Element, markup: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(template) = document
        .create_element("template")
        .ok()
        .and_then(|t| t.dyn_into::<web_sys::HtmlTemplateElement>().ok())
    else {
        return;
    };
    template.set_inner_html(markup);
    children(root, &template.content());
}

/// `old`'s children made `new`'s (which are moved out of `new` where they are taken whole).
fn children(old: &web_sys::Node, new: &web_sys::Node) {
    let mut old_child = old.first_child();
    let mut new_child = new.first_child();
    while let Some(wanted) = new_child {
        new_child = wanted.next_sibling();
        match old_child.take() {
            Some(kept) if same(&kept, &wanted) => {
                update(&kept, &wanted);
                old_child = kept.next_sibling();
            }
            Some(here) => match later(&here, &wanted) {
                // What was between went away: removed, and the match brought up to date.
                Some(found) => {
                    let mut gone = Some(here);
                    while let Some(node) = gone.filter(|node| !node.is_same_node(Some(&found))) {
                        gone = node.next_sibling();
                        let _ = old.remove_child(&node);
                    }
                    update(&found, &wanted);
                    old_child = found.next_sibling();
                }
                // Something new: put in place, before what was here.
                None => {
                    let _ = old.insert_before(&wanted, Some(&here));
                    old_child = Some(here);
                }
            },
            None => {
                let _ = old.append_child(&wanted);
            }
        }
    }
    while let Some(node) = old_child {
        old_child = node.next_sibling();
        let _ = old.remove_child(&node);
    }
}

/// The first of `from` and its next siblings that is `wanted`'s kind.
fn later(from: &web_sys::Node, wanted: &web_sys::Node) -> Option<web_sys::Node> {
    let mut node = from.next_sibling();
    while let Some(candidate) = node {
        if same(&candidate, wanted) {
            return Some(candidate);
        }
        node = candidate.next_sibling();
    }
    None
}

/// Whether `old` can be brought up to `new` in place: both text, or the same tag with the same
/// first class (a row stays a row, a ledger a ledger).
fn same(old: &web_sys::Node, new: &web_sys::Node) -> bool {
    if old.node_type() != new.node_type() {
        return false;
    }
    match (old.dyn_ref::<web_sys::Element>(), new.dyn_ref::<web_sys::Element>()) {
        (Some(old), Some(new)) => old.tag_name() == new.tag_name() && first_class(old) == first_class(new),
        _ => true,
    }
}

fn first_class(element: &web_sys::Element) -> Option<String> {
    element
        .get_attribute("class")
        .and_then(|class| class.split_whitespace().next().map(str::to_owned))
}

/// `old` made `new`: its text, or its attributes (all but `open`) and its children.
fn update(old: &web_sys::Node, new: &web_sys::Node) {
    let (Some(old_element), Some(new_element)) = (old.dyn_ref::<web_sys::Element>(), new.dyn_ref::<web_sys::Element>())
    else {
        if old.node_value() != new.node_value() {
            old.set_node_value(new.node_value().as_deref());
        }
        return;
    };
    attributes(old_element, new_element);
    children(old, new);
}

fn attributes(old: &web_sys::Element, new: &web_sys::Element) {
    for name in old.get_attribute_names().iter().filter_map(|n| n.as_string()) {
        if name != "open" && !new.has_attribute(&name) {
            let _ = old.remove_attribute(&name);
        }
    }
    for name in new.get_attribute_names().iter().filter_map(|n| n.as_string()) {
        let value = new.get_attribute(&name).unwrap_or_default();
        if name != "open" && old.get_attribute(&name).as_deref() != Some(value.as_str()) {
            let _ = old.set_attribute(&name, &value);
        }
    }
    // An input's value and checked state are properties once the reader has touched it: the
    // attributes alone would no longer show.
    if let Some(input) = old.dyn_ref::<web_sys::HtmlInputElement>() {
        if let Some(value) = new.get_attribute("value")
            && input.value() != value
        {
            input.set_value(&value);
        }
        input.set_checked(new.has_attribute("checked"));
    }
}
