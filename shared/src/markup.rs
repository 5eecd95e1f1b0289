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

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn text_is_escaped_for_html_and_xml() {
        assert_eq!(escape("a < b & \"c\"\u{1}"), "a &lt; b &amp; &quot;c&quot; ");
        assert_eq!(escape("it's"), "it&#39;s");
    }
}
