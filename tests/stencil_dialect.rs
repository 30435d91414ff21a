//! The `#pragma stencil` dialect (the stencil-directives paper, Table 2 and
//! Fig. 5): what its regions lower to, and each of its errors, with the exact
//! line:col and text it points at. The fixtures in tests/fixtures/stencil run
//! bit for bit through every target with the other programs (`programs()`).

mod common;

use std::path::Path;
use tpace::diag::{self, line_col};
use tpace::driver;
use tpace::ir::{Intent, Program};

/// The paper's Fig. 5 in two dimensions: every error case below is this
/// program with one fault.
const GOOD: &str = r#"#define NY 40
#define NX 30
#define C_0 0.5f
#define C_1 0.125f

float A[NY][NX], B[NY][NX];

int main(int argc, char **argv)
{
    int t, i, j;
    int total_step = argc > 1 ? 7 : 5;
#pragma stencil begin
#pragma stencil step(t:100)
#pragma stencil data source(float A[NY][NX]) destination(float B[NY][NX])
#pragma stencil dimension(i, j)
    for (t = 0; t < total_step; t++) {
#pragma stencil calc
        for (i = 1; i < NY - 1; i++)
            for (j = 1; j < NX - 1; j++)
                B[i][j] = C_0 * A[i][j] + C_1 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
#pragma stencil copy
        for (i = 1; i < NY - 1; i++)
            for (j = 1; j < NX - 1; j++)
                A[i][j] = B[i][j];
    }
#pragma stencil end
    return 0;
}
"#;

fn good_with(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "`{from}` is not in GOOD");
    GOOD.replacen(from, to, 1)
}

fn program(source: &str) -> Program {
    driver::compile_source("good.c", source)
        .unwrap_or_else(|d| panic!("refused:\n{}", diag::render("good.c", source, &d)))
        .program
}

/// `source` must be refused with `message` first, pointing at `line:col`
/// where the text `at` starts; the rendered form names the place and helps.
fn refused(source: &str, message: &str, line: usize, col: usize, at: &str) {
    let diags = match driver::compile_source("bad.c", source) {
        Ok(_) => panic!("accepted; expected `{message}`"),
        Err(d) => d,
    };
    let first = &diags[0];
    assert_eq!(first.message, message, "all: {diags:#?}");
    assert_eq!(line_col(source, first.span.start), (line, col), "{message}");
    assert!(
        source[first.span.start..].starts_with(at),
        "{message}: expected `{at}` there, found `{}`",
        &source[first.span.clone()]
    );
    assert!(!first.help.is_empty(), "{message}: no help");
    let text = diag::render("bad.c", source, &diags);
    assert!(text.contains(&format!("bad.c:{line}:{col}")), "{text}");
    let source_line = source.lines().nth(line - 1).expect("line");
    assert!(text.contains(source_line.trim()), "{text}");
}

#[test]
fn a_region_is_the_pipeline_the_tpace_dialect_would_write() {
    let stencil = program(GOOD);
    let tpace = program(
        &GOOD
            .replace("#pragma stencil begin\n", "")
            .replace("#pragma stencil step(t:100)\n", "")
            .replace(
                "#pragma stencil data source(float A[NY][NX]) destination(float B[NY][NX])\n",
                "",
            )
            .replace(
                "#pragma stencil dimension(i, j)\n",
                "#pragma tpace pipeline targetinout(A, B) size([0:NY][0:NX]) halo([1:1][1:1])\n",
            )
            .replace("#pragma stencil end\n", "")
            .replace(
                "#pragma stencil calc\n        for (i = 1; i < NY - 1; i++)\n",
                "#pragma tpace loop dim(2)\n        for (i = 1; i < NY - 1; i++)\n#pragma tpace loop dim(1)\n",
            )
            .replace(
                "#pragma stencil copy\n        for (i = 1; i < NY - 1; i++)\n",
                "#pragma tpace loop dim(2)\n        for (i = 1; i < NY - 1; i++)\n#pragma tpace loop dim(1)\n",
            ),
    );
    let (s, t) = (&stencil.pipelines[0], &tpace.pipelines[0]);
    let names = |p: &tpace::ir::Pipeline| -> Vec<(String, Intent)> {
        let mut v: Vec<_> = p
            .arrays
            .iter()
            .map(|a| (a.name.clone(), a.intent))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(names(s), names(t));
    assert_eq!(s.halo, t.halo, "the halo is the reads' reach");
    assert_eq!(s.grid.dims.len(), 2);
    assert_eq!(
        (s.grid.dims[0].n.as_str(), s.grid.dims[1].n.as_str()),
        ("NY", "NX")
    );
    assert_eq!(s.body.len(), t.body.len());
    for (a, b) in s.body.iter().zip(&t.body) {
        assert_eq!(a.accesses.len(), b.accesses.len());
        let dims = |w: &tpace::ir::Sweep| {
            w.loops
                .iter()
                .map(|l| (l.pos, l.var.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(dims(a), dims(b));
    }
    assert_eq!(s.time.var, "t");
    assert_eq!(s.time.steps_hint.as_deref(), Some("100"));
    // Every stencil line but `data` is commented out with the pipeline's line.
    assert_eq!(s.directives.len(), 4);
}

#[test]
fn the_halo_follows_the_reads_unevenly_and_per_axis() {
    let p = program(&good_with(
        "A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]",
        "A[i - 1][j] + A[i + 2][j] + A[i][j] + A[i][j + 1]",
    ));
    let h: Vec<(i64, i64)> = p.pipelines[0]
        .halo
        .iter()
        .map(|h| (h.minus, h.plus))
        .collect();
    assert_eq!(h, [(1, 2), (0, 1)]);
}

#[test]
fn sources_the_region_never_writes_are_read_only() {
    let source = good_with(
        "float A[NY][NX], B[NY][NX];",
        "float A[NY][NX], B[NY][NX], K[NY][NX];",
    )
    .replace(
        "source(float A[NY][NX])",
        "source(float A[NY][NX], float K[NY][NX])",
    )
    .replace("C_0 * A[i][j]", "C_0 * K[i][j] * A[i][j]");
    let p = program(&source);
    let intent = |n: &str| {
        p.pipelines[0]
            .arrays
            .iter()
            .find(|a| a.name == n)
            .expect(n)
            .intent
    };
    assert_eq!(intent("K"), Intent::In);
    assert_eq!(intent("A"), Intent::InOut);
    assert_eq!(intent("B"), Intent::InOut);
}

#[test]
fn the_translation_comments_out_every_stencil_line() {
    let compiled = driver::compile_source("good.c", GOOD).expect("compiles");
    for target in [tpace::back::Target::Openacc, tpace::back::Target::Cuda] {
        let out = driver::translate(&compiled, target).expect("translates");
        let host = out.host.as_deref().unwrap_or(&out.main);
        for line in host.lines() {
            assert!(
                !line.trim_start().starts_with("#pragma stencil"),
                "{target:?}: `{line}` is left for the C compiler to warn about"
            );
        }
        assert!(host.contains("/* pragma stencil end */"), "{target:?}");
    }
}

#[test]
fn the_stencil_fixtures_are_valid_c() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stencil");
    let scratch = tempfile::tempdir().expect("scratch");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        let out = std::process::Command::new("gcc")
            .args([
                "-std=gnu11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-Wno-unknown-pragmas",
            ])
            .arg(&path)
            .arg("-o")
            .arg(scratch.path().join("prog"))
            .output()
            .expect("gcc runs");
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        count += 1;
    }
    assert!(count >= 6, "{count} fixtures");
}

#[test]
fn plan_takes_the_step_maximum_when_the_bound_is_a_run_time_value() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = dir.path().join("fig5.c");
    std::fs::write(&path, GOOD).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tpace"))
        .arg("plan")
        .arg(&path)
        .output()
        .expect("tpace runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("; 100 steps"), "{text}");
    let told = std::process::Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(["plan", "--steps", "33"])
        .arg(&path)
        .output()
        .expect("tpace runs");
    assert!(String::from_utf8_lossy(&told.stdout).contains("; 33 steps"));
}

// ---- The dialect's own errors ----

#[test]
fn begin_without_end() {
    refused(
        &good_with("#pragma stencil end\n", ""),
        "`begin` without `end`",
        12,
        1,
        "#pragma stencil begin",
    );
}

#[test]
fn end_without_begin() {
    refused(
        &good_with(
            "#pragma stencil end\n",
            "#pragma stencil end\n#pragma stencil end\n",
        ),
        "`end` without `begin`",
        27,
        1,
        "#pragma stencil end",
    );
}

#[test]
fn begin_inside_an_open_region() {
    refused(
        &good_with(
            "#pragma stencil step(t:100)\n",
            "#pragma stencil step(t:100)\n#pragma stencil begin\n",
        ),
        "`begin` inside a stencil region that is still open",
        14,
        1,
        "#pragma stencil begin",
    );
}

#[test]
fn a_directive_outside_every_region() {
    refused(
        &good_with("    return 0;", "#pragma stencil calc\n    return 0;"),
        "`calc` outside a stencil region",
        27,
        1,
        "#pragma stencil calc",
    );
}

#[test]
fn a_region_without_step_data_or_dimension() {
    refused(
        &good_with("#pragma stencil step(t:100)\n", ""),
        "the stencil region has no `step` directive",
        12,
        1,
        "#pragma stencil begin",
    );
    refused(
        &good_with("#pragma stencil dimension(i, j)\n", ""),
        "the stencil region has no `dimension` directive",
        12,
        1,
        "#pragma stencil begin",
    );
}

#[test]
fn step_given_twice() {
    refused(
        &good_with(
            "#pragma stencil dimension(i, j)\n",
            "#pragma stencil dimension(i, j)\n#pragma stencil step(t:100)\n",
        ),
        "`step` is given twice in one stencil region",
        16,
        1,
        "#pragma stencil step(t:100)",
    );
}

#[test]
fn step_not_above_the_time_loop() {
    refused(
        &good_with(
            "#pragma stencil dimension(i, j)\n",
            "#pragma stencil dimension(i, j)\n    total_step += 1;\n",
        ),
        "`step` must stand right above the time loop",
        13,
        1,
        "#pragma stencil step",
    );
}

#[test]
fn the_step_variable_is_not_the_time_loops() {
    refused(
        &good_with("step(t:100)", "step(n:100)"),
        "the directive names `n` as the time variable, but the loop below counts `t`",
        13,
        22,
        "n",
    );
}

#[test]
fn end_not_right_after_the_time_loop() {
    refused(
        &good_with(
            "    }\n#pragma stencil end\n",
            "    }\n    total_step = 0;\n#pragma stencil end\n",
        ),
        "`end` must come right after the time loop",
        27,
        1,
        "#pragma stencil end",
    );
}

#[test]
fn dimension_not_matching_the_arrays_rank() {
    refused(
        &good_with("dimension(i, j)", "dimension(i, j, k)"),
        "`A` has 2 extents, but `dimension` names 3 loop variables",
        14,
        29,
        "float A[NY][NX]",
    );
}

#[test]
fn data_arrays_of_different_extents() {
    refused(
        &good_with(
            "destination(float B[NY][NX])",
            "destination(float B[NX][NY])",
        ),
        "`B` is [NX][NY] but `A` is [NY][NX]: the data arrays of a region are one grid",
        14,
        58,
        "float B[NX][NY]",
    );
}

#[test]
fn calc_not_above_a_loop_nest() {
    refused(
        &good_with(
            "#pragma stencil calc\n",
            "#pragma stencil calc\n        total_step += 0;\n",
        ),
        "`calc` must stand directly above a loop nest of the time loop",
        17,
        1,
        "#pragma stencil calc",
    );
}

#[test]
fn calc_on_an_inner_loop() {
    refused(
        &good_with(
            "#pragma stencil calc\n        for (i = 1; i < NY - 1; i++)\n",
            "        for (i = 1; i < NY - 1; i++)\n#pragma stencil calc\n",
        ),
        "`calc` must stand directly above a loop nest of the time loop",
        18,
        1,
        "#pragma stencil calc",
    );
}

#[test]
fn a_nest_with_neither_calc_nor_copy() {
    refused(
        &good_with("#pragma stencil copy\n", ""),
        "a loop nest in the stencil region with neither `calc` nor `copy`",
        21,
        9,
        "for (i = 1; i < NY - 1; i++)",
    );
}

#[test]
fn a_loop_variable_not_in_dimension() {
    refused(
        &good_with("dimension(i, j)", "dimension(i, k)"),
        "the loop over `j` is in a calc nest, but `j` is not in `dimension(i, k)`",
        19,
        13,
        "for (j = 1; j < NX - 1; j++)",
    );
}

#[test]
fn an_unknown_stencil_directive() {
    refused(
        &good_with("#pragma stencil copy", "#pragma stencil swap"),
        "unknown stencil directive `swap`",
        21,
        17,
        "swap",
    );
}

#[test]
fn an_unknown_data_clause() {
    refused(
        &good_with("destination(float B", "target(float B"),
        "unknown clause `target` of `data`",
        14,
        46,
        "target",
    );
}

#[test]
fn an_element_type_other_than_the_declarations() {
    refused(
        &good_with("source(float A[NY][NX])", "source(double A[NY][NX])"),
        "the directive declares `A` of `double`, but the program declares it of `float`",
        14,
        36,
        "A",
    );
}

#[test]
fn a_tpace_directive_inside_a_region() {
    refused(
        &good_with(
            "#pragma stencil calc\n",
            "#pragma stencil calc\n#pragma tpace loop dim(2)\n",
        ),
        "a `#pragma tpace` directive inside a `#pragma stencil` region",
        18,
        1,
        "#pragma tpace loop dim(2)",
    );
}

// ---- What the tpace dialect refuses is refused here too ----

#[test]
fn an_in_place_update_is_refused() {
    // Gauss-Seidel: the calc nest writes the array it reads at offsets.
    refused(
        &good_with(
            "B[i][j] = C_0 * A[i][j] + C_1 * (A[i - 1][j]",
            "A[i][j] = C_0 * A[i][j] + C_1 * (A[i - 1][j]",
        ),
        "`A` is read at a neighbour and written in the same sweep",
        20,
        50,
        "A[i - 1][j]",
    );
}

#[test]
fn a_read_farther_than_tpace_handles() {
    refused(
        &good_with("A[i + 1][j]", "A[i + 65][j]"),
        "`A` is read at offset 65 in dim(2); tpace handles a reach of at most 64 a step",
        20,
        64,
        "A[i + 65][j]",
    );
}

#[test]
fn an_array_the_region_does_not_list() {
    let source = good_with(
        "float A[NY][NX], B[NY][NX];",
        "float A[NY][NX], B[NY][NX], K[NY][NX];",
    )
    .replace("C_0 * A[i][j]", "C_0 * K[i][j]");
    let diags = driver::compile_source("bad.c", &source).expect_err("refused");
    assert!(
        diags.iter().any(|d| d.message.contains("`K`")),
        "{diags:#?}"
    );
}
