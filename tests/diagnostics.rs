//! One test per diagnostic of issue 2: each feeds a small complete C program
//! (tests/fixtures/diagnostics/NAME.c, or a string below) through
//! `compile_source` and checks the message, the exact line:col where it points,
//! the text found there, and the rendered form (`file:line:col`, the source
//! line, `help:`). The last tests run the `tpace` binary on a bad file.

use std::path::{Path, PathBuf};
use std::process::Command;
use tpace::diag::{self, Diagnostic, line_col};
use tpace::driver;

/// What a bad program must be told.
struct Expected<'a> {
    /// Message of the first diagnostic, exactly.
    message: &'a str,
    /// Where its span starts, 1-based.
    line: usize,
    col: usize,
    /// The source text that starts there.
    at: &'a str,
    /// How many diagnostics there are in all.
    count: usize,
}

fn fixture_path(name: &str) -> String {
    format!("tests/fixtures/diagnostics/{name}.c")
}

fn read_fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture_path(name));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compile `source`, which must fail, and check the first diagnostic against `e`.
fn expect_in(path: &str, source: &str, e: Expected) -> Vec<Diagnostic> {
    let diags = match driver::compile_source(path, source) {
        Ok(_) => panic!("{path}: accepted, expected `{}`", e.message),
        Err(d) => d,
    };
    let first = &diags[0];
    assert_eq!(
        first.message, e.message,
        "{path}: all diagnostics: {diags:#?}"
    );
    let (line, col) = line_col(source, first.span.start);
    assert_eq!(
        (line, col),
        (e.line, e.col),
        "{path}: position of `{}`",
        e.message
    );
    assert!(
        source[first.span.start..].starts_with(e.at),
        "{path}:{line}:{col}: expected `{}` there, found `{}`",
        e.at,
        &source[first.span.clone()]
    );
    assert!(first.span.end > first.span.start, "{path}: empty span");
    assert!(!first.help.is_empty(), "{path}: no help");
    assert_eq!(diags.len(), e.count, "{path}: {diags:#?}");
    // What the user sees.
    let text = diag::render(path, source, &diags);
    let source_line = source.lines().nth(line - 1).expect("the line exists");
    assert!(text.contains(&format!("{path}:{line}:{col}")), "{text}");
    assert!(text.contains(source_line.trim()), "{text}");
    assert!(text.contains(e.message), "{text}");
    assert!(text.contains(&format!("help: {}", first.help)), "{text}");
    diags
}

/// Check a fixture file.
fn expect(name: &str, e: Expected) -> Vec<Diagnostic> {
    expect_in(&fixture_path(name), &read_fixture(name), e)
}

/// The valid program every fixture was made from, so that each fixture shows one fault.
const GOOD: &str = r#"#define X 64
#define Y 48

static float a[X][Y];
static float work[X][Y];

int main(void)
{
    int n, x, y;
#pragma tpace init

#pragma tpace pipeline targetinout(work, a) size([0:X][0:Y]) halo([1:1][1:1])
    for (n = 0; n < 10; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++) {
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++) {
                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;
            }
        }
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++) {
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++) {
                a[x][y] = work[x][y];
            }
        }
    }
    return 0;
}
"#;

/// `GOOD` with one replacement (which must apply).
fn good_with(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "`{from}` not in GOOD");
    GOOD.replacen(from, to, 1)
}

#[test]
fn the_unbroken_program_is_accepted() {
    let compiled = driver::compile_source("good.c", GOOD).expect("GOOD compiles");
    assert_eq!(compiled.program.pipelines[0].body.len(), 2);
    // Every fixture differs from it: each is a fault on top of a valid program.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diagnostics");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 20, "{fixtures:?}");
    for f in fixtures {
        let source = std::fs::read_to_string(&f).expect("fixture");
        assert!(
            driver::compile_source("f.c", &source).is_err(),
            "{} is accepted",
            f.display()
        );
    }
}

// ---- The pipeline directive and its place ----

#[test]
fn missing_pipeline() {
    expect(
        "missing_pipeline",
        Expected {
            message: "no `#pragma tpace pipeline` directive",
            line: 11,
            col: 1,
            at: "#pragma tpace init",
            count: 1,
        },
    );
}

#[test]
fn no_tpace_directive_at_all() {
    let source = "#include <stdio.h>\nint main(void) { return 0; }\n";
    expect_in(
        "plain.c",
        source,
        Expected {
            message: "no `#pragma tpace pipeline` directive",
            line: 1,
            col: 1,
            at: "#include <stdio.h>",
            count: 1,
        },
    );
}

#[test]
fn pipeline_not_followed_by_a_for_loop() {
    expect(
        "pipeline_not_before_loop",
        Expected {
            message: "`pipeline` must be followed by the time loop",
            line: 13,
            col: 1,
            at: "#pragma tpace pipeline targetinout(work, a)",
            count: 1,
        },
    );
}

#[test]
fn init_after_pipeline() {
    expect(
        "init_after_pipeline",
        Expected {
            message: "`init` comes after the `pipeline` directive",
            line: 28,
            col: 1,
            at: "#pragma tpace init",
            count: 1,
        },
    );
}

#[test]
fn two_pipelines_are_two_pipelines() {
    // The annotated time loop, from its pipeline line to its closing brace, twice.
    let start = GOOD.find("#pragma tpace pipeline").expect("pipeline");
    let end = GOOD.find("    return 0;").expect("return");
    let twice = good_with(
        "    return 0;",
        &format!("{}    return 0;", &GOOD[start..end]),
    );
    let compiled = driver::compile_source("twice.c", &twice).expect("two pipelines compile");
    let p = &compiled.program.pipelines;
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[0].location.as_str(), p[1].location.as_str()),
        ("twice.c:13:5", "twice.c:30:5")
    );
    assert_eq!(compiled.stages.len(), 2);
}

#[test]
fn a_pipeline_inside_another_time_loop() {
    let inner = good_with(
        "#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
        "#pragma tpace pipeline targetinout(a) size([0:X][0:Y]) halo([0:0][0:0])\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
    );
    expect_in(
        "nested.c",
        &inner,
        Expected {
            message: "`pipeline` inside another pipeline's time loop",
            line: 21,
            col: 1,
            at: "#pragma tpace pipeline targetinout(a)",
            count: 1,
        },
    );
}

#[test]
fn init_twice() {
    let twice = good_with(
        "#pragma tpace init\n",
        "#pragma tpace init\n#pragma tpace init\n",
    );
    let diags = expect_in(
        "init_twice.c",
        &twice,
        Expected {
            message: "`init` is given twice",
            line: 11,
            col: 1,
            at: "#pragma tpace init",
            count: 1,
        },
    );
    assert!(diags[0].help.contains("line 10"), "{diags:#?}");
}

#[test]
fn init_inside_the_time_loop() {
    let inside = good_with(
        "    for (n = 0; n < 10; n++) {\n",
        "    for (n = 0; n < 10; n++) {\n#pragma tpace init\n",
    );
    let inside = inside.replacen("#pragma tpace init\n\n", "\n", 1);
    expect_in(
        "init_inside.c",
        &inside,
        Expected {
            message: "`init` inside a pipelined time loop",
            line: 13,
            col: 1,
            at: "#pragma tpace init",
            count: 1,
        },
    );
}

/// `init` in `main`, the pipeline in a function defined earlier in the file:
/// text order is not execution order, and the program is accepted.
#[test]
fn init_in_main_before_a_call_to_an_earlier_function() {
    let source = r#"#define X 64
#define Y 48
static float a[X][Y], work[X][Y];

static void solve(int steps)
{
    int n, x, y;
#pragma tpace pipeline targetinout(work, a) size([0:X][0:Y]) halo([1:1][1:1])
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                a[x][y] = work[x][y];
    }
}

int main(void)
{
#pragma tpace init
    solve(10);
    return 0;
}
"#;
    let compiled = driver::compile_source("earlier.c", source).expect("accepted");
    assert!(compiled.program.init.is_some());
}

// ---- Arrays ----

#[test]
fn array_used_but_not_listed() {
    expect(
        "array_not_listed",
        Expected {
            message: "array `b` is used but not listed in the pipeline directive",
            line: 20,
            col: 59,
            at: "b[x][y]",
            count: 1,
        },
    );
}

#[test]
fn targetin_array_written() {
    expect(
        "targetin_written",
        Expected {
            message: "`a` is written but listed in targetin(...)",
            line: 26,
            col: 17,
            at: "a[x][y] = work[x][y]",
            count: 1,
        },
    );
}

#[test]
fn targetin_array_written_through_parentheses_or_compound_assignment() {
    for (write, col) in [
        ("(a[x][y]) = work[x][y];", 18),
        ("a[x][y] += work[x][y];", 17),
        ("a[x][y]++;", 17),
    ] {
        expect_in(
            "targetin.c",
            &good_with("targetinout(work, a)", "targetinout(work) targetin(a)")
                .replace("a[x][y] = work[x][y];", write),
            Expected {
                message: "`a` is written but listed in targetin(...)",
                line: 25,
                col,
                at: "a[x][y]",
                count: 1,
            },
        );
    }
}

#[test]
fn element_type_not_float_or_double() {
    expect(
        "element_type_int",
        Expected {
            message: "`a` has element type `int`",
            line: 13,
            col: 42,
            at: "a) size(",
            count: 1,
        },
    );
}

#[test]
fn array_listed_twice() {
    expect(
        "listed_twice",
        Expected {
            message: "`work` is listed twice",
            line: 13,
            col: 45,
            at: "work) size(",
            count: 1,
        },
    );
}

#[test]
fn listed_array_not_declared() {
    expect_in(
        "undeclared.c",
        &good_with("targetinout(work, a)", "targetinout(work, a, c)"),
        Expected {
            message: "cannot find the declaration of `c`",
            line: 12,
            col: 45,
            at: "c) size(",
            count: 1,
        },
    );
}

// ---- Accesses ----

#[test]
fn read_offset_outside_the_declared_halo() {
    let diags = expect(
        "offset_outside_halo",
        Expected {
            message: "`a` is read at offset 2 in dim(2), outside the declared halo [1:1]",
            line: 19,
            col: 45,
            at: "a[x + 2][y]",
            count: 1,
        },
    );
    assert_eq!(
        diags[0].help,
        "widen the halo clause for dim(2) to at least [1:2]"
    );
}

#[test]
fn write_at_a_non_zero_offset() {
    expect(
        "write_at_offset",
        Expected {
            message: "`a` is written at offset -1 in dim(1), not at the loop indices",
            line: 26,
            col: 17,
            at: "a[x][y - 1] = ",
            count: 1,
        },
    );
}

#[test]
fn gauss_seidel_sweep_is_refused() {
    // One diagnostic for the sweep, at its first neighbour read, not one per read.
    expect(
        "gauss_seidel",
        Expected {
            message: "`a` is read at a neighbour and written in the same sweep",
            line: 19,
            col: 28,
            at: "a[x - 1][y]",
            count: 1,
        },
    );
}

#[test]
fn subscript_not_index_plus_constant() {
    let diags = expect(
        "subscript_not_affine",
        Expected {
            message: "subscript of `a` is not a loop index plus a constant",
            line: 19,
            col: 73,
            at: "a[x][2 * y]",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("`a[x + c][y + c]`"),
        "{}",
        diags[0].help
    );
}

#[test]
fn subscript_count_not_matching_the_grid() {
    expect_in(
        "one_index.c",
        &good_with("a[x][y] = work[x][y];", "a[x][y] = work[x];"),
        Expected {
            message: "`work` is subscripted with 1 index but the grid has 2 dimensions",
            line: 25,
            col: 27,
            at: "work[x];",
            count: 1,
        },
    );
}

// ---- size, halo and the loop nests ----

#[test]
fn halo_rank_not_matching_size() {
    expect(
        "halo_rank_mismatch",
        Expected {
            message: "`halo` has 1 dimension but `size` has 2",
            line: 13,
            col: 62,
            at: "halo([1:1])",
            count: 1,
        },
    );
}

#[test]
fn size_rank_not_matching_the_loop_nest() {
    // Both sweeps have two loops for a 3-D `size`.
    let diags = expect(
        "size_rank_mismatch_loops",
        Expected {
            message: "loop nest has 2 loops but `size` declares 3 dimensions",
            line: 17,
            col: 9,
            at: "for (x = 1; x < X - 1; x++)",
            count: 2,
        },
    );
    assert_eq!(diags[0].label, "no loop for dim(3)");
}

#[test]
fn a_braceless_loop_is_shown_by_its_header_without_the_pragma_after_it() {
    let braced = read_fixture("size_rank_mismatch_loops");
    let from = "        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y] = work[x][y];\n            }\n        }\n";
    let to = "        for (x = 1; x < X - 1; x++)\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++)\n                a[x][y] = work[x][y];\n";
    assert_eq!(braced.matches(from).count(), 1);
    let source = braced.replace(from, to);
    let diags = expect_in(
        "braceless.c",
        &source,
        Expected {
            message: "loop nest has 2 loops but `size` declares 3 dimensions",
            line: 17,
            col: 9,
            at: "for (x = 1; x < X - 1; x++)",
            count: 2,
        },
    );
    // The second sweep's caret: its header alone, not the pragma line after it.
    assert_eq!(
        &source[diags[1].span.clone()],
        "for (x = 1; x < X - 1; x++)"
    );
}

#[test]
fn loop_dim_beyond_the_rank() {
    expect(
        "dim_beyond_rank",
        Expected {
            message: "`dim(3)` but `size` declares 2 dimensions",
            line: 15,
            col: 1,
            at: "#pragma tpace loop dim(3)",
            count: 1,
        },
    );
}

#[test]
fn missing_loop_dim() {
    expect(
        "missing_loop_dim",
        Expected {
            message: "loop without `#pragma tpace loop dim(d)`",
            line: 17,
            col: 13,
            at: "for (y = 1; y < Y - 1; y++)",
            count: 1,
        },
    );
}

#[test]
fn missing_loop_dim_on_an_outer_loop() {
    expect_in(
        "outer.c",
        &good_with("#pragma tpace loop dim(2)\n", ""),
        Expected {
            message: "loop without `#pragma tpace loop dim(d)`",
            line: 14,
            col: 9,
            at: "for (x = 1; x < X - 1; x++)",
            count: 1,
        },
    );
}

#[test]
fn duplicate_loop_dim() {
    expect(
        "duplicate_loop_dim",
        Expected {
            message: "duplicate `loop dim(2)` in one loop nest",
            line: 17,
            col: 1,
            at: "#pragma tpace loop dim(2)",
            count: 1,
        },
    );
}

#[test]
fn host_statement_that_sets_a_sweep_index() {
    expect_in(
        "scalar.c",
        &good_with(
            "    for (n = 0; n < 10; n++) {\n",
            "    for (n = 0; n < 10; n++) {\n        x = 0;\n",
        ),
        Expected {
            message: "`x` is used in the time loop outside the sweeps, but a sweep sets it at every point",
            line: 14,
            col: 9,
            at: "x = 0;",
            count: 1,
        },
    );
}

// ---- Jumps in the time loop ----

#[test]
fn break_in_the_time_loop() {
    expect(
        "break_in_time_loop",
        Expected {
            message: "`break` inside the pipelined time loop",
            line: 21,
            col: 21,
            at: "break;",
            count: 1,
        },
    );
}

#[test]
fn continue_in_the_time_loop() {
    expect(
        "continue_in_time_loop",
        Expected {
            message: "`continue` inside the pipelined time loop",
            line: 16,
            col: 13,
            at: "continue;",
            count: 1,
        },
    );
}

#[test]
fn return_in_the_time_loop() {
    expect(
        "return_in_time_loop",
        Expected {
            message: "`return` inside the pipelined time loop",
            line: 28,
            col: 21,
            at: "return 1;",
            count: 1,
        },
    );
}

#[test]
fn goto_in_the_time_loop() {
    expect(
        "goto_in_time_loop",
        Expected {
            message: "`goto` inside the pipelined time loop",
            line: 28,
            col: 21,
            at: "goto done;",
            count: 1,
        },
    );
}

// ---- Directive syntax ----

#[test]
fn unknown_pipeline_clause() {
    expect(
        "unknown_clause",
        Expected {
            message: "unknown clause `asynch`",
            line: 13,
            col: 79,
            at: "asynch",
            count: 1,
        },
    );
}

#[test]
fn unknown_loop_clause() {
    expect(
        "unknown_loop_clause",
        Expected {
            message: "unknown clause `dims`",
            line: 17,
            col: 20,
            at: "dims(1)",
            count: 1,
        },
    );
}

#[test]
fn unknown_directive() {
    expect(
        "unknown_directive",
        Expected {
            message: "unknown tpace directive `pipelines`",
            line: 13,
            col: 15,
            at: "pipelines",
            count: 1,
        },
    );
}

#[test]
fn missing_size_clause() {
    expect_in(
        "nosize.c",
        &good_with(" size([0:X][0:Y])", ""),
        Expected {
            message: "`pipeline` needs a `size` clause",
            line: 12,
            col: 1,
            at: "#pragma tpace pipeline",
            count: 1,
        },
    );
}

// ---- C syntax ----

#[test]
fn c_syntax_error_missing_semicolon() {
    expect(
        "syntax_missing_semicolon",
        Expected {
            message: "C syntax error",
            line: 10,
            col: 15,
            at: "y\n",
            count: 3,
        },
    );
}

#[test]
fn c_syntax_error_stray_token() {
    expect(
        "syntax_stray_token",
        Expected {
            message: "C syntax error",
            line: 26,
            col: 37,
            at: "];",
            count: 1,
        },
    );
}

// ---- The command line ----

/// A scratch folder holding `bad.c` (a copy of a fixture).
fn scratch_with_bad() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch folder");
    std::fs::write(
        dir.path().join("bad.c"),
        read_fixture("offset_outside_halo"),
    )
    .expect("bad.c");
    dir
}

fn tpace(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tpace")
}

#[test]
fn translate_of_a_bad_file_exits_1_and_writes_nothing() {
    let dir = scratch_with_bad();
    let out = tpace(dir.path(), &["translate", "bad.c", "-o", "out.c"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad.c:19:45"), "{stderr}");
    assert!(
        stderr.contains("`a` is read at offset 2 in dim(2), outside the declared halo [1:1]"),
        "{stderr}"
    );
    assert!(stderr.contains("a[x + 2][y]"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(!dir.path().join("out.c").exists(), "out.c was written");
    // Nor any temporary file left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["bad.c"], "{left:?}");
}

#[test]
fn translate_of_a_bad_file_leaves_an_existing_output_alone() {
    let dir = scratch_with_bad();
    let old = "/* the user's previous translation */\n";
    std::fs::write(dir.path().join("out.c"), old).expect("out.c");
    let out = tpace(dir.path(), &["translate", "bad.c", "-o", "out.c"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.c")).expect("out.c"),
        old
    );
}

#[test]
fn check_of_a_bad_file_exits_1_and_a_good_one_0() {
    let dir = scratch_with_bad();
    let out = tpace(dir.path(), &["check", "bad.c"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.c:19:45"));
    assert!(out.stdout.is_empty());
    // The same command on the unbroken program succeeds and writes the output.
    std::fs::write(dir.path().join("good.c"), GOOD).expect("good.c");
    let out = tpace(dir.path(), &["check", "good.c"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tpace(dir.path(), &["translate", "good.c", "-o", "out.c"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("out.c").exists());
}

// ---- Variables carried from point to point ----

#[test]
fn a_carried_variable_that_is_not_an_accepted_reduction_is_refused() {
    // The copy sweep's statement, which each case replaces, is on line 26 once the
    // declarations take one more line.
    for (stmt, name, at, col) in [
        ("a[x][y] = work[x][y]; count++;", "count", "count++", 39),
        // An int sum: reductions are float or double.
        ("a[x][y] = work[x][y]; count += 1;", "count", "count +=", 39),
        (
            "a[x][y] = work[x][y]; sum = sum * a[x][y];",
            "sum",
            "sum = sum",
            39,
        ),
        ("a[x][y] = work[x][y]; sum -= a[x][y];", "sum", "sum -=", 39),
        // The accumulator is also read as a value at the point.
        ("sum += work[x][y]; a[x][y] = sum;", "sum", "sum +=", 17),
        // Two operators on one accumulator.
        (
            "sum += work[x][y]; sum = fmax(sum, work[x][y]); a[x][y] = work[x][y];",
            "sum",
            "sum +=",
            17,
        ),
        // A maximum that does not pick the larger of the two compared values.
        (
            "sum = sum > work[x][y] ? work[x][y] + 1.0 : sum; a[x][y] = work[x][y];",
            "sum",
            "sum = sum >",
            17,
        ),
    ] {
        let source = good_with(
            "    int n, x, y;",
            "    int n, x, y, count = 0;\n    double sum = 0.0;",
        )
        .replace("a[x][y] = work[x][y];", stmt);
        expect_in(
            "carried.c",
            &source,
            Expected {
                message: &format!(
                    "`{name}` is carried from point to point in a sweep (a reduction or a counter)"
                ),
                line: 26,
                col,
                at,
                count: 1,
            },
        );
    }
}

#[test]
fn every_accepted_reduction_form_is_a_reduction_with_its_operator() {
    use tpace::ir::{ReduceOp, ScalarRole};
    let w = "work[x][y]";
    for (stmt, op) in [
        (format!("s += {w};"), ReduceOp::Sum),
        (format!("s = s + {w};"), ReduceOp::Sum),
        (format!("s = {w} + s;"), ReduceOp::Sum),
        (format!("s = s + {w} * 2.0f + 1.0f;"), ReduceOp::Sum),
        (format!("s = fmax(s, {w});"), ReduceOp::Max),
        (format!("s = fmaxf({w}, s);"), ReduceOp::Max),
        (format!("s = fmin(s, {w});"), ReduceOp::Min),
        (format!("s = fminf({w}, s);"), ReduceOp::Min),
        (format!("s = s > {w} ? s : {w};"), ReduceOp::Max),
        (format!("s = ({w} > s) ? {w} : s;"), ReduceOp::Max),
        (format!("s = s >= {w} ? {w} : s;"), ReduceOp::Min),
        (format!("s = s < {w} ? s : {w};"), ReduceOp::Min),
        (format!("s = ({w} <= s) ? s : {w};"), ReduceOp::Max),
        (format!("if ({w} > 1.0f) s += {w};"), ReduceOp::Sum),
    ] {
        let source = good_with("    int n, x, y;", "    int n, x, y;\n    float s = 0.0f;")
            .replace(
                "a[x][y] = work[x][y];",
                &format!("a[x][y] = work[x][y]; {stmt}"),
            );
        let compiled = driver::compile_source("r.c", &source)
            .unwrap_or_else(|d| panic!("`{stmt}` refused: {d:#?}"));
        let p = &compiled.program.pipelines[0];
        assert_eq!(p.reductions.len(), 1, "{stmt}");
        assert_eq!(
            (p.reductions[0].op, p.reductions[0].sweep),
            (op, 1),
            "{stmt}"
        );
        assert!(
            p.body[1]
                .scalars
                .iter()
                .any(|s| s.name == "s" && s.role == ScalarRole::Reduction),
            "{stmt}"
        );
    }
}

// ---- Host statements in the time loop and reduction results ----

/// GOOD with `float s` and `float coef` declared (one more line: the sweeps' lines
/// move down by one), `top` inserted at the start of the time loop's body and `end`
/// at its end, and the copy statement replaced by `copy`.
fn host_variant(top: &str, copy: &str, end: &str) -> String {
    good_with(
        "    int n, x, y;",
        "    int n, x, y;\n    float s = 0.0f, coef = 0.5f, t;",
    )
    .replacen(
        "    for (n = 0; n < 10; n++) {\n",
        &format!("    for (n = 0; n < 10; n++) {{\n{top}"),
        1,
    )
    .replace("a[x][y] = work[x][y];", copy)
    .replacen(
        "        }\n    }\n    return 0;",
        &format!("        }}\n{end}    }}\n    return 0;"),
        1,
    )
}

/// The refusals of host statements and reduction results: (name, source, expected).
fn host_refusals() -> Vec<(
    &'static str,
    String,
    &'static str,
    usize,
    usize,
    &'static str,
)> {
    let reduce = "s += work[x][y]; a[x][y] = work[x][y];";
    vec![
        (
            "listed_array",
            host_variant("        a[0][0] = 1.0f;\n", "a[x][y] = work[x][y];", ""),
            "the listed array `a` is used in the time loop outside the sweeps",
            15,
            9,
            "a[0][0]",
        ),
        (
            "writes_what_a_sweep_reads",
            host_variant(
                "        coef = coef * 0.5f;\n",
                "a[x][y] = work[x][y] * coef;",
                "",
            ),
            "`coef` is written in the time loop outside the sweeps, and a sweep reads it",
            15,
            9,
            "coef = coef",
        ),
        (
            "writes_the_counter",
            host_variant("", "a[x][y] = work[x][y];", "        n += 0;\n"),
            "`n` is written in the time loop outside the sweeps, and the time loop's counter",
            29,
            9,
            "n += 0;",
        ),
        (
            "reads_a_per_point_temporary",
            host_variant("", "t = work[x][y]; a[x][y] = t;", "        s = t;\n"),
            "`t` is used in the time loop outside the sweeps, but a sweep sets it at every point",
            29,
            13,
            "t;",
        ),
        (
            "sweep_reads_a_reduction",
            host_variant("", "a[x][y] = work[x][y] + s;", "").replace(
                "work[x][y] = (a[x - 1][y]",
                "s += a[x][y]; work[x][y] = (a[x - 1][y]",
            ),
            "`s` is used in a sweep, but it is the result of a reduction in sweep 1",
            26,
            40,
            "s;",
        ),
        (
            "convergence_test",
            host_variant(
                "        s = 0.0f;\n",
                reduce,
                "        if (s < 1.0f)\n            break;\n",
            ),
            "`break` on a test of the reduction `s` inside the pipelined time loop (a convergence test)",
            31,
            13,
            "break;",
        ),
    ]
}

#[test]
fn host_statements_and_reduction_results_that_can_not_be_replayed_are_refused() {
    for (name, source, message, line, col, at) in host_refusals() {
        expect_in(
            &format!("{name}.c"),
            &source,
            Expected {
                message,
                line,
                col,
                at,
                count: 1,
            },
        );
    }
}

#[test]
fn host_refusals_exit_1_and_write_nothing() {
    for (name, source, message, line, col, _) in host_refusals() {
        let dir = tempfile::tempdir().expect("scratch folder");
        std::fs::write(dir.path().join("bad.c"), &source).expect("bad.c");
        let out = tpace(dir.path(), &["translate", "bad.c", "-o", "out.c"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("bad.c:{line}:{col}")),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(message), "{name}: {stderr}");
        assert!(
            !dir.path().join("out.c").exists(),
            "{name}: out.c was written"
        );
    }
}

#[test]
fn accepted_host_statements_are_kept_in_order_with_the_sweeps() {
    let source = host_variant(
        "        s = 0.0f;\n",
        "s += work[x][y]; a[x][y] = work[x][y];",
        "        if (n % 3 == 0)\n            coef = s;\n",
    );
    let compiled = driver::compile_source("ok.c", &source).expect("accepted");
    let p = &compiled.program.pipelines[0];
    let host: Vec<(&str, usize)> = p
        .host
        .iter()
        .map(|h| (&source[h.span.clone()], h.before))
        .collect();
    assert_eq!(
        host,
        [
            ("s = 0.0f;", 0),
            ("if (n % 3 == 0)\n            coef = s;", 2)
        ]
    );
}

#[test]
fn a_per_point_temporary_declared_outside_is_accepted() {
    let source = good_with(
        "    int n, x, y;",
        "    int n, x, y;\n    float t, coef = 0.5f;",
    )
    .replace(
        "a[x][y] = work[x][y];",
        "t = work[x][y] * coef; a[x][y] = t;",
    );
    let compiled = driver::compile_source("t.c", &source).expect("accepted");
    let roles: Vec<(String, tpace::ir::ScalarRole)> = compiled.program.pipelines[0].body[1]
        .scalars
        .iter()
        .map(|s| (s.name.clone(), s.role))
        .collect();
    assert_eq!(
        roles,
        [
            ("t".to_string(), tpace::ir::ScalarRole::PerPoint),
            ("coef".to_string(), tpace::ir::ScalarRole::Read)
        ]
    );
}

#[test]
fn a_pointer_used_in_a_sweep_is_refused() {
    // Host memory read through a pointer: the device buffers hold only the listed arrays.
    let source = good_with("    int n, x, y;", "    int n, x, y;\n    float *src = 0;")
        .replace("a[x][y] = work[x][y];", "a[x][y] = work[x][y] + *src;");
    expect_in(
        "pointer.c",
        &source,
        Expected {
            message: "`src` is used in a sweep but is not a plain scalar or a listed array",
            line: 26,
            col: 41,
            at: "src;",
            count: 1,
        },
    );
}

// ---- Per-step values (FDTD's `fict[t]`) ----

#[test]
fn a_per_step_value_is_passed_by_value() {
    // Read at the time index only: the host reads it once per step.
    let source = good_with("    int n, x, y;", "    int n, x, y;\n    float *src = 0;")
        .replace("a[x][y] = work[x][y];", "a[x][y] = work[x][y] + src[n];");
    let compiled = driver::compile_source("step.c", &source).expect("accepted");
    let sweep = &compiled.program.pipelines[0].body[1];
    let values: Vec<(&str, &str)> = sweep
        .step_values
        .iter()
        .map(|v| (v.text.as_str(), v.ty.as_str()))
        .collect();
    assert_eq!(values, [("src[n]", "float")]);
    // `src` is no kernel argument: the value is.
    assert!(
        sweep.scalars.iter().all(|s| s.name != "src"),
        "{:?}",
        sweep.scalars
    );
}

#[test]
fn an_unlisted_array_written_in_a_sweep_is_refused() {
    let source = good_with("    int n, x, y;", "    int n, x, y;\n    float *src = 0;").replace(
        "a[x][y] = work[x][y];",
        "a[x][y] = work[x][y]; src[n] = 1.0f;",
    );
    let diags = expect_in(
        "step_written.c",
        &source,
        Expected {
            message: "unlisted array `src` is written in a sweep",
            line: 26,
            col: 39,
            at: "src[n] = ",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("targetinout(src)"),
        "{}",
        diags[0].help
    );
}

#[test]
fn an_unlisted_array_at_a_changing_subscript_is_refused() {
    // `s` changes from point to point: not a per-step value.
    let source = good_with(
        "    int n, x, y;",
        "    int n, x, y, s;\n    float *src = 0;",
    )
    .replace("a[x][y] = work[x][y];", "s = n + 1; a[x][y] = src[s];");
    let diags = expect_in(
        "step_changing.c",
        &source,
        Expected {
            message: "array `src` is used but not listed in the pipeline directive",
            line: 26,
            col: 38,
            at: "src[s]",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("per-step value"),
        "{}",
        diags[0].help
    );
    assert!(diags[0].help.contains("targetin(src)"), "{}", diags[0].help);
}

#[test]
fn a_per_step_value_of_a_row_is_refused() {
    let source = good_with(
        "    int n, x, y;",
        "    int n, x, y;\n    float (*src)[4] = 0;",
    )
    .replace("a[x][y] = work[x][y];", "a[x][y] = work[x][y] + src[n];");
    expect_in(
        "step_row.c",
        &source,
        Expected {
            message: "`src[n]` is not an element of a plain scalar type (`src` is declared as `float (*src)[4]`)",
            line: 26,
            col: 40,
            at: "src[n]",
            count: 1,
        },
    );
}

// ---- Component arrays (Himeno's `a[4][..]`) ----

/// `GOOD` with `a` declared `a[2][X][Y]` and every access to it given component 0,
/// then `from` replaced by `to`.
fn components_with(from: &str, to: &str) -> String {
    let source = GOOD
        .replace("static float a[X][Y];", "static float a[2][X][Y];")
        .replace("a[x", "a[0][x");
    assert!(
        source.contains(from),
        "`{from}` not in the component variant"
    );
    source.replacen(from, to, 1)
}

#[test]
fn component_arrays_list_the_components_used() {
    let compiled = driver::compile_source(
        "c.c",
        &components_with("a[0][x][y] =", "a[0][x][y] = a[1][x][y] +"),
    )
    .expect("accepted");
    let names: Vec<String> = compiled.program.pipelines[0]
        .arrays
        .iter()
        .map(|a| a.display_name())
        .collect();
    assert_eq!(names, ["work", "a[0]", "a[1]"]);
    // A component no sweep uses is not listed (not moved).
    let compiled = driver::compile_source("c.c", &components_with("", "")).expect("accepted");
    let components: Vec<Option<u32>> = compiled.program.pipelines[0]
        .arrays
        .iter()
        .map(|a| a.component)
        .collect();
    assert_eq!(components, [None, Some(0)]);
}

#[test]
fn a_component_subscript_that_is_not_a_constant_is_refused() {
    expect_in(
        "component_variable.c",
        &components_with("a[0][x][y] = work", "a[n][x][y] = work"),
        Expected {
            message: "component subscript of `a` is not an integer constant",
            line: 25,
            col: 19,
            at: "n][x][y] = work",
            count: 1,
        },
    );
}

#[test]
fn a_component_out_of_range_is_refused() {
    expect_in(
        "component_range.c",
        &components_with("a[0][x][y] = work", "a[2][x][y] = work"),
        Expected {
            message: "component 2 of `a` is out of range: it is declared with 2",
            line: 25,
            col: 19,
            at: "2][x][y] = work",
            count: 1,
        },
    );
}

#[test]
fn a_component_array_accessed_without_its_component_is_refused() {
    let diags = expect_in(
        "component_missing.c",
        &components_with("a[0][x][y] = work", "a[x][y] = work"),
        Expected {
            message: "`a` is declared with a component dimension but subscripted with 2 indices",
            line: 25,
            col: 17,
            at: "a[x][y] = work",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("`a[0][..][..]`"),
        "{}",
        diags[0].help
    );
}

#[test]
fn a_component_pointer_is_refused() {
    let diags = expect_in(
        "component_pointer.c",
        &components_with("static float a[2][X][Y];", "static float (*a)[X][Y];"),
        Expected {
            message: "`a` is declared as `(*a)[X][Y]`, a pointer with one dimension more than `size`",
            line: 12,
            col: 42,
            at: "a) size",
            count: 1,
        },
    );
    assert!(diags[0].help.contains("static array"), "{}", diags[0].help);
}

#[test]
fn a_component_count_that_is_not_a_constant_is_refused() {
    expect_in(
        "component_count.c",
        &components_with("static float a[2][X][Y];", "static float a[X / 32][X][Y];"),
        Expected {
            message: "the component dimension of `a` does not have a constant count",
            line: 12,
            col: 42,
            at: "a) size",
            count: 1,
        },
    );
}

#[test]
fn the_subscript_help_does_not_name_a_constant_like_the_array() {
    // For an array called `c`, the constant is not written `c` too.
    let source = GOOD.replace("a[", "c[").replace("(work, a)", "(work, c)");
    let source = source.replacen("c[x][y] = work[x][y];", "c[x][y] = work[x][2 * y];", 1);
    let diags = driver::compile_source("c.c", &source).expect_err("refused");
    assert!(
        diags[0].help.contains("`work[x + c][y + c]`"),
        "{}",
        diags[0].help
    );
    let source = GOOD.replace("a[", "c[").replace("(work, a)", "(work, c)");
    let source = source.replacen("c[x][y] = work[x][y];", "c[x][2 * y] = work[x][y];", 1);
    let diags = driver::compile_source("c.c", &source).expect_err("refused");
    assert!(
        diags[0]
            .help
            .contains("`c[x + d][y + d]`, with integer constants d"),
        "{}",
        diags[0].help
    );
}

// ---- Lower-dimensional sweeps (FDTD's source row) ----

/// `GOOD` with its second sweep replaced by a 1-D loop over `y` holding `stmt`.
fn row_sweep(stmt: &str) -> String {
    good_with(
        "#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++) {
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++) {
                a[x][y] = work[x][y];
            }
        }",
        &format!(
            "#pragma tpace loop dim(1)
        for (y = 1; y < Y - 1; y++) {{
            {stmt}
        }}"
        ),
    )
}

#[test]
fn a_lower_dimensional_sweep_fixes_its_plane() {
    let compiled = driver::compile_source("row.c", &row_sweep("a[X - 1][y] = work[X - 2][y];"))
        .expect("accepted");
    let sweep = &compiled.program.pipelines[0].body[1];
    let fixed: Vec<(usize, &str, &str, bool)> = sweep
        .loops
        .iter()
        .map(|l| (l.pos, l.lo.as_str(), l.hi.as_str(), l.fixed))
        .collect();
    assert_eq!(
        fixed,
        [
            (0, "(X - 1)", "(X - 1) + 1", true),
            (1, "1", "Y - 1", false)
        ]
    );
    let offsets: Vec<Vec<i64>> = sweep.accesses.iter().map(|a| a.offsets.clone()).collect();
    assert_eq!(offsets, [vec![0, 0], vec![-1, 0]]);
}

#[test]
fn a_dimension_without_a_loop_indexed_by_a_loop_index_is_refused() {
    expect_in(
        "row_loop_index.c",
        &row_sweep("a[y][y] = work[0][y];"),
        Expected {
            message: "the sweep has no loop for dim(2), but `a` is indexed there by `y`",
            line: 23,
            col: 15,
            at: "y][y] = work",
            count: 1,
        },
    );
}

#[test]
fn a_dimension_without_a_loop_indexed_by_the_time_counter_is_refused() {
    expect_in(
        "row_time.c",
        &row_sweep("a[n][y] = work[0][y];"),
        Expected {
            message: "the sweep has no loop for dim(2), but `a` is indexed there by `n`",
            line: 23,
            col: 15,
            at: "n][y] = work",
            count: 1,
        },
    );
}

#[test]
fn a_dimension_without_a_loop_at_another_plane_is_refused() {
    expect_in(
        "row_other_plane.c",
        &row_sweep("a[0][y] = work[X / 2][y];"),
        Expected {
            message: "index `X / 2` in dim(2) is not the sweep's fixed index `0` plus a constant",
            line: 23,
            col: 28,
            at: "X / 2][y]",
            count: 1,
        },
    );
}

#[test]
fn braceless_loops_with_pragma_lines_between_their_headers_are_accepted() {
    // A `#pragma` line is not a statement: it belongs to the loop after it, braces or not.
    let source = good_with(
        "        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;\n            }\n        }",
        "        for (x = 1; x < X - 1; x++)\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++)\n                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;",
    );
    let braced = driver::compile_source("braced.c", GOOD).expect("GOOD compiles");
    let braceless = driver::compile_source("braceless.c", &source).expect("braceless compiles");
    let (b, l) = (
        &braced.program.pipelines[0],
        &braceless.program.pipelines[0],
    );
    assert_eq!(b.body.len(), l.body.len());
    for (sb, sl) in b.body.iter().zip(&l.body) {
        let offsets = |s: &tpace::ir::Sweep| -> Vec<Vec<i64>> {
            s.accesses.iter().map(|a| a.offsets.clone()).collect()
        };
        assert_eq!(offsets(sb), offsets(sl));
        assert_eq!(sb.loops.len(), sl.loops.len());
    }
}

#[test]
fn a_preprocessor_line_that_is_not_a_pragma_after_a_braceless_header_says_to_add_braces() {
    let source = good_with(
        "        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;\n            }\n        }",
        "        for (x = 1; x < X - 1; x++)\n#ifdef FAST\n            for (y = 1; y < Y - 1; y++) {\n                work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;\n            }\n#endif",
    );
    let diags = expect_in(
        "ifdef.c",
        &source,
        Expected {
            message: "a preprocessor line right after a loop or `if` header without braces",
            line: 15,
            col: 9,
            at: "for (x = 1; x < X - 1; x++)",
            count: diags_count(&source),
        },
    );
    assert!(
        diags[0].help.contains("put the body in braces"),
        "{diags:#?}"
    );
}

/// How many diagnostics a source gets (for tests that check only the first).
fn diags_count(source: &str) -> usize {
    driver::compile_source("x.c", source).map_or_else(|d| d.len(), |_| 0)
}

// ---- Functions a sweep calls ----

/// GOOD with `helpers` after the arrays and the first sweep's statement replaced.
fn calling(helpers: &str, stmt: &str) -> String {
    let with_helpers = good_with(
        "static float work[X][Y];\n",
        &format!("static float work[X][Y];\n{helpers}"),
    );
    let from = "work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;";
    assert!(with_helpers.contains(from));
    with_helpers.replacen(from, stmt, 1)
}

#[test]
fn a_function_a_sweep_calls_may_not_read_a_listed_array() {
    // The sweep's statement, line 18 of GOOD, moves down by the helper's four lines.
    let source = calling(
        "static float west(int x, int y)\n{\n    return a[x - 1][y];\n}\n",
        "work[x][y] = (west(x, y) + a[x + 1][y]) / 2.0f;",
    );
    let diags = expect_in(
        "west.c",
        &source,
        Expected {
            message: "`west`, called in a sweep, reads `a`, a variable declared outside it",
            line: 22,
            col: 31,
            at: "west(x, y)",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("as an argument"),
        "{}",
        diags[0].help
    );
}

#[test]
fn a_function_a_sweep_calls_may_not_read_a_variable_through_another() {
    let source = calling(
        "static float scale = 0.25f;\nstatic float scaled(float v) { return v * scale; }\nstatic float quarter(float v) { return scaled(v); }\n",
        "work[x][y] = quarter(a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]);",
    );
    expect_in(
        "through.c",
        &source,
        Expected {
            message: "`quarter`, called in a sweep, reads `scale` (through `scaled`), a variable declared outside it",
            line: 21,
            col: 30,
            at: "quarter(",
            count: 1,
        },
    );
}

#[test]
fn a_function_a_sweep_calls_may_read_its_arguments_locals_and_file_constants() {
    let source = calling(
        "static const float quarter_of = 0.25f;\n\
         static float sum4(float p, float q, float r, float s);\n\
         static float quarter(float v) { float w = v; return w * quarter_of; }\n\
         static float sum4(float p, float q, float r, float s) { return p + q + r + s; }\n",
        "work[x][y] = quarter(sum4(a[x - 1][y], a[x + 1][y], a[x][y - 1], a[x][y + 1]));",
    );
    let compiled = driver::compile_source("helpers.c", &source).expect("accepted");
    // The accesses in the arguments are the sweep's, with their offsets.
    let offsets: Vec<Vec<i64>> = compiled.program.pipelines[0].body[0]
        .accesses
        .iter()
        .map(|a| a.offsets.clone())
        .collect();
    assert!(
        offsets.contains(&vec![-1, 0]) && offsets.contains(&vec![0, 1]),
        "{offsets:?}"
    );
}

#[test]
fn a_pointer_swap_between_steps_is_a_rotation() {
    // The copy sweep replaced by the usual C pointer swap, through a temporary
    // declared before the loop: the pointers rotate, nothing is refused.
    let source = good_with(
        "static float a[X][Y];\nstatic float work[X][Y];\n",
        "static float a_store[X][Y], work_store[X][Y];\n",
    )
    .replace(
        "int n, x, y;",
        "int n, x, y;\n    float (*a)[Y] = a_store, (*work)[Y] = work_store, (*tmp)[Y];",
    );
    let copy = "#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y] = work[x][y];\n            }\n        }\n";
    assert_eq!(source.matches(copy).count(), 1);
    let source = source.replace(
        copy,
        "        tmp = a;\n        a = work;\n        work = tmp;\n",
    );
    let compiled = driver::compile_source("swap.c", &source).unwrap_or_else(|d| panic!("{d:#?}"));
    let p = &compiled.program.pipelines[0];
    // targetinout(work, a): work takes a's storage and a takes work's.
    assert_eq!(
        p.rotation.as_ref().map(|r| r.takes.clone()),
        Some(vec![1, 0])
    );
    // A swap of a listed pointer with an unlisted one is still refused.
    let source = source.replace("a = work;", "a = a_store;");
    let diags = driver::compile_source("swap.c", &source).expect_err("refused");
    assert!(
        diags[0].message.contains("which is not a listed array"),
        "{diags:#?}"
    );
}

// ---- Arrays held in structs, indexed through macros; types through typedefs and macros ----

/// A Himeno-like program in small: arrays in a struct behind pointers, indexed
/// through a function-like macro with a component argument.
const STRUCT: &str = r#"struct Mat { float *m; int mnums, mrows, mcols; };
typedef struct Mat Matrix;
#define MR(mt, n, r, c) mt->m[(n) * mt->mrows * mt->mcols + (r) * mt->mcols + (c)]

void solve(int steps, Matrix *p, Matrix *w)
{
    int n, x, y;
#pragma tpace pipeline targetinout(w->m, p->m) size([0:p->mrows][0:p->mcols]) halo([1:1][1:1])
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < p->mrows - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < p->mcols - 1; y++)
                MR(w, 0, x, y) = (MR(p, 0, x - 1, y) + MR(p, 0, x + 1, y) + MR(p, 0, x, y - 1) + MR(p, 0, x, y + 1)) / 4.0f;
#pragma tpace loop dim(2)
        for (x = 1; x < p->mrows - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < p->mcols - 1; y++)
                MR(p, 0, x, y) = MR(w, 0, x, y);
    }
}
"#;

/// `STRUCT` with one replacement (which must apply).
fn struct_with(from: &str, to: &str) -> String {
    assert!(STRUCT.contains(from), "`{from}` not in STRUCT");
    STRUCT.replacen(from, to, 1)
}

#[test]
fn struct_held_arrays_through_a_macro_are_accepted_with_run_time_stride_checks() {
    let compiled = driver::compile_source("struct.c", STRUCT).expect("accepted");
    let p = &compiled.program.pipelines[0];
    let names: Vec<String> = p.arrays.iter().map(|a| a.display_name()).collect();
    assert_eq!(names, ["w->m", "p->m"]);
    // Every access is the whole macro invocation, at the offsets its arguments say.
    let first = &p.body[0].accesses;
    assert_eq!(&STRUCT[first[0].span.clone()], "MR(w, 0, x, y)");
    let offsets: Vec<Vec<i64>> = first.iter().map(|a| a.offsets.clone()).collect();
    assert_eq!(
        offsets,
        [vec![0, 0], vec![-1, 0], vec![1, 0], vec![0, -1], vec![0, 1]]
    );
    // The names in the macro's arguments are no kernel scalars.
    assert!(p.body[0].scalars.is_empty(), "{:?}", p.body[0].scalars);
    assert_eq!(p.body[0].flops, 4);
    // `w`'s rows are `w->mcols` long, the grid's `p->mcols`: checked at run time.
    assert!(p.arrays[1].checks.is_empty(), "{:?}", p.arrays[1].checks);
    let holds: Vec<&str> = p.arrays[0]
        .checks
        .iter()
        .map(|c| c.holds.as_str())
        .collect();
    assert_eq!(holds, ["(long)w->mcols == (long)p->mcols"]);
    assert_eq!(p.arrays[0].host_base, "(void *)(w->m)");
}

#[test]
fn a_constant_macro_argument_with_a_stride_of_its_own_selects_a_component() {
    let source = struct_with(
        "MR(p, 0, x, y) = MR(w, 0, x, y);",
        "MR(p, 0, x, y) = MR(w, 0, x, y) + MR(w, 2, x, y);",
    );
    let compiled = driver::compile_source("components.c", &source).expect("accepted");
    let p = &compiled.program.pipelines[0];
    let names: Vec<String> = p.arrays.iter().map(|a| a.display_name()).collect();
    assert_eq!(names, ["w->m[0]", "w->m[2]", "p->m"]);
    assert_eq!(
        p.arrays[1].host_base,
        "(void *)((w->m) + 2L * ((long)w->mcols * (long)w->mrows))"
    );
    // The components must not overlap: a block at least one grid apart.
    assert!(
        p.arrays[0].checks.iter().any(
            |c| c.holds == "(long)w->mcols * (long)w->mrows >= (long)p->mcols * (long)p->mrows"
        ),
        "{:?}",
        p.arrays[0].checks
    );
}

#[test]
fn a_member_of_a_struct_without_that_field() {
    let source = struct_with("targetinout(w->m, p->m)", "targetinout(w->q, p->m)");
    let diags = expect_in(
        "no_field.c",
        &source,
        Expected {
            message: "`struct Mat` has no field `q`",
            line: 8,
            col: 36,
            at: "w->q, p->m",
            count: 1,
        },
    );
    assert!(
        diags[0].help.contains("`m`, `mnums`, `mrows`, `mcols`"),
        "{diags:#?}"
    );
}

#[test]
fn a_dot_on_a_pointer_to_a_struct() {
    let source = struct_with("targetinout(w->m, p->m)", "targetinout(w.m, p->m)");
    let diags = expect_in(
        "dot.c",
        &source,
        Expected {
            message: "`w` is a pointer to a `struct Mat`",
            line: 8,
            col: 36,
            at: "w.m, p->m",
            count: 1,
        },
    );
    assert_eq!(diags[0].help, "write `w->m`");
}

#[test]
fn a_member_of_something_that_is_not_a_struct() {
    let source = struct_with("    int n, x, y;\n", "    int n, x, y, s = 0;\n").replacen(
        "targetinout(w->m, p->m)",
        "targetinout(w->m, p->m) targetin(s.u)",
        1,
    );
    expect_in(
        "not_struct.c",
        &source,
        Expected {
            message: "`s` is not a struct: it is declared as `int s`",
            line: 8,
            col: 57,
            at: "s.u)",
            count: 1,
        },
    );
}

#[test]
fn a_macro_whose_expansion_is_not_index_plus_constant() {
    let source = struct_with(
        "#define MR(",
        "#define SKEWED(mt, r, c) mt->m[(r) * (c)]\n#define MR(",
    )
    .replacen(
        "MR(p, 0, x, y) = MR(w, 0, x, y);",
        "MR(p, 0, x, y) = SKEWED(w, x, y);",
        1,
    );
    let diags = expect_in(
        "skewed.c",
        &source,
        Expected {
            message: "subscript of `w->m` is not a loop index plus a constant",
            line: 20,
            col: 34,
            at: "SKEWED(w, x, y)",
            count: 1,
        },
    );
    // The help shows what the macro expands to.
    assert!(
        diags[0]
            .help
            .contains("`SKEWED(w, x, y)` expands to `w->m[(x) * (y)]`"),
        "{diags:#?}"
    );
}

#[test]
fn a_macro_that_reaches_a_listed_array_without_being_one_access() {
    let source = struct_with(
        "#define MR(",
        "#define SUM2(r, c) (p->m[(r) * p->mcols + (c)] + p->m[(r) * p->mcols + (c) + 1])\n#define MR(",
    )
    .replacen(
        "MR(p, 0, x, y) = MR(w, 0, x, y);",
        "MR(p, 0, x, y) = MR(w, 0, x, y) + SUM2(x, y);",
        1,
    );
    expect_in(
        "sum2.c",
        &source,
        Expected {
            message: "the macro `SUM2` uses the listed array `p->m` in its definition, but `SUM2(x, y)` is not one access to it",
            line: 20,
            col: 51,
            at: "SUM2(x, y)",
            count: 1,
        },
    );
}

#[test]
fn a_macro_that_reads_an_unlisted_array() {
    // The kernels keep a macro's text: an array behind it would be the host's.
    let source = good_with(
        "static float work[X][Y];\n",
        "static float work[X][Y];\nstatic float mask[X][Y];\n#define MASKED(x, y) (mask[x][y] * 0.5f)\n",
    )
    .replacen(
        "work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;",
        "work[x][y] = (a[x - 1][y] + a[x + 1][y]) * MASKED(x, y);",
        1,
    );
    let diags = expect_in(
        "masked.c",
        &source,
        Expected {
            message: "the macro `MASKED` reads `mask`, which the pipeline does not list, in its definition",
            line: 20,
            col: 60,
            at: "MASKED(x, y)",
            count: 1,
        },
    );
    assert!(
        diags[0].label.contains("(mask[x][y] * 0.5f)"),
        "{}",
        diags[0].label
    );
    assert!(
        diags[0].help.contains("targetin(mask)"),
        "{}",
        diags[0].help
    );
    // A number behind a macro is passed by value instead: the same program with a
    // scalar there compiles, and its kernels take the scalar.
    let scalar = source
        .replacen("static float mask[X][Y];", "static float mask = 2.0f;", 1)
        .replacen("(mask[x][y] * 0.5f)", "(mask * 0.5f)", 1);
    let compiled = driver::compile_source("scalar.c", &scalar).expect("a scalar behind a macro");
    let scalars = &compiled.program.pipelines[0].body[0].scalars;
    assert!(scalars.iter().any(|s| s.name == "mask"), "{scalars:?}");
}

#[test]
fn a_flat_stride_that_is_not_the_grids() {
    let source = good_with("static float a[X][Y];", "static float *a;")
        .replacen(
            "work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0f;",
            "work[x][y] = (a[(x - 1) * 50 + y] + a[(x + 1) * 50 + y]) / 4.0f;",
            1,
        )
        .replacen("a[x][y] = work[x][y];", "a[x * 50 + y] = work[x][y];", 1);
    expect_in(
        "stride.c",
        &source,
        Expected {
            message: "`a` is indexed with a stride of 50 in dim(2), but the `size` clause's extents give 48",
            line: 18,
            col: 31,
            at: "a[(x - 1) * 50 + y]",
            count: 1,
        },
    );
}

#[test]
fn a_typedef_to_a_type_that_is_not_floating() {
    let source = good_with(
        "static float a[X][Y];",
        "typedef int cell;\nstatic cell a[X][Y];",
    );
    expect_in(
        "cell.c",
        &source,
        Expected {
            message: "`a` has element type `cell` (`int`)",
            line: 13,
            col: 42,
            at: "a) size(",
            count: 1,
        },
    );
}

#[test]
fn element_types_through_a_macro_and_a_typedef() {
    let source = good_with(
        "static float a[X][Y];\nstatic float work[X][Y];",
        "#define DATA_TYPE double\ntypedef DATA_TYPE real;\nstatic DATA_TYPE a[X][Y];\nstatic real work[X][Y];",
    );
    let compiled = driver::compile_source("types.c", &source).expect("accepted");
    let elems: Vec<&str> = compiled.program.pipelines[0]
        .arrays
        .iter()
        .map(|a| a.elem.c_name())
        .collect();
    assert_eq!(elems, ["double", "double"]);
}

#[test]
fn arrays_declared_through_a_declaration_macro_in_the_file() {
    let source = good_with(
        "static float a[X][Y];\nstatic float work[X][Y];\n\nint main(void)\n{",
        "#define ARRAY_2D(v, d1, d2) v[d1][d2]\n\nstatic void kernel(float ARRAY_2D(a, X, Y), float ARRAY_2D(work, X, Y))\n{",
    )
    .replacen("#pragma tpace init\n", "", 1)
    .replacen("    return 0;\n", "", 1);
    let compiled = driver::compile_source("decl_macro.c", &source).expect("accepted");
    let p = &compiled.program.pipelines[0];
    assert_eq!(p.arrays.len(), 2);
    assert_eq!(p.arrays[1].layout, tpace::ir::Layout::Static);
    assert_eq!(p.body[0].accesses.len(), 5);
}

#[test]
fn a_macro_that_expands_without_bound_is_refused() {
    let mut defines = String::from("#define GROW0 1.0f\n");
    for i in 1..48 {
        defines.push_str(&format!("#define GROW{i} (GROW{p} + GROW{p})\n", p = i - 1));
    }
    let source = good_with("#define X 64\n", &format!("#define X 64\n{defines}")).replacen(
        "a[x][y] = work[x][y];",
        "a[x][y] = work[x][y] * GROW47;",
        1,
    );
    // The expander gives up after bounded work (the unit test
    // `macros_that_grow_without_bound_are_given_up_on_after_bounded_work` counts it).
    let line = source
        .lines()
        .position(|l| l.contains("GROW47;"))
        .expect("the use")
        + 1;
    expect_in(
        "grow.c",
        &source,
        Expected {
            message: "cannot expand `GROW47`",
            line,
            col: 40,
            at: "GROW47;",
            count: 1,
        },
    );
}

// ---- `while` and `do` time loops, index variables, per-step tables (issue 26) ----

/// `GOOD` with its time loop written `while (n < 10) { ...; n++; }` (the counter set
/// before the loop), then `edits` applied in order (each must apply).
fn good_while(edits: &[(&str, &str)]) -> String {
    let mut source = good_with("    int n, x, y;", "    int n = 0, x, y;")
        .replacen("    for (n = 0; n < 10; n++) {", "    while (n < 10) {", 1)
        .replacen(
            "        }\n    }\n    return 0;",
            "        }\n        n++;\n    }\n    return 0;",
            1,
        );
    for (from, to) in edits {
        assert!(source.contains(from), "`{from}` not in {source}");
        source = source.replacen(from, to, 1);
    }
    source
}

/// Line and column (1-based) of the only occurrence of `needle` in `source`.
fn place(source: &str, needle: &str) -> (usize, usize) {
    let at = source
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in {source}"));
    assert_eq!(
        source.matches(needle).count(),
        1,
        "`{needle}` is not unique"
    );
    line_col(source, at)
}

/// `source` must be refused with `message` at the only `at`, with one diagnostic.
fn refused_at(name: &str, source: &str, message: &str, at: &str) -> Diagnostic {
    let (line, col) = place(source, at);
    expect_in(
        name,
        source,
        Expected {
            message,
            line,
            col,
            at,
            count: 1,
        },
    )
    .remove(0)
}

#[test]
fn while_and_do_time_loops_are_accepted_with_their_trip_counts() {
    let while_loop = driver::compile_source("while.c", &good_while(&[])).expect("accepted");
    let t = &while_loop.program.pipelines[0].time;
    assert_eq!(t.form, tpace::ir::TimeForm::While);
    assert_eq!(
        (t.var.as_str(), t.start.as_str(), t.end.as_str()),
        ("n", "n", "10")
    );
    assert_eq!(t.trip_count(), "(long)((10) - (n))");
    assert!(t.advance.is_some());
    // The advance anywhere in the body's top level, in any of its forms; an
    // inclusive bound, mirrored.
    for (advance, cond) in [
        ("++n;", "n <= 9"),
        ("n += 1;", "10 > n"),
        ("n = n + 1;", "9 >= n"),
    ] {
        let source = good_while(&[
            ("        n++;\n", ""),
            (
                "    while (n < 10) {",
                &format!("    while ({cond}) {{\n        {advance}"),
            ),
        ]);
        let c = driver::compile_source("while.c", &source)
            .unwrap_or_else(|d| panic!("{advance} {cond}: {d:#?}"));
        let t = &c.program.pipelines[0].time;
        assert_eq!(t.inclusive, cond.contains('='), "{cond}");
    }
    // A `do` loop runs at least once, whichever way it advances.
    for (head, tail) in [
        ("    do {", "    } while (++n < 10);"),
        ("    do {", "        n++;\n    } while (n < 10);"),
    ] {
        let source = good_with("    int n, x, y;", "    int n = 0, x, y;")
            .replacen("    for (n = 0; n < 10; n++) {", head, 1)
            .replacen(
                "        }\n    }\n    return 0;",
                &format!("        }}\n{tail}\n    return 0;"),
                1,
            );
        let c = driver::compile_source("do.c", &source).unwrap_or_else(|d| panic!("{d:#?}"));
        let t = &c.program.pipelines[0].time;
        assert_eq!(t.form, tpace::ir::TimeForm::DoWhile);
        assert_eq!(
            t.trip_count(),
            "((long)((10) - (n)) > 1L ? (long)((10) - (n)) : 1L)"
        );
        assert_eq!(t.advance.is_some(), tail.contains("n++;"));
    }
}

#[test]
fn a_while_condition_that_reads_an_array_is_refused() {
    let source = good_while(&[("    while (n < 10) {", "    while (n < (int)a[0][0]) {")]);
    let d = refused_at(
        "while.c",
        &source,
        "the time loop's condition `n < (int)a[0][0]` reads memory",
        "a[0][0]) {",
    );
    assert!(
        d.help.contains("count the steps (`while (step < steps)`"),
        "{}",
        d.help
    );
    // A convergence test is no counted loop at all.
    let source = good_while(&[("    while (n < 10) {", "    while (a[1][1] > 0.5f) {")]);
    refused_at(
        "while.c",
        &source,
        "the time loop's condition `a[1][1] > 0.5f` reads memory",
        "a[1][1] > 0.5f)",
    );
}

#[test]
fn a_break_in_a_while_time_loop_is_refused() {
    let source = good_while(&[(
        "        n++;\n",
        "        n++;\n        if (n > 5)\n            break;\n",
    )]);
    refused_at(
        "while.c",
        &source,
        "`break` inside the pipelined time loop",
        "break;",
    );
}

#[test]
fn a_counter_advanced_twice_is_refused() {
    let source = good_while(&[(
        "#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
        "        ++n;\n#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
    )]);
    let d = refused_at(
        "while.c",
        &source,
        "the time loop advances its counter `n` twice a step",
        "n++;",
    );
    assert!(d.help.contains("once a step"), "{}", d.help);
    // In a `do` loop whose condition advances it, the body may not.
    let source = good_with("    int n, x, y;", "    int n = 0, x, y;")
        .replacen("    for (n = 0; n < 10; n++) {", "    do {", 1)
        .replacen(
            "        }\n    }\n    return 0;",
            "        }\n        n++;\n    } while (++n < 10);\n    return 0;",
            1,
        );
    refused_at(
        "do.c",
        &source,
        "the time loop advances its counter `n` twice a step",
        "n++;",
    );
}

#[test]
fn a_counter_changed_otherwise_or_never_advanced_is_refused() {
    let source = good_while(&[(
        "        n++;\n",
        "        n++;\n        if (n == 3)\n            n = 7;\n",
    )]);
    refused_at(
        "while.c",
        &source,
        "the time loop's counter `n` is changed here",
        "n = 7;",
    );
    let source = good_while(&[("        n++;\n", "")]);
    refused_at(
        "while.c",
        &source,
        "the time loop never advances its counter `n`",
        "while (n < 10) {",
    );
    // `while (n++ < 10)` compares the old value: said, with what to write.
    let source = good_while(&[
        ("        n++;\n", ""),
        ("while (n < 10)", "while (n++ < 10)"),
    ]);
    let d = refused_at(
        "while.c",
        &source,
        "the time loop's condition does not have the form `while (step < steps) { ...; step++; }`",
        "(n++ < 10)",
    );
    assert!(
        d.help
            .contains("advance the counter at the end of the body instead"),
        "{}",
        d.help
    );
}

#[test]
fn a_trip_count_changed_in_the_body_is_refused() {
    let source = good_while(&[
        ("    int n = 0, x, y;", "    int n = 0, x, y, last = 10;"),
        ("while (n < 10)", "while (n < last)"),
        ("        n++;\n", "        n++;\n        last = last - 1;\n"),
    ]);
    let d = refused_at(
        "while.c",
        &source,
        "the time loop's body changes `last`, which its bound reads",
        "last = last - 1;",
    );
    assert!(
        d.help.contains("compute the number of steps before it"),
        "{}",
        d.help
    );
}

#[test]
fn a_sweep_after_the_advance_may_not_read_the_counter() {
    // Before the advance it may (it sees the step's value); after, it would see the next.
    let before = good_while(&[("a[x][y] = work[x][y];", "a[x][y] = work[x][y] + (float)n;")]);
    driver::compile_source("while.c", &before).expect("a sweep before the advance reads it");
    let after = good_while(&[
        ("        n++;\n", ""),
        (
            "#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
            "        n++;\n#pragma tpace loop dim(2)\n        for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
        ),
        ("a[x][y] = work[x][y];", "a[x][y] = work[x][y] + (float)n;"),
    ]);
    let (line, _) = place(&after, "n++;");
    let d = refused_at(
        "while.c",
        &after,
        "this sweep reads the time loop's counter `n` after the loop advances it",
        "for (x = 1; x < X - 1; x++) {\n#pragma tpace loop dim(1)\n            for (y = 1; y < Y - 1; y++) {\n                a[x][y]",
    );
    assert!(line_col(&after, d.span.start).0 > line);
    assert!(d.help.contains("writing `n + 1`"), "{}", d.help);
}

#[test]
fn an_index_variable_tpace_does_not_follow_is_refused_at_its_use() {
    // Set under an `if`: which value an access reads is not known.
    let source = good_with(
        "work[x][y] = (a[x - 1][y]",
        "int c = x;\n                if (x > 3)\n                    c = x - 1;\n                work[x][y] = (a[c][y]",
    );
    let d = refused_at(
        "index.c",
        &source,
        "the subscript of `a` reads `c`, which the sweep sets in a way tpace does not follow",
        "a[c][y]",
    );
    assert!(d.help.contains("`w = (x == 0) ? c : c - 1;`"), "{}", d.help);
    // Followed: two index variables, one clamped, reach both branches.
    let source = good_with(
        "work[x][y] = (a[x - 1][y]",
        "int c = x;\n                int w = (x == 1) ? c : c - 1;\n                work[x][y] = (a[w][y]",
    );
    let c = driver::compile_source("index.c", &source).expect("accepted");
    let reads: Vec<Vec<i64>> = c.program.pipelines[0].body[0]
        .accesses
        .iter()
        .filter(|a| a.kept.is_some())
        .map(|a| a.offsets.clone())
        .collect();
    assert_eq!(reads, vec![vec![0, 0], vec![-1, 0]]);
    // Written through a clamped index: a write off the point is refused.
    let source = good_with(
        "work[x][y] = (a[x - 1][y]",
        "int w = (x == 1) ? x : x - 1;\n                work[w][y] = (a[x - 1][y]",
    );
    refused_at(
        "index.c",
        &source,
        "`work` is written at offset -1 in dim(2), not at the loop indices",
        "work[w][y]",
    );
}

#[test]
fn a_table_beside_the_grid_is_refused_at_the_clause_and_a_per_step_table_is_accepted() {
    let table = good_with(
        "static float work[X][Y];",
        "static float work[X][Y];\nstatic float coef[Y];",
    )
    .replacen("halo([1:1][1:1])", "targetin(coef) halo([1:1][1:1])", 1);
    let along = table.replacen("/ 4.0f;", "* coef[y];", 1);
    let d = refused_at(
        "table.c",
        &along,
        "`coef` is declared as `coef[Y]`, with 1 dimension, but `size` has 2",
        "coef) halo",
    );
    assert!(d.help.contains("give it the grid's shape"), "{}", d.help);
    // Read at the time counter only: a per-step value, not a grid array.
    let per_step = table.replacen("/ 4.0f;", "* coef[n % Y];", 1);
    let c = driver::compile_source("table.c", &per_step).expect("accepted");
    let p = &c.program.pipelines[0];
    assert!(p.arrays.iter().all(|a| a.name != "coef"));
    assert_eq!(p.body[0].step_values.len(), 1);
    assert_eq!(p.body[0].step_values[0].text, "coef[n % Y]");
}

// ---- Sweeps in called functions and pointers rotated at the end of a step (issue 26) ----

/// A valid program: a sweep function called from the time loop, then a pointer swap.
const SWEEP_FN: &str = r#"#include <stdlib.h>
#define N 40
#define M 24

static void smooth(float *dst, const float *src, int rows, float w)
{
    int i, j;
#pragma tpace loop dim(2)
    for (i = 1; i < rows - 1; i++)
#pragma tpace loop dim(1)
        for (j = 1; j < M - 1; j++)
            dst[i * M + j] = w * (src[(i - 1) * M + j] + src[(i + 1) * M + j]) + src[i * M + j];
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 10, t;
    float w = 0.25f;
    float *a = calloc(N * M, sizeof(float));
    float *b = calloc(N * M, sizeof(float));
#pragma tpace pipeline targetinout(a, b) size([0:N][0:M]) halo([1:1][1:1])
    for (t = 0; t < steps; t++) {
        smooth(b, a, N, w);
        float *tmp = a;
        a = b;
        b = tmp;
    }
    free(a);
    free(b);
    return 0;
}
"#;

/// `SWEEP_FN` with each (from, to) replacement applied once (each must apply).
fn sweep_fn_with(edits: &[(&str, &str)]) -> String {
    let mut s = SWEEP_FN.to_string();
    for (from, to) in edits {
        assert!(s.contains(from), "`{from}` not in SWEEP_FN");
        s = s.replacen(from, to, 1);
    }
    s
}

/// Expect `message` first, at the first occurrence of `at` in `source` (after
/// `after`, if given), `count` diagnostics in all.
fn expect_found(
    path: &str,
    source: &str,
    message: &str,
    after: Option<&str>,
    at: &str,
    count: usize,
) -> Vec<Diagnostic> {
    let from = after.map_or(0, |a| source.find(a).expect("the anchor is in the source"));
    let offset = from + source[from..].find(at).expect("the text is in the source");
    let (line, col) = line_col(source, offset);
    expect_in(
        path,
        source,
        Expected {
            message,
            line,
            col,
            at,
            count,
        },
    )
}

#[test]
fn a_sweep_function_in_a_header_or_another_file_is_refused_at_the_call() {
    // tpace reads the sweeps of functions defined in the file it translates: one
    // in a header it includes, or in another .c file, is refused in words at the call.
    let (function, main) = SWEEP_FN
        .split_once("int main(int argc")
        .expect("SWEEP_FN defines smooth before main");
    let main = format!("int main(int argc{main}");
    let header = function.replace("#include <stdlib.h>\n", "");
    for (file, text, main_c) in [
        (
            "smooth.h",
            header.clone(),
            format!("#include <stdlib.h>\n#include \"smooth.h\"\n\n{main}"),
        ),
        (
            "smooth.c",
            header.replace("static void", "void"),
            format!(
                "#include <stdlib.h>\n#define N 40\n#define M 24\nvoid smooth(float *dst, const float *src, int rows, float w);\n\n{main}"
            ),
        ),
    ] {
        let dir = tempfile::tempdir().expect("scratch folder");
        std::fs::write(dir.path().join(file), &text).expect("sweep file");
        std::fs::write(dir.path().join("main.c"), &main_c).expect("main.c");
        let out = tpace(dir.path(), &["translate", "main.c", "-o", "out.c"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{file}: {stderr}");
        let (line, col) = place(&main_c, "smooth(b, a, N, w);");
        assert!(stderr.contains(&format!("main.c:{line}:{col}")), "{stderr}");
        assert!(
            stderr.contains(
                "`smooth` is called with the listed array `a`, but it is not defined in this file"
            ),
            "{file}: {stderr}"
        );
        assert!(stderr.contains("define `smooth` in this file"), "{stderr}");
        assert!(!dir.path().join("out.c").exists(), "{file}: half an output");
    }
}

#[test]
fn a_sweep_function_with_a_pointer_swap_is_accepted() {
    let compiled = driver::compile_source("ok.c", SWEEP_FN).unwrap_or_else(|d| panic!("{d:#?}"));
    let p = &compiled.program.pipelines[0];
    assert_eq!(
        p.rotation.as_ref().map(|r| r.takes.clone()),
        Some(vec![1, 0])
    );
    assert_eq!(p.body[0].call.as_ref().unwrap().function, "smooth");
}

#[test]
fn a_swap_through_a_temporary_of_another_type_is_refused() {
    let source = sweep_fn_with(&[("float *tmp = a;", "void *tmp = a;")]);
    let d = expect_found(
        "void_swap.c",
        &source,
        "`tmp` is declared `void *tmp`, not of the type of the listed `a` (`float *a`) it is exchanged with",
        None,
        "void *tmp = a;",
        2,
    );
    assert_eq!(d[0].label, "a swap through another type");
    assert!(
        d[0].help.contains("declare it `float *tmp`"),
        "{}",
        d[0].help
    );
}

#[test]
fn a_swap_between_two_sweeps_of_a_step_is_refused() {
    let source = sweep_fn_with(&[(
        "        b = tmp;\n",
        "        b = tmp;\n        smooth(b, a, N, w);\n",
    )]);
    let d = expect_found(
        "mid_swap.c",
        &source,
        "listed arrays' pointers are exchanged between two sweeps of a step",
        None,
        "float *tmp = a;",
        3,
    );
    assert!(d[0].help.contains("after its last sweep"), "{}", d[0].help);
}

#[test]
fn a_pointer_assigned_without_a_temporary_is_refused() {
    let source = sweep_fn_with(&[(
        "        float *tmp = a;\n        a = b;\n        b = tmp;\n",
        "        a = b;\n",
    )]);
    expect_found(
        "alias.c",
        &source,
        "after the step, `a` and `b` both name the storage of `b`",
        Some("smooth(b, a, N, w);"),
        "a = b;",
        1,
    );
}

#[test]
fn a_targetin_array_rotated_with_a_written_one_is_refused() {
    let source = sweep_fn_with(&[("targetinout(a, b)", "targetinout(b) targetin(a)")]);
    let d = expect_found(
        "in_rotated.c",
        &source,
        "`a` is listed in targetin, but its pointer is exchanged with `b`'s, which the sweeps write",
        None,
        "a)",
        2,
    );
    assert!(d[0].help.contains("targetinout"), "{}", d[0].help);
}

#[test]
fn a_recursive_sweep_function_is_refused() {
    let source = sweep_fn_with(&[(
        "            dst[i * M + j] = w * (src[(i - 1) * M + j] + src[(i + 1) * M + j]) + src[i * M + j];\n}",
        "            dst[i * M + j] = w * (src[(i - 1) * M + j] + src[(i + 1) * M + j]) + src[i * M + j];\n    if (rows > 8)\n        smooth(dst, src, rows / 2, w);\n}",
    )]);
    let d = expect_found(
        "recursion.c",
        &source,
        "`smooth`, whose loop nests are sweeps, calls itself",
        None,
        "smooth(dst, src, rows / 2, w)",
        1,
    );
    assert_eq!(d[0].label, "recursion");
}

#[test]
fn a_sweep_function_two_calls_deep_is_refused_at_the_inner_call() {
    let source = sweep_fn_with(&[
        (
            "int main(int argc",
            "static void advance(float *x, float *y, float w)\n{\n    smooth(y, x, N, w);\n}\n\nint main(int argc",
        ),
        (
            "        smooth(b, a, N, w);\n",
            "        advance(a, b, w);\n",
        ),
    ]);
    let d = expect_found(
        "two_deep.c",
        &source,
        "`smooth`, whose loop nests are sweeps, is called from `advance`, not from the time loop",
        None,
        "smooth(y, x, N, w)",
        1,
    );
    assert!(
        d[0].help
            .contains("call `smooth` as a statement of the pipelined time loop"),
        "{}",
        d[0].help
    );
}

#[test]
fn a_call_through_a_function_pointer_is_refused() {
    let source = sweep_fn_with(&[
        (
            "    float w = 0.25f;\n",
            "    float w = 0.25f;\n    void (*op)(float *, const float *, int, float) = smooth;\n",
        ),
        (
            "        smooth(b, a, N, w);\n",
            "        smooth(b, a, N, w);\n        op(a, b, N, w);\n",
        ),
    ]);
    let d = expect_found(
        "fn_pointer.c",
        &source,
        "a function is called through a pointer with the listed array `a`",
        None,
        "op(a, b, N, w)",
        1,
    );
    assert!(d[0].help.contains("by its name"), "{}", d[0].help);
}

#[test]
fn a_sweep_function_under_a_condition_is_refused() {
    let source = sweep_fn_with(&[(
        "        smooth(b, a, N, w);\n",
        "        if (t % 2 == 0)\n            smooth(b, a, N, w);\n",
    )]);
    expect_found(
        "conditional.c",
        &source,
        "`smooth`, whose loop nests are sweeps, is called inside another statement",
        None,
        "smooth(b, a, N, w);\n        float",
        1,
    );
}

#[test]
fn a_sweep_function_that_takes_an_array_of_another_shape_is_refused() {
    // The same function called from a second pipeline whose arrays are rows:
    // each call is read on its own, and this one does not fit.
    let source = sweep_fn_with(&[(
        "    free(a);\n",
        "    {\n        float (*r)[M] = calloc(N, sizeof *r), (*s)[M] = calloc(N, sizeof *s);\n\
         #pragma tpace pipeline targetinout(r, s) size([0:N][0:M]) halo([1:1][1:1])\n\
         \x20       for (t = 0; t < steps; t++)\n            smooth(&s[0][0], &r[0][0], N, w);\n        free(r);\n        free(s);\n    }\n    free(a);\n",
    )]);
    let d = expect_found(
        "shape.c",
        &source,
        "`&s[0][0]` is passed to `smooth` as `dst`, which its sweeps use, but it is not a listed array",
        None,
        "&s[0][0]",
        2,
    );
    assert!(
        d[0].help.contains("pass the listed array itself"),
        "{}",
        d[0].help
    );
    // Passed whole, a pointer to rows does not fit a flat parameter.
    let source = source.replace(
        "smooth(&s[0][0], &r[0][0], N, w)",
        "smooth((float *)s, (const float *)r, N, w)",
    );
    let d = expect_found(
        "shape.c",
        &source,
        "`smooth` takes `s` as `float *dst`, but the pipeline's `s` is a pointer to rows (`T (*a)[Y]`)",
        None,
        "(float *)s",
        2,
    );
    assert_eq!(d[0].label, "parameter does not match the listed array");
}

#[test]
fn a_sweep_function_that_changes_its_parameter_is_refused() {
    let source = sweep_fn_with(&[(
        "    int i, j;\n#pragma tpace loop dim(2)",
        "    int i, j;\n    rows--;\n#pragma tpace loop dim(2)",
    )]);
    let d = expect_found(
        "changes.c",
        &source,
        "`smooth` changes its parameter `rows`",
        None,
        "rows--",
        1,
    );
    assert!(d[0].help.contains("copy it into a local"), "{}", d[0].help);
}

#[test]
fn a_sweep_function_passed_the_step_counter_is_refused() {
    let source = sweep_fn_with(&[("smooth(b, a, N, w);", "smooth(b, a, N, w * (float)t);")]);
    let d = expect_found(
        "counter.c",
        &source,
        "`smooth` is passed the time loop's counter `t` for `w`",
        Some("smooth(b, a, N, w * "),
        "t);",
        1,
    );
    assert_eq!(d[0].label, "changes at every step");
}

#[test]
fn an_unlisted_array_passed_to_a_sweep_function_is_refused() {
    let source = sweep_fn_with(&[
        (
            "    float *b = calloc(N * M, sizeof(float));\n",
            "    float *b = calloc(N * M, sizeof(float));\n    float *c = calloc(N * M, sizeof(float));\n",
        ),
        ("smooth(b, a, N, w);", "smooth(b, c, N, w);"),
    ]);
    let d = expect_found(
        "unlisted.c",
        &source,
        "`c` is passed to `smooth` as `src`, which its sweeps use, but it is not a listed array",
        Some("smooth(b, "),
        "c, N",
        1,
    );
    assert!(d[0].help.contains("list `c`"), "{}", d[0].help);
}

#[test]
fn other_statements_in_a_sweep_function_are_refused() {
    let source = sweep_fn_with(&[
        (
            "#include <stdlib.h>\n",
            "#include <stdio.h>\n#include <stdlib.h>\n",
        ),
        (
            "    int i, j;\n#pragma tpace loop dim(2)",
            "    int i, j;\n    printf(\"smoothing\\n\");\n#pragma tpace loop dim(2)",
        ),
    ]);
    let d = expect_found(
        "statement.c",
        &source,
        "`smooth`, whose loop nests are sweeps, holds another statement",
        None,
        "printf(",
        1,
    );
    assert!(
        d[0].help.contains("move this statement into the time loop"),
        "{}",
        d[0].help
    );
}

#[test]
fn a_local_of_a_sweep_function_read_by_its_sweep_is_refused() {
    let source = sweep_fn_with(&[
        (
            "    int i, j;\n#pragma tpace loop dim(2)",
            "    int i, j;\n    float half = w * 0.5f;\n#pragma tpace loop dim(2)",
        ),
        ("= w * (src[(i - 1)", "= half * (src[(i - 1)"),
    ]);
    let d = expect_found(
        "local.c",
        &source,
        "`half` is a local of `smooth` that its sweep reads, declared outside the loop nest",
        None,
        "half * (src",
        1,
    );
    assert!(d[0].help.contains("as a parameter"), "{}", d[0].help);
}

#[test]
fn a_reduction_in_a_sweep_function_is_refused() {
    let source = sweep_fn_with(&[
        (
            "static void smooth(float *dst, const float *src, int rows, float w)\n{\n    int i, j;\n",
            "static void smooth(float *dst, const float *src, int rows, float w)\n{\n    int i, j;\n    float total = 0.0f;\n",
        ),
        (
            "+ src[i * M + j];\n}",
            "+ src[i * M + j];\n            total += src[i * M + j];\n        }\n    (void)total;\n}",
        ),
        (
            "        for (j = 1; j < M - 1; j++)\n            dst",
            "        for (j = 1; j < M - 1; j++) {\n            dst",
        ),
    ]);
    let diags = driver::compile_source("reduction.c", &source).expect_err("refused");
    // The statement after the nest is refused too; the reduction is named.
    assert!(
        diags
            .iter()
            .any(|d| d.message.contains("holds another statement")),
        "{diags:#?}"
    );
    let source = source.replace("    (void)total;\n", "");
    expect_found(
        "reduction.c",
        &source,
        "a reduction into `total` in `smooth`, a function the time loop calls",
        None,
        "total += ",
        1,
    );
}

#[test]
fn a_loop_directive_in_a_function_no_time_loop_calls_is_refused() {
    let source = sweep_fn_with(&[(
        "        smooth(b, a, N, w);\n",
        "#pragma tpace loop dim(2)\n        for (int i = 1; i < N - 1; i++)\n#pragma tpace loop dim(1)\n            for (int j = 1; j < M - 1; j++)\n                b[i * M + j] = a[i * M + j];\n",
    )]);
    let d = expect_found(
        "uncalled.c",
        &source,
        "`loop` directive outside the pipelined time loop",
        None,
        "#pragma tpace loop dim(2)",
        1,
    );
    assert!(
        d[0].help
            .contains("a function of this file that the time loop calls"),
        "{}",
        d[0].help
    );
}

#[test]
fn a_stencil_calc_in_a_called_function_is_refused_in_words() {
    let source = r#"#define NX 32
#define NY 16
static float A[NX][NY], B[NX][NY];
static void step(void)
{
    int i, j;
#pragma stencil calc
    for (i = 1; i < NX - 1; i++)
        for (j = 1; j < NY - 1; j++)
            B[i][j] = A[i - 1][j] + A[i + 1][j];
}
int main(void)
{
    int t, i, j;
#pragma stencil begin
#pragma stencil step(t:10)
#pragma stencil data source(float A[NX][NY]) destination(float B[NX][NY])
#pragma stencil dimension(i, j)
    for (t = 0; t < 10; t++) {
        step();
#pragma stencil copy
        for (i = 1; i < NX - 1; i++)
            for (j = 1; j < NY - 1; j++)
                A[i][j] = B[i][j];
    }
#pragma stencil end
    return 0;
}
"#;
    let d = expect_found(
        "stencil_fn.c",
        source,
        "`calc` outside a stencil region",
        None,
        "#pragma stencil calc",
        1,
    );
    assert!(
        d[0].help
            .contains("reads sweeps in functions the time loop calls"),
        "{}",
        d[0].help
    );
}

#[test]
fn a_sweep_function_variable_named_like_the_time_counter_is_refused() {
    let source = sweep_fn_with(&[
        (
            "static void smooth(float *dst, const float *src, int rows, float w)",
            "static void smooth(float *dst, const float *src, int rows, float t)",
        ),
        (
            "            dst[i * M + j] = w * (src",
            "            dst[i * M + j] = t * (src",
        ),
    ]);
    let d = expect_found(
        "counter_name.c",
        &source,
        "`t` in `smooth` is its own variable, but the time loop counts with `t`",
        None,
        "t * (src",
        1,
    );
    assert!(d[0].help.contains("rename"), "{}", d[0].help);
}

#[test]
fn a_swap_in_another_form_is_refused_with_the_form_tpace_follows() {
    let source = sweep_fn_with(&[(
        "        a = b;\n        b = tmp;\n",
        "        a = b, b = tmp;\n",
    )]);
    let diags = driver::compile_source("comma.c", &source).expect_err("refused");
    let swap = diags
        .iter()
        .find(|d| d.label == "a pointer assigned between sweeps")
        .unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(
        swap.help
            .contains("by plain assignments through a temporary of their type"),
        "{}",
        swap.help
    );
}
