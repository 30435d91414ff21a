//! tpace must never panic, whatever it is fed (issue 2, "Never a panic on any
//! input"). Each example (and layout fixture) is edited at random: byte ranges
//! deleted or duplicated, tokens that upset the C parser or the directives
//! inserted, mostly inside the annotated time loop where the deeper passes
//! look. The front end and analysis must answer with a program or with
//! diagnostics, the diagnostics must render, and an accepted program must
//! translate.
//!
//! The number of cases per file is 200, or `PROPTEST_CASES` when set (for
//! longer hunts).

use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use tpace::back::Target;
use tpace::lower::reference;
use tpace::{diag, driver};

/// Text inserted at random places: C punctuation, directive pieces, jumps,
/// subscripts, comment and string openers, a line continuation and a non-ASCII letter.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ";",
    ",",
    ":",
    "*",
    "=",
    "x",
    "y",
    "0",
    "+ 1",
    "- 1",
    "* 2",
    "break;",
    "continue;",
    "return 0;",
    "goto out;",
    "\n",
    "/*",
    "\"",
    "\\\n",
    "é",
    "int",
    "a[x][y]",
    "a[x+1][y] = 1;",
    "work[x][y-9]",
    "if (x) ",
    "? 1 : ",
    "[0:X]",
    "[1:1]",
    "[-1:2]",
    "size(",
    "halo(",
    " async",
    " targetin(q)",
    " targetinout(a, a)",
    "#pragma tpace loop dim(1)\n",
    "#pragma tpace loop dim(2)\n",
    "#pragma tpace loop dim(3)\n",
    "#pragma tpace loop dim(0)\n",
    "#pragma tpace init\n",
    "#pragma tpace pipeline targetinout(a) size([0:X]) halo([1:1])\n",
    "#pragma tpace\n",
    "#pragma tpace loop\n",
    "#pragma stencil begin\n",
    "#define X 0\n",
    "for (x = 0; x < X; x++) ",
    "double *q;",
    "9223372036854775807",
    "- 9223372036854775807 - 1",
    "* 99999999999 * 99999999999",
    "int a[4];",
];

/// One random change to a source file.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove `len` bytes at `at`.
    Delete { at: Index, len: usize },
    /// Copy `len` bytes at `at` right after themselves.
    Duplicate { at: Index, len: usize },
    /// Insert a token at `at`.
    Insert { at: Index, token: &'static str },
}

/// An edit, and whether its position is taken inside the pipelined region.
fn edit() -> impl Strategy<Value = (bool, Edit)> {
    let kind = prop_oneof![
        1 => (any::<Index>(), 1usize..40).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (any::<Index>(), 1usize..80).prop_map(|(at, len)| Edit::Duplicate { at, len }),
        3 => (any::<Index>(), select(TOKENS)).prop_map(|(at, token)| Edit::Insert { at, token }),
    ];
    (prop::bool::weighted(0.85), kind)
}

/// The byte range from the `pipeline` directive to the end of the file's `main`
/// (or the whole file when there is none).
fn region(source: &str) -> std::ops::Range<usize> {
    let start = source.find("#pragma tpace pipeline").unwrap_or(0);
    let end = source[start..]
        .find("printf")
        .map_or(source.len(), |e| start + e);
    start..end.max(start + 1).min(source.len())
}

/// Move `at` down to a character boundary of `s`.
fn boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Apply the edits in order; positions are drawn inside the current text.
fn apply(original: &str, edits: &[(bool, Edit)]) -> String {
    let mut s = original.to_string();
    for (in_region, e) in edits {
        let r = if *in_region {
            region(&s)
        } else {
            0..s.len().max(1)
        };
        let pick = |at: &Index| r.start + at.index(r.len());
        match e {
            Edit::Delete { at, len } => {
                let from = boundary(&s, pick(at));
                let to = boundary(&s, from + len);
                s.replace_range(from..to, "");
            }
            Edit::Duplicate { at, len } => {
                let from = boundary(&s, pick(at));
                let to = boundary(&s, from + len);
                let copy = s[from..to].to_string();
                s.insert_str(to, &copy);
            }
            Edit::Insert { at, token } => {
                let at = boundary(&s, pick(at));
                s.insert_str(at, token);
            }
        }
    }
    s
}

/// Run the front end, analysis, the `check` summary and both back ends (the
/// translation and the reference program of `tpace run`); render diagnostics.
/// `Err` with the panic message if anything panicked.
fn survives(source: &str) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| {
        match driver::compile_source("fuzz.c", source) {
            Ok(compiled) => {
                let _ = driver::summary(&compiled);
                let _ = driver::translate(&compiled, Target::Openacc);
                let _ = driver::translate(&compiled, Target::Opencl);
                let _ = reference::emit(&compiled.program);
            }
            Err(diags) => {
                assert!(!diags.is_empty(), "Err with no diagnostic");
                let text = diag::render("fuzz.c", source, &diags);
                assert!(
                    text.contains("fuzz.c:"),
                    "rendered without a position:\n{text}"
                );
            }
        }
    }))
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "examples",
        "tests/fixtures/layouts",
        "tests/fixtures/ordinary",
        "tests/fixtures/stencil",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).expect("input folder") {
            let path = entry.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "c") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(200);
    Config {
        cases,
        // Shrunk failures are printed; no regression files are written into the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

#[test]
fn random_edits_of_the_examples_never_panic() {
    let files = inputs();
    assert!(files.len() >= 3, "no examples found: {files:?}");
    // The panics are caught and reported with their input; keep the default hook quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for path in &files {
        let original = std::fs::read_to_string(path).expect("example source");
        assert!(
            survives(&original).is_ok(),
            "{} itself panics",
            path.display()
        );
        let mut runner = TestRunner::new(config());
        let result = runner.run(&prop::collection::vec(edit(), 1..5), |edits| {
            let edited = apply(&original, &edits);
            survives(&edited).map_err(|msg| {
                TestCaseError::fail(format!("panic: {msg}\n--- input ---\n{edited}"))
            })
        });
        if let Err(e) = result {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    std::panic::set_hook(hook);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// jacobi2d.c with `from` replaced by `to`.
fn jacobi_with(from: &str, to: &str) -> String {
    file_with("examples/jacobi2d.c", from, to)
}

/// The file at `path` (from the crate's root) with its first `from` replaced by `to`.
fn file_with(path: &str, from: &str, to: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let source = std::fs::read_to_string(full).expect("the file");
    assert!(source.contains(from), "`{from}` not in {path}");
    source.replacen(from, to, 1)
}

#[test]
fn pathological_inputs_never_panic() {
    let deep = 100_000;
    let cases = [
        // Subscript arithmetic that overflows i64 (a panic in debug builds once).
        jacobi_with("a[x - 1][y]", "a[x + 9223372036854775807 + 1][y]"),
        jacobi_with("a[x - 1][y]", "a[x - 9223372036854775807 - 1][y]"),
        jacobi_with("a[x - 1][y]", "a[x + (-9223372036854775807 - 1)][y]"),
        jacobi_with("a[x - 1][y]", "a[x + 99999999999 * 99999999999][y]"),
        jacobi_with("a[x - 1][y]", &format!("a[x{}][y]", " * x".repeat(40))),
        // The stencil dialect takes its halo from the reads: an offset of i64::MIN has no
        // magnitude (a panic in debug builds once, found by the random edits below).
        file_with(
            "tests/fixtures/stencil/star3d_ptr.c",
            "u[z][y - 1][x]",
            "u[z - 9223372036854775807 - 1][y - 1][x]",
        ),
        // Deep nesting: in a subscript, in an expression, and unbalanced (stack overflow once).
        jacobi_with(
            "a[x - 1][y]",
            &format!("a[{}x{}][y]", "(".repeat(deep), ")".repeat(deep)),
        ),
        jacobi_with(
            "a[x - 1][y]",
            &format!("a[x - 1][y]{}", " + (".repeat(deep) + &")".repeat(deep)),
        ),
        jacobi_with("a[x - 1][y]", &" + (".repeat(deep)),
        jacobi_with(
            "a[x - 1][y]",
            &format!("a[x - 1][y]{}", " + 1".repeat(deep)),
        ),
        // Many accesses, deeply nested (once quadratic in the depth per access).
        jacobi_with(
            "work[x][y] = (",
            &format!(
                "work[x][y] = {}a[x][y]{} + (",
                "(a[x][y] + ".repeat(deep / 5),
                ")".repeat(deep / 5)
            ),
        ),
        jacobi_with(
            "int n, x, y;",
            &format!("int n, x, y;{}", "{ if (x) ".repeat(deep)),
        ),
        // `init` right above `pipeline` (once overlapping edits in the back end).
        jacobi_with(
            "#pragma tpace init\n\n#pragma tpace pipeline",
            "#pragma tpace init\n#pragma tpace pipeline",
        ),
        // Empty and non-C input.
        String::new(),
        "#pragma tpace".into(),
        "#pragma tpace pipeline".into(),
        "\u{0}\u{ff}é\n#pragma tpace loop dim(1)\n".into(),
    ];
    for (i, source) in cases.iter().enumerate() {
        // A thread with a known stack, as small as cargo's default test threads.
        let source = source.clone();
        let outcome = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || survives(&source))
            .expect("thread")
            .join()
            .expect("no panic escapes `survives`");
        assert_eq!(outcome, Ok(()), "case {i}");
    }
}

#[test]
fn the_edits_reach_the_deeper_passes() {
    // A check on the test itself: some edited inputs must get past the C parser,
    // or the fuzzing above would only ever exercise syntax errors.
    let original =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c"))
            .expect("jacobi2d.c");
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(edit(), 1..3);
    let (mut parsed, mut total) = (0, 0);
    for _ in 0..200 {
        let edits = strategy
            .new_tree(&mut runner)
            .expect("a value tree")
            .current();
        let edited = apply(&original, &edits);
        total += 1;
        let syntax_error = match driver::compile_source("fuzz.c", &edited) {
            Ok(_) => false,
            Err(d) => d.iter().all(|d| d.message.starts_with("C syntax error")),
        };
        if !syntax_error {
            parsed += 1;
        }
    }
    assert!(
        parsed * 4 >= total,
        "only {parsed} of {total} edited inputs got past the C parser"
    );
}

#[test]
fn edits_apply_at_character_boundaries() {
    // Multi-byte letters everywhere: no edit may cut one in half.
    let s = "é#pragma tpace pipeline é\nééé for é\nprintf é";
    assert_eq!(boundary(s, 1), 0);
    assert_eq!(boundary(s, 2), 2);
    assert_eq!(boundary(s, usize::MAX), s.len());
    let mut runner = TestRunner::deterministic();
    runner
        .run(&prop::collection::vec(edit(), 1..6), |edits| {
            let out = apply(s, &edits);
            prop_assert!(out.is_char_boundary(out.len()));
            Ok(())
        })
        .expect("edits keep the text valid");
}
