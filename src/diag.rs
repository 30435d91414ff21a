//! Diagnostics: what is wrong, where (file:line:col with the source line and a
//! caret), and what to do about it.

use crate::ir::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

/// One problem found in the input program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong, one sentence.
    pub message: String,
    /// Bytes of the source the problem is about.
    pub span: Span,
    /// Short text printed under the caret.
    pub label: String,
    /// What the user can do about it.
    pub help: String,
}

impl Diagnostic {
    /// A diagnostic at `span` with a message, a caret label and a hint.
    pub fn new(
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Diagnostic {
            message: message.into(),
            span,
            label: label.into(),
            help: help.into(),
        }
    }
}

/// Result of a front-end or analysis pass: the value or every problem found.
pub type DiagResult<T> = Result<T, Vec<Diagnostic>>;

/// 1-based line and column of a byte offset.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Render diagnostics as plain text, the way `tpace` prints them on stderr.
pub fn render(path: &str, source: &str, diags: &[Diagnostic]) -> String {
    let file = SimpleFile::new(path, source);
    let config = Config::default();
    let mut out = String::new();
    for d in diags {
        let span = clamp_span(source, &d.span);
        let cs = CsDiagnostic::error()
            .with_message(&d.message)
            .with_labels(vec![Label::primary((), span).with_message(&d.label)])
            .with_notes(vec![format!("help: {}", d.help)]);
        match term::emit_into_string(&config, &file, &cs) {
            Ok(text) => out.push_str(&text),
            Err(_) => {
                // Rendering only fails on spans outside the file; fall back to plain text.
                let (line, col) = line_col(source, d.span.start);
                out.push_str(&format!(
                    "error: {}\n  at {path}:{line}:{col}\n  help: {}\n",
                    d.message, d.help
                ));
            }
        }
    }
    out
}

/// Keep a span inside the source and on character boundaries so rendering cannot fail.
fn clamp_span(source: &str, span: &Span) -> Span {
    let mut start = span.start.min(source.len());
    let mut end = span.end.clamp(start, source.len());
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    while !source.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let src = "ab\ncd\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 4), (2, 2));
    }

    #[test]
    fn render_names_file_line_and_col() {
        let src = "int x;\nfloat y = q;\n";
        let d = Diagnostic::new(17..18, "unknown q", "here", "declare q");
        let text = render("f.c", src, &[d]);
        assert!(text.contains("f.c:2:11"), "{text}");
        assert!(text.contains("float y = q;"), "{text}");
        assert!(text.contains("help: declare q"), "{text}");
    }
}
