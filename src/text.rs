//! Helpers over C source text that every pass uses: whole-word search,
//! splicing edits into a file, and indentation. They know nothing of the IR.

use std::ops::Range;

/// Whether C text mentions the identifier `name` as a whole word.
pub fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .any(|w| w == name)
}

/// The identifiers C text mentions, in order of first mention (keywords and
/// numbers' suffixes included: callers filter what they look for).
pub fn identifiers(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for w in text.split(|c: char| !(c == '_' || c.is_ascii_alphanumeric())) {
        let starts_like_a_name = w.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic());
        if starts_like_a_name && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Replace byte ranges of `source` (non-overlapping, any order) with new text;
/// an empty range inserts.
pub fn splice(source: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(s, _)| (s.start, s.end));
    let mut out = String::with_capacity(source.len() + 1024);
    let mut at = 0;
    for (span, text) in edits {
        debug_assert!(span.start >= at, "overlapping edits");
        out.push_str(&source[at..span.start]);
        out.push_str(&text);
        at = span.end;
    }
    out.push_str(&source[at..]);
    out
}

/// Leading whitespace of the line that contains byte `at`.
pub fn indent_at(source: &str, at: usize) -> String {
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    source[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Indent every non-empty line of `text` by `indent`, except the first.
pub fn indent_rest(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(indent);
            }
        }
        out.push_str(line);
    }
    out
}

/// `text` with `pad` before every non-empty line, each line ending in a newline.
pub fn indented(text: &str, pad: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str(pad);
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A C string literal for `text` (quotes, backslashes and control characters escaped).
pub fn c_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `n` and a noun, singular or plural: `1 dimension`, `2 dimensions`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_only() {
        assert!(mentions("a[x - 1] + omega", "omega"));
        assert!(!mentions("omega2 * x", "omega"));
        assert_eq!(identifiers("p->m[i + 1] * 2.0f"), vec!["p", "m", "i"]);
    }

    #[test]
    fn splices_in_order_whatever_the_order_given() {
        let s = "abcdef";
        let out = splice(
            s,
            vec![(4..5, "E".into()), (1..2, "B".into()), (3..3, "+".into())],
        );
        assert_eq!(out, "aBc+dEf");
    }

    #[test]
    fn c_strings_escape_what_c_needs() {
        assert_eq!(c_string("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\n\"");
    }
}
