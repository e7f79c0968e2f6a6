//! README rendering: CommonMark (plus tables and strikethrough) to HTML
//! with pulldown-cmark. Raw HTML in the Markdown is shown as text, never
//! passed through, and links or images whose scheme could run script
//! (`javascript:`, `vbscript:`, `data:` other than images) become `#`.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

fn safe_url(u: &str) -> bool {
    let l = u.trim_start().to_ascii_lowercase();
    !(l.starts_with("javascript:") || l.starts_with("vbscript:") || l.starts_with("data:"))
}

/// `md` as HTML, safe to embed in a page.
pub fn render(md: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let events = Parser::new_ext(md, opts).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) if !safe_url(&dest_url) => Event::Start(Tag::Link {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) if !safe_url(&dest_url) => Event::Start(Tag::Image {
            link_type,
            dest_url: CowStr::Borrowed("#"),
            title,
            id,
        }),
        e => e,
    });
    let mut out = String::with_capacity(md.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_raw_html_and_no_script_links() {
        let out = render(
            "# Title\n\n<script>alert(1)</script>\n\nhi <b>x</b> [a](javascript:alert(1)) [b](https://example.com)\n",
        );
        assert!(out.contains("<h1>Title</h1>"), "{out}");
        assert!(!out.contains("<script>"), "{out}");
        assert!(!out.contains("<b>"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(!out.contains("javascript:"), "{out}");
        assert!(out.contains("href=\"https://example.com\""), "{out}");
    }

    proptest::proptest! {
        #[test]
        fn never_emits_script_tags(s in "[<>a-z/ \\[\\]():\n#*`]{0,80}") {
            let out = render(&s);
            proptest::prop_assert!(!out.contains("<script"));
            proptest::prop_assert!(!out.to_ascii_lowercase().contains("href=\"javascript:"));
        }
    }
}
