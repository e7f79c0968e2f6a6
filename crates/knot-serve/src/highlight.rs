//! Syntax highlighting with syntect's bundled Sublime syntaxes: classed
//! HTML (`hl-…` classes) and one stylesheet drawn from a bundled theme.
//! Loading the syntax set is the expensive part, so one
//! [`Highlighter`] is built per process.

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use crate::html::escape_into;

const CLASSES: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

/// Longest line highlighted: a minified file's one huge line is shown
/// plain instead (the regex engine's time grows with line length).
const MAX_LINE: usize = 4096;

/// The syntax set and the stylesheet for its classes.
pub struct Highlighter {
    syntaxes: SyntaxSet,
    css: String,
}

impl Highlighter {
    pub fn new() -> Highlighter {
        let themes = ThemeSet::load_defaults();
        let css = themes
            .themes
            .get("InspiredGitHub")
            .and_then(|t| css_for_theme_with_class_style(t, CLASSES).ok())
            .unwrap_or_default();
        Highlighter {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            css,
        }
    }

    /// The stylesheet of the highlight classes.
    pub fn css(&self) -> &str {
        &self.css
    }

    /// `text` (the file at `path`) as HTML: highlighted spans when a
    /// syntax matches the extension or the first line, escaped text
    /// otherwise. Never fails: a syntax error falls back to plain text.
    pub fn to_html(&self, path: &str, text: &str) -> String {
        let ext = path
            .rsplit('/')
            .next()
            .and_then(|f| f.rsplit_once('.'))
            .map(|(_, e)| e);
        let syntax = ext
            .and_then(|e| self.syntaxes.find_syntax_by_extension(e))
            .or_else(|| {
                text.lines()
                    .next()
                    .and_then(|l| self.syntaxes.find_syntax_by_first_line(l))
            });
        let plain = || {
            let mut s = String::with_capacity(text.len() + text.len() / 8);
            escape_into(&mut s, text);
            s
        };
        let Some(syntax) = syntax else {
            return plain();
        };
        if syntax.name == "Plain Text" || text.lines().any(|l| l.len() > MAX_LINE) {
            return plain();
        }
        let mut g = ClassedHTMLGenerator::new_with_class_style(syntax, &self.syntaxes, CLASSES);
        for line in LinesWithEndings::from(text) {
            if g.parse_html_for_line_which_includes_newline(line).is_err() {
                return plain();
            }
        }
        g.finalize()
    }
}

impl Default for Highlighter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_is_classed_and_escaped() {
        let h = Highlighter::new();
        let out = h.to_html("src/a.rs", "fn main() { let s = \"<b>&\"; }\n");
        assert!(out.contains("hl-"), "{out}");
        assert!(out.contains("&lt;b&gt;&amp;"), "{out}");
        assert!(!out.contains("<b>"));
        assert!(h.css().contains(".hl-"));
        let plain = h.to_html("notes.unknownext", "<script>x</script>");
        assert_eq!(plain, "&lt;script&gt;x&lt;/script&gt;");
    }
}
