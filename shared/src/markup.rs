//! Text put into markup racelab writes itself: the app page's head tags, oEmbed's iframe, the
//! SVG picture of a run, the embed code a blog author copies. One escaper serves HTML text,
//! quoted attributes and XML alike.

/// `text` safe inside HTML or XML content and in a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// HTML written as text, every text and attribute value escaped on the way in: for what the app
/// draws once and never changes (a finished run's ledger), where Leptos's view code for the same
/// elements would cost the bundles several times the bytes (docs/embedding.md, "The player
/// bundle"). Tags and attribute names are the caller's constants, never data. The text is parsed
/// as HTML, not built node by node: a block (`<pre>`, `<div>`) inside a `<p>` closes it there.
#[derive(Debug, Default)]
pub struct Html(String);

impl Html {
    /// `<tag a="v" …>`: an attribute whose value is `None` is left out, `Some("")` is bare.
    pub fn open(&mut self, tag: &str, attributes: &[(&str, Option<&str>)]) -> &mut Self {
        self.0.push('<');
        self.0.push_str(tag);
        for (name, value) in attributes {
            if let Some(value) = value {
                self.0.push(' ');
                self.0.push_str(name);
                self.0.push_str("=\"");
                self.0.push_str(&escape(value));
                self.0.push('"');
            }
        }
        self.0.push('>');
        self
    }

    /// Text between tags.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.0.push_str(&escape(text));
        self
    }

    /// `</tag>`.
    pub fn close(&mut self, tag: &str) -> &mut Self {
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
        self
    }

    /// `<tag …>text</tag>`.
    pub fn element(&mut self, tag: &str, attributes: &[(&str, Option<&str>)], text: &str) -> &mut Self {
        self.open(tag, attributes).text(text).close(tag)
    }

    /// Markup another writer made, as it is: only what this crate's writers return (every
    /// text in it escaped by them), never data.
    pub fn raw(&mut self, markup: &str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    /// The markup written.
    pub fn into_string(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{Html, escape};

    #[test]
    fn text_is_escaped_for_html_and_xml() {
        assert_eq!(escape("a < b & \"c\"\u{1}"), "a &lt; b &amp; &quot;c&quot; ");
        assert_eq!(escape("it's"), "it&#39;s");
    }

    #[test]
    fn html_escapes_every_text_and_value_and_leaves_out_absent_attributes() {
        let mut html = Html::default();
        html.open(
            "td",
            &[("class", Some("a\"><script>")), ("data-x", None), ("data-y", Some(""))],
        )
        .text("<img src=x onerror=alert(1)>")
        .close("td");
        assert_eq!(
            html.into_string(),
            "<td class=\"a&quot;&gt;&lt;script&gt;\" data-y=\"\">&lt;img src=x onerror=alert(1)&gt;</td>"
        );
    }
}
