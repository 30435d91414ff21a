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

/// Words that are keywords in C++ and may name a variable in C (C11): a name the
/// user's C gives a variable must not reach a C++ file (a CUDA `.cu`) as it is.
/// Left out: the C keywords, and words a C header defines with the C++ meaning
/// (`bool`, `true`, `false`, `alignas`, `alignof`, `static_assert`,
/// `thread_local`, `wchar_t`, `char16_t`, `char32_t`; GNU C's `asm`).
pub const CXX_ONLY_KEYWORDS: &[&str] = &[
    "and",
    "and_eq",
    "bitand",
    "bitor",
    "catch",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "xor",
    "xor_eq",
];

/// Whether `name` is a C++ keyword that C lets a variable have ([`CXX_ONLY_KEYWORDS`]).
pub fn is_cxx_only_keyword(name: &str) -> bool {
    CXX_ONLY_KEYWORDS.contains(&name)
}

/// `text` with every identifier for which `rename` gives a new name replaced by
/// it; comments, string and character literals are left as they are.
pub fn rename_identifiers(text: &str, rename: &dyn Fn(&str) -> Option<String>) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let is_start = |c: u8| c == b'_' || c.is_ascii_alphabetic();
    let is_part = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    while i < b.len() {
        let rest = &text[i..];
        let skip = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if let Some(comment) = rest.strip_prefix("/*") {
            comment.find("*/").map_or(rest.len(), |e| e + 4)
        } else if b[i] == b'"' || b[i] == b'\'' {
            // Up to the closing quote, past escaped characters.
            let mut j = i + 1;
            while j < b.len() && b[j] != b[i] && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len()) - i
        } else if is_start(b[i]) {
            let len = b[i..].iter().take_while(|c| is_part(**c)).count();
            let word = &text[i..i + len];
            out.push_str(&rename(word).unwrap_or_else(|| word.to_string()));
            i += len;
            continue;
        } else if b[i].is_ascii_digit() {
            // A number and its suffix (`1e5f`, `0x1p3`) are not identifiers.
            b[i..]
                .iter()
                .take_while(|c| is_part(**c) || **c == b'.')
                .count()
        } else {
            rest.chars().next().map_or(1, char::len_utf8)
        };
        out.push_str(&text[i..i + skip]);
        i += skip;
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

/// A word for a POSIX shell command line: as it is if the shell takes it so,
/// else in single quotes (a path with spaces in a printed build line).
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./+=:,@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
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
    fn renames_identifiers_but_not_comments_literals_or_numbers() {
        let rename = |w: &str| is_cxx_only_keyword(w).then(|| format!("tp_kw_{w}"));
        let text =
            "new = this * 2e5f + class; /* new */ // this\nputs(\"new\"); c = 'n'; x1new = new_;";
        assert_eq!(
            rename_identifiers(text, &rename),
            "tp_kw_new = tp_kw_this * 2e5f + tp_kw_class; /* new */ // this\nputs(\"new\"); c = 'n'; x1new = new_;"
        );
        assert_eq!(
            rename_identifiers("s = \"a\\\"new\";", &rename),
            "s = \"a\\\"new\";"
        );
        assert!(is_cxx_only_keyword("template") && !is_cxx_only_keyword("bool"));
    }

    #[test]
    fn shell_words_are_quoted_where_the_shell_needs_it() {
        assert_eq!(shell_word("out/prog.cu"), "out/prog.cu");
        assert_eq!(shell_word("my dir/prog.cu"), "'my dir/prog.cu'");
        assert_eq!(shell_word("it's.cu"), "'it'\\''s.cu'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn c_strings_escape_what_c_needs() {
        assert_eq!(c_string("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\n\"");
    }
}
