//! Valid C is never read differently for its layout (issue 15). Every program
//! under test (examples, layout, reduction and style fixtures) is rewritten at
//! random between braced and braceless forms: the braces of single-statement
//! bodies of `for`, `while`, `do`, `if` and `else` dropped, braces added around
//! braceless ones; and its `#pragma` lines moved: to column 0, to the column of
//! the statement they belong to, further in, with spaces after the `#` and
//! after `pragma`. The front end must read the rewritten program as the same
//! program: the same IR facts (time loop, grid, arrays, sweeps with their
//! loops and every access with its offsets, scalars, reductions, host
//! statements) and the same plans. For a few sampled cases per run, the
//! rewritten program's OpenACC translation is built and run against the
//! original sequential program: bit for bit the same arrays, the same output.
//!
//! The fact check runs 48 cases, or `PROPTEST_CASES` when set; the build check
//! 3 (each builds two programs, about two seconds of a CI core).

mod common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::ops::Range;
use std::path::{Path, PathBuf};
use tpace::back::Target;
use tpace::driver::dump::{FLOAT_RTOL, first_difference, printed_difference};
use tpace::driver::run::{Flavour, Params, Toolchain};
use tpace::driver::{self, Compiled};
use tpace::front::{cst, pragmas};
use tree_sitter::Node;

/// How one program is rewritten: one choice per brace site and per pragma line,
/// taken in order from `choices` (cycled).
#[derive(Debug, Clone)]
struct Rewrite {
    /// Which program.
    program: usize,
    /// Per site, a byte whose bits choose.
    choices: Vec<u8>,
}

fn rewrites(n_programs: usize) -> impl Strategy<Value = Rewrite> {
    (0..n_programs, proptest::collection::vec(any::<u8>(), 1..64))
        .prop_map(|(program, choices)| Rewrite { program, choices })
}

/// Statement kinds whose braces may be dropped when they are a block's only statement.
const BRACELESS_OK: &[&str] = &[
    "expression_statement",
    "for_statement",
    "while_statement",
    "do_statement",
    "if_statement",
    "compound_statement",
    "return_statement",
    "break_statement",
    "continue_statement",
];

/// Whether a statement, written without braces around it, would take an `else`
/// that follows it: it ends in an `if` without an `else`.
fn takes_a_following_else(node: Node) -> bool {
    match node.kind() {
        "if_statement" => match node.child_by_field_name("alternative") {
            None => true,
            Some(alt) => statement_of(alt).is_some_and(takes_a_following_else),
        },
        "for_statement" | "while_statement" => node
            .child_by_field_name("body")
            .is_some_and(takes_a_following_else),
        _ => false,
    }
}

/// The statement of an `else` clause (or the node itself when it is one).
fn statement_of(node: Node) -> Option<Node> {
    if node.kind() == "else_clause" {
        cst::named_children(node)
            .into_iter()
            .find(|c| c.kind() != "comment")
    } else {
        Some(node)
    }
}

/// Each body that can take or lose braces: (where its header ends, the body).
fn bodies<'t>(root: Node<'t>) -> Vec<(usize, Node<'t>)> {
    let mut out = Vec::new();
    for node in cst::descendants(root) {
        match node.kind() {
            "for_statement" | "while_statement" | "do_statement" => {
                let Some(body) = node.child_by_field_name("body") else {
                    continue;
                };
                // The header ends at the last token before the body: `)` or `do`.
                let mut cursor = node.walk();
                let end = node
                    .children(&mut cursor)
                    .filter(|c| c.end_byte() <= body.start_byte() && c.kind() != "comment")
                    .map(|c| c.end_byte())
                    .max();
                if let Some(end) = end {
                    out.push((end, body));
                }
            }
            "if_statement" => {
                if let (Some(cond), Some(cons)) = (
                    node.child_by_field_name("condition"),
                    node.child_by_field_name("consequence"),
                ) {
                    out.push((cond.end_byte(), cons));
                }
                if let Some(alt) = node.child_by_field_name("alternative") {
                    let else_end = alt.start_byte() + "else".len();
                    if let Some(stmt) = statement_of(alt) {
                        out.push((else_end, stmt));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether the braces of `block`, the body of a statement, may go: it holds one
/// statement (comments aside), not a declaration, and no `else` can come to
/// belong to another `if` for it.
fn may_drop_braces(block: Node) -> bool {
    let items: Vec<Node> = cst::named_children(block)
        .into_iter()
        .filter(|c| c.kind() != "comment")
        .collect();
    match items.as_slice() {
        [only] => BRACELESS_OK.contains(&only.kind()) && !takes_a_following_else(*only),
        _ => false,
    }
}

/// The first code byte after `at` (spaces, newlines and comments skipped).
fn next_code(text: &str, mut at: usize) -> usize {
    let b = text.as_bytes();
    loop {
        while at < b.len() && b[at].is_ascii_whitespace() {
            at += 1;
        }
        if text[at..].starts_with("/*") {
            at = text[at + 2..]
                .find("*/")
                .map_or(b.len(), |e| at + 2 + e + 2);
        } else if text[at..].starts_with("//") {
            at = text[at..].find('\n').map_or(b.len(), |e| at + e);
        } else {
            return at;
        }
    }
}

/// Column (in bytes) of `at` on its line.
fn column(text: &str, at: usize) -> usize {
    at - text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// `source` rewritten as `choices` say; also how many brace and pragma edits it made.
fn rewrite(source: &str, choices: &[u8]) -> (String, usize, usize) {
    let lines = pragmas::scan(source);
    let blanked = pragmas::blank(source, &lines);
    let tree = cst::parse_c(&blanked);
    let mut pick = choices.iter().cycle();
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let (mut braces, mut moved) = (0, 0);
    for (header_end, body) in bodies(tree.root_node()) {
        let choice = *pick.next().expect("at least one choice");
        if choice & 1 == 0 {
            continue;
        }
        if body.kind() == "compound_statement" {
            if may_drop_braces(body) {
                edits.push((body.start_byte()..body.start_byte() + 1, " ".into()));
                edits.push((body.end_byte() - 1..body.end_byte(), " ".into()));
                braces += 1;
            }
        } else if body.kind() != "declaration" {
            // The brace goes right after the header, before any pragma lines, so
            // that they stay with the statement they belong to.
            edits.push((header_end..header_end, " {".into()));
            edits.push((body.end_byte()..body.end_byte(), " }".into()));
            braces += 1;
        }
    }
    for p in &lines {
        let choice = *pick.next().expect("at least one choice");
        let line_start = source[..p.span.start].rfind('\n').map_or(0, |i| i + 1);
        // The statement's column, where there is one after the line.
        let stmt_col = column(&blanked, next_code(&blanked, p.span.end));
        let indent = match choice & 3 {
            0 => String::new(),
            1 => " ".repeat(stmt_col),
            2 => " ".repeat(stmt_col + 3),
            _ => "\t".into(),
        };
        let after_hash = " ".repeat(((choice >> 2) & 3) as usize);
        let after_pragma = " ".repeat(1 + ((choice >> 4) & 1) as usize);
        // Everything from the line's start to the pragma's text is rewritten.
        let arg = p.arg_start + (p.arg.len() - p.arg.trim_start().len());
        edits.push((
            line_start..arg,
            format!("{indent}#{after_hash}pragma{after_pragma}"),
        ));
        moved += 1;
    }
    (tpace::text::splice(source, edits), braces, moved)
}

/// Debug text with every byte span (`12..34`), offset (`at: 12`) and location (`"file:1:2"`) taken
/// out: what stays is what the program means, not where it stands.
fn without_positions(debug: &str) -> String {
    let b = debug.as_bytes();
    let mut out = String::with_capacity(debug.len());
    let mut i = 0;
    while i < b.len() {
        // A span: digits, `..`, digits.
        if b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let d1 = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            if debug[i + d1..].starts_with("..") {
                let d2 = b[i + d1 + 2..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if d2 > 0 {
                    out.push_str("_.._");
                    i += d1 + 2 + d2;
                    continue;
                }
            }
        }
        // A byte offset (liveness's `at: 1887`, where it settles an array's fate).
        if debug[i..].starts_with("at: ") && b.get(i + 4).is_some_and(u8::is_ascii_digit) {
            let d = b[i + 4..].iter().take_while(|c| c.is_ascii_digit()).count();
            out.push_str("at: _");
            i += 4 + d;
            continue;
        }
        if debug[i..].starts_with("location: \"") {
            let end = debug[i + 11..]
                .find('"')
                .map_or(b.len(), |e| i + 11 + e + 1);
            out.push_str("location: _");
            i = end;
            continue;
        }
        let c = debug[i..].chars().next().expect("a character");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// What the front end and planner made of a program, positions left out; host
/// statements by their text without spaces and braces (which the rewrite moves).
fn facts(compiled: &Compiled) -> String {
    let p = &compiled.program;
    let mut out = without_positions(&format!("{:#?}\n{:#?}", p.pipelines, compiled.stages));
    for pipeline in &p.pipelines {
        for h in &pipeline.host {
            let text: String = p.source[h.span.clone()]
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '{' && *c != '}')
                .collect();
            out.push_str(&format!(
                "\nhost statement before sweep {}: {text}",
                h.before
            ));
        }
    }
    out.push_str(&format!(
        "\ninit: {}\nmacros: {:?}",
        p.init.is_some(),
        p.user_macros
    ));
    out
}

fn corpus() -> Vec<(PathBuf, String)> {
    programs()
        .into_iter()
        .map(|path| {
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, source)
        })
        .collect()
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The rewrite itself works: on jacobi2d it drops and adds braces and moves
/// every pragma line, and the result is still C the front end reads.
#[test]
fn the_rewrite_changes_the_layout() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let source = std::fs::read_to_string(path).expect("jacobi2d.c");
    // Bit 0 set: every brace site flips; bits 0-1 = 1: pragmas at their statement's column.
    let (all, braces, moved) = rewrite(&source, &[0b0000_0001]);
    assert!(braces >= 6, "only {braces} brace edits");
    assert_eq!(moved, 6, "{all}");
    // Braces gone from the nests: no `{` after `for (y ...)`.
    assert!(!all.contains("for (y = 1; y < Y - 1; y++) {"), "{all}");
    assert!(
        all.contains("\n        #pragma tpace loop dim(2)\n        for (x = 1;"),
        "{all}"
    );
    // Braces added around the braceless loops of `init`.
    assert!(all.contains("for (int x = 0; x < X; x++) {"), "{all}");
    // No brace edits; pragmas at column 0, three spaces after `#`, two after `pragma`.
    let (moved_only, braces, _) = rewrite(&source, &[0b0001_1100]);
    assert_eq!(braces, 0);
    assert!(
        moved_only.contains("\n#   pragma  tpace loop dim(1)\n            for (y"),
        "{moved_only}"
    );
    let read = |text: &str| facts(&driver::compile_source("jacobi2d.c", text).expect("compiles"));
    let original = read(&source);
    for text in [&all, &moved_only] {
        assert_eq!(read(text), original);
    }
    // The facts see an access's offsets, a loop's bounds, a sweep's statement.
    for (from, to) in [
        ("a[x + 1][y]", "a[x - 1][y]"),
        (
            "for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
            "for (y = 2; y < Y - 1; y++) {\n                a[x][y]",
        ),
        ("a[x][y] = work[x][y];", "a[x][y] = 0.5f * work[x][y];"),
    ] {
        assert_eq!(source.matches(from).count(), 1, "{from}");
        assert_ne!(read(&source.replace(from, to)), original, "{from} -> {to}");
    }
}

#[test]
fn braces_and_pragma_columns_do_not_change_what_the_front_end_reads() {
    let corpus = corpus();
    let originals: Vec<String> = corpus
        .iter()
        .map(|(path, source)| {
            facts(
                &compile_text(path, source).unwrap_or_else(|d| panic!("{}: {d:?}", path.display())),
            )
        })
        .collect();
    let mut runner = TestRunner::new(Config {
        cases: cases(48),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&rewrites(corpus.len()), |rw| {
        let (path, source) = &corpus[rw.program];
        let (text, _, _) = rewrite(source, &rw.choices);
        let shown = path.display().to_string();
        let compiled = compile_text(path, &text).map_err(|d| {
            TestCaseError::fail(format!(
                "{shown}: the rewritten program is refused:\n{}\n--- the program ---\n{text}",
                tpace::diag::render(&shown, &text, &d)
            ))
        })?;
        let got = facts(&compiled);
        if got != originals[rw.program] {
            let (a, b) = (&originals[rw.program], &got);
            let line = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            return Err(TestCaseError::fail(format!(
                "{shown}: the rewritten program reads differently, first at fact line {line}:\n  original:  {}\n  rewritten: {}\n--- the program ---\n{text}",
                a.lines().nth(line).unwrap_or(""),
                b.lines().nth(line).unwrap_or("")
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The refused programs of tests/fixtures/diagnostics (but the C syntax errors,
/// whose trees the rewrite can not trust): the rewritten program is refused
/// with the same messages, the same source text under each caret (spaces and
/// braces aside).
#[test]
fn braces_and_pragma_columns_do_not_change_what_is_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diagnostics");
    let mut corpus: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/diagnostics")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("syntax_")
        })
        .map(|p| {
            let source = std::fs::read_to_string(&p).expect("fixture");
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                source,
            )
        })
        .collect();
    corpus.sort();
    assert!(corpus.len() >= 15, "{} fixtures", corpus.len());
    let refusals = |name: &str, text: &str| -> Vec<(String, String)> {
        let squeeze = |t: &str| -> String {
            t.chars()
                .filter(|c| !c.is_whitespace() && *c != '{' && *c != '}')
                .collect()
        };
        match driver::compile_source(name, text) {
            Ok(_) => Vec::new(),
            Err(diags) => diags
                .iter()
                .map(|d| (d.message.clone(), squeeze(&text[d.span.clone()])))
                .collect(),
        }
    };
    let originals: Vec<_> = corpus.iter().map(|(n, s)| refusals(n, s)).collect();
    for ((name, _), r) in corpus.iter().zip(&originals) {
        assert!(!r.is_empty(), "{name} is no longer refused");
    }
    let mut runner = TestRunner::new(Config {
        cases: cases(48),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&rewrites(corpus.len()), |rw| {
        let (name, source) = &corpus[rw.program];
        let (text, _, _) = rewrite(source, &rw.choices);
        let got = refusals(name, &text);
        if got != originals[rw.program] {
            return Err(TestCaseError::fail(format!(
                "{name}: refused as {:?}, rewritten as {got:?}\n--- the program ---\n{text}",
                originals[rw.program]
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn a_rewritten_program_translates_to_the_same_results() {
    let corpus = corpus();
    let tc = Toolchain::detect();
    let mut runner = TestRunner::new(Config {
        cases: cases(3).min(3),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&rewrites(corpus.len()), |rw| {
        let (path, source) = &corpus[rw.program];
        let shown = path.display().to_string();
        let (text, braces, moved) = rewrite(source, &rw.choices);
        eprintln!("{shown}: {braces} brace edits, {moved} pragma lines moved");
        let original = compile_text(path, source).expect("the original compiles");
        let rewritten = compile_text(path, &text)
            .map_err(|d| TestCaseError::fail(format!("{shown}: refused: {d:?}")))?;
        let dir = tempfile::tempdir().expect("scratch folder");
        let tc = &fixture_flags(path).toolchain(&tc);
        let reference = build_ok(
            tc,
            &reference_of(&original),
            dir.path(),
            "reference",
            Flavour::Reference,
        );
        let translated = build_ok(
            tc,
            &driver::translate(&rewritten, Target::Openacc).expect("translates"),
            dir.path(),
            "translated",
            Flavour::Openacc,
        );
        let steps = 7;
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        let n = seq.dump[0].dims[0].1 as u64;
        for p in [
            params("mmtb", 3, non_divisor(n, 5), 2),
            params("mm", 2, non_divisor(n, 7), 3),
            Params::default(),
        ] {
            let got = run_ok(&translated.binary, steps, &p, &dir.path().join("t.dump"));
            if let Some(d) = first_difference(&seq.dump, &got.dump) {
                return Err(TestCaseError::fail(format!(
                    "{shown} rewritten, {p:?}: {d}\n--- the program ---\n{text}"
                )));
            }
            if let Some(d) = printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL) {
                return Err(TestCaseError::fail(format!(
                    "{shown} rewritten, {p:?}: output differs: {d}"
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
