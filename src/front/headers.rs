//! The program's preprocessor lines and type declarations, with its own
//! headers read in: what a device file compiled apart from the host program
//! (CUDA's `.cu`, as C++) may need from the user's text. A header of the
//! program (found beside the file that includes it or through `-I`, as the C
//! compiler finds it) is not included there: its preprocessor lines and type
//! declarations stand in for its `#include` line, and the writer takes only
//! those its kernels use, so C code in a header (functions, variables) never
//! reaches a C++ compiler. System headers (`<stdio.h>`, found nowhere else)
//! keep their `#include` lines.

use super::{cst, pragmas};
use crate::ir::{Declaration, DeclarationKind, Span};
use crate::text::identifiers;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Deepest nesting of headers read (gcc stops at 200 as well).
const MAX_DEPTH: usize = 200;

/// The declarations of the file at `path` (text `source`, syntax tree `tree`)
/// with its own headers read in place of their `#include` lines, in order
/// (`Program::declarations`). `include_dirs` are the `-I` folders. A header
/// that can not be found or read keeps its `#include` line.
pub fn declarations(
    path: &Path,
    source: &str,
    tree: &tree_sitter::Tree,
    include_dirs: &[PathBuf],
) -> Vec<Declaration> {
    let mut reader = Reader {
        include_dirs,
        once: BTreeSet::new(),
        open: Vec::new(),
        out: Vec::new(),
    };
    reader.read(path, None, source, tree, None);
    reader.out
}

/// A walk over a file and the headers it includes.
struct Reader<'a> {
    include_dirs: &'a [PathBuf],
    /// Headers that say `#pragma once` and were read already.
    once: BTreeSet<PathBuf>,
    /// The headers being read, outermost first.
    open: Vec<PathBuf>,
    out: Vec<Declaration>,
}

impl Reader<'_> {
    /// Add the declarations of a file (`header`: which header it is, `None`
    /// for the program's file), all placed `at` when it is a header.
    fn read(
        &mut self,
        path: &Path,
        header: Option<&Path>,
        text: &str,
        tree: &tree_sitter::Tree,
        at: Option<usize>,
    ) {
        for span in file_declarations(text, tree) {
            let item = &text[span.clone()];
            let place = at.unwrap_or(span.start);
            if let Some(found) = self.own_header(path, item) {
                if self.once.contains(&found) {
                    continue;
                }
                if self.open.len() < MAX_DEPTH
                    && let Ok(header_text) = std::fs::read_to_string(&found)
                {
                    if has_pragma_once(&header_text) {
                        self.once.insert(found.clone());
                    }
                    let header_tree = cst::parse_c(&header_text);
                    self.open.push(found.clone());
                    self.read(
                        &found,
                        Some(&found),
                        &header_text,
                        &header_tree,
                        Some(place),
                    );
                    self.open.pop();
                    continue;
                }
            }
            self.out.push(declaration(place, item, header));
        }
    }

    /// The header of the program's own that an `#include` line in the file at
    /// `path` names, if it is one: `"NAME"` beside that file or in an `-I`
    /// folder, `<NAME>` in an `-I` folder.
    fn own_header(&self, path: &Path, line: &str) -> Option<PathBuf> {
        let (name, quoted) = included_name(line)?;
        let beside = quoted.then(|| path.parent().unwrap_or(Path::new("")).to_path_buf());
        beside
            .into_iter()
            .chain(self.include_dirs.iter().cloned())
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    }
}

/// A declaration of the file (`header`: `None`) or of one of its headers,
/// placed `at`, with its kind.
pub fn declaration(at: usize, text: &str, header: Option<&Path>) -> Declaration {
    Declaration {
        at,
        text: text.to_string(),
        kind: kind(text),
        header: header.map(Path::to_path_buf),
    }
}

/// What a preprocessor line or type declaration is.
fn kind(text: &str) -> DeclarationKind {
    let Some(rest) = text.trim_start().strip_prefix('#') else {
        return DeclarationKind::Type(declared_names(text));
    };
    let rest = rest.trim_start();
    let word_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (word, args) = rest.split_at(word_len);
    let first_name = || {
        identifiers(args)
            .first()
            .map(|n| n.to_string())
            .unwrap_or_default()
    };
    match word {
        "if" | "ifdef" | "ifndef" => DeclarationKind::Open,
        "elif" | "elifdef" | "elifndef" | "else" => DeclarationKind::Branch,
        "endif" => DeclarationKind::Close,
        "define" => DeclarationKind::Define(first_name()),
        "undef" => DeclarationKind::Undef(first_name()),
        "include" | "include_next" | "import" => DeclarationKind::Include,
        _ => DeclarationKind::Other,
    }
}

/// The names a type declaration declares: typedef names, struct, union and enum
/// tags, enumerators.
fn declared_names(text: &str) -> Vec<String> {
    let tree = cst::parse_c(text);
    let mut out = Vec::new();
    for node in cst::descendants(tree.root_node()) {
        match node.kind() {
            "struct_specifier" | "union_specifier" | "enum_specifier" | "enumerator" => {
                if let Some(name) = node.child_by_field_name("name") {
                    out.push(cst::text(name, text).to_string());
                }
            }
            "type_definition" => {
                let mut cursor = node.walk();
                for declarator in node.children_by_field_name("declarator", &mut cursor) {
                    // The name inside `*p`, `(*fn)(int)`, `v[3]`.
                    if let Some(name) = cst::descendants(declarator)
                        .into_iter()
                        .find(|n| n.kind() == "type_identifier")
                    {
                        out.push(cst::text(name, text).to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The name an `#include` line names and whether it is quoted (`"NAME"`);
/// `None` for other lines and for a computed `#include MACRO`.
fn included_name(line: &str) -> Option<(&str, bool)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?;
    if !rest.starts_with([' ', '\t', '"', '<']) {
        return None; // `#include_next`, `#includes`
    }
    let rest = rest.trim_start();
    let (close, quoted) = match rest.chars().next()? {
        '"' => ('"', true),
        '<' => ('>', false),
        _ => return None,
    };
    let name = &rest[1..];
    let end = name.find(close)?;
    Some((&name[..end], quoted)).filter(|(n, _)| !n.is_empty())
}

/// Whether a header says `#pragma once`.
fn has_pragma_once(text: &str) -> bool {
    text.lines().any(|l| {
        let words: Vec<&str> = l
            .trim_start()
            .trim_start_matches('#')
            .split_whitespace()
            .collect();
        l.trim_start().starts_with('#') && words.starts_with(&["pragma", "once"])
    })
}

/// A file's own preprocessor lines but pragmas and its file-scope type
/// declarations (also those inside conditional groups), in order.
fn file_declarations(source: &str, tree: &tree_sitter::Tree) -> Vec<Span> {
    let mut out = pragmas::other_directives(source);
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        for child in cst::named_children(node) {
            match child.kind() {
                "type_definition" | "struct_specifier" | "union_specifier" | "enum_specifier" => {
                    // A bare `struct S {...}` ends at its brace: take its `;` too.
                    let mut end = child.end_byte();
                    let rest = &source[end..];
                    if rest.trim_start().starts_with(';') {
                        end += rest.len() - rest.trim_start().len() + 1;
                    }
                    out.push(child.start_byte()..end);
                }
                kind if kind.starts_with("preproc_if")
                    || kind.starts_with("preproc_else")
                    || kind == "preproc_elif"
                    || kind == "preproc_elifdef" =>
                {
                    stack.push(child)
                }
                _ => {}
            }
        }
    }
    out.sort_by_key(|s| s.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_declaration_is() {
        assert_eq!(
            declared_names(
                "typedef struct node { int class; struct node *next; } node_t, *node_p;"
            ),
            ["node_t", "node_p", "node", "node"]
        );
        assert_eq!(
            declared_names("enum color { RED, GREEN = 2 };"),
            ["color", "RED", "GREEN"]
        );
        assert_eq!(declared_names("typedef double (*fn)(double);"), ["fn"]);
        assert_eq!(
            kind("#  define REAL double"),
            DeclarationKind::Define("REAL".into())
        );
        assert_eq!(
            kind("#define SQ(x) ((x) * (x))"),
            DeclarationKind::Define("SQ".into())
        );
        assert_eq!(kind("#undef SQ"), DeclarationKind::Undef("SQ".into()));
        assert_eq!(kind("#include <stdio.h>"), DeclarationKind::Include);
        assert_eq!(kind("#error \"C99\""), DeclarationKind::Other);
        assert_eq!(kind("# if defined(A)"), DeclarationKind::Open);
        assert_eq!(kind("#elif B"), DeclarationKind::Branch);
        assert_eq!(kind("#endif /* A */"), DeclarationKind::Close);
        assert_eq!(
            kind("typedef float real;"),
            DeclarationKind::Type(vec!["real".into()])
        );
    }

    #[test]
    fn include_lines() {
        assert_eq!(included_name("#include \"a.h\""), Some(("a.h", true)));
        assert_eq!(
            included_name("  #  include <sys/time.h> /* x */"),
            Some(("sys/time.h", false))
        );
        assert_eq!(included_name("#include HEADER"), None);
        assert_eq!(included_name("#include_next <a.h>"), None);
        assert_eq!(included_name("#define include 1"), None);
        assert!(has_pragma_once("/* x */\n#  pragma once\n"));
        assert!(!has_pragma_once("#pragma omp parallel\n"));
    }

    #[test]
    fn own_headers_are_read_in_place_of_their_include_lines() {
        let dir = tempfile::tempdir().unwrap();
        let inc = dir.path().join("inc");
        std::fs::create_dir(&inc).unwrap();
        std::fs::write(
            dir.path().join("beside.h"),
            "#pragma once\n#define B 2\nstatic int f(const void *p) { const char *c = p; return *c; }\n",
        )
        .unwrap();
        std::fs::write(
            inc.join("deep.h"),
            "#ifndef DEEP_H\n#define DEEP_H\n#include \"beside.h\"\ntypedef float real;\n#endif\n",
        )
        .unwrap();
        // deep.h's "beside.h" is looked for beside deep.h, then in -I folders.
        std::fs::write(inc.join("beside.h"), "#define INNER 1\n").unwrap();
        let main = dir.path().join("main.c");
        let source = "#include <stdio.h>\n#include \"beside.h\"\n#include <deep.h>\n#include \"beside.h\"\n#include \"missing.h\"\nint x;\n";
        let tree = cst::parse_c(source);
        let got = declarations(&main, source, &tree, std::slice::from_ref(&inc));
        let texts: Vec<&str> = got.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "#include <stdio.h>",
                "#define B 2",
                "#ifndef DEEP_H",
                "#define DEEP_H",
                "#define INNER 1",
                "typedef float real;",
                "#endif",
                "#include \"missing.h\"",
            ]
        );
        let deep_at = source.find("#include <deep.h>").unwrap();
        assert!(got[2..7].iter().all(|d| d.at == deep_at));
        assert_eq!(got[5].header.as_deref(), Some(inc.join("deep.h").as_path()));
        assert_eq!(got[0].header, None);
    }
}
