//! Sweeps in called functions and pointers rotated at the end of a step
//! (issue 26, items 1 and 2), on C as users write it: Parboil's
//! `cpu_stencil(...)` followed by a pointer swap, a three-level wave equation
//! whose levels rotate, a relaxation called twice a step with the arrays
//! traded in the call, a `while` loop advancing its counter after the levels
//! rotate (tests/fixtures/sweeps/); Rodinia's hotspot3D (index variables in
//! computeTempCPU, a `do` loop, a swap) and Parboil's stencil (Index3D in
//! cpu_stencil) from tests/fixtures/ordinary/.
//!
//! The fixture sweep of the other tests (tests/examples.rs, cuda.rs,
//! opencl.rs, scale.rs) runs these programs at 1, 7 and 13 steps: all odd and
//! all 1 modulo 3. A rotation's result depends on the step count modulo its
//! period (where each pointer ends), so here they run at 2, 6 and 9 steps too,
//! over the same (schedule, k, b, streams) edges, on OpenACC, the CUDA
//! emulation and OpenCL. A runtime that ignores the rotation, or a plan whose
//! windows move too little for it, must be caught.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};
use tpace::driver::{self};

/// Step counts beside the common ones: even, and every residue modulo 3.
const MORE_STEPS: [u64; 3] = [2, 6, 9];

/// tests/fixtures/sweeps, and the ordinary fixtures that call sweep functions
/// and swap pointers (Rodinia's hotspot3D, Parboil's stencil).
fn sweep_fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweeps");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/sweeps")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    files.extend(["hotspot3d_do.c", "stencil3d_parboil.c"].map(ordinary));
    files
}

fn ordinary(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ordinary")
        .join(name)
}

fn check_every_fixture(
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
    subset: Subset<'_>,
) {
    let tc = Toolchain::detect();
    let mut failures = Vec::new();
    for path in sweep_fixtures() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_program_steps(&tc, &path, target, flavour, env, subset, &MORE_STEPS)
        }));
        match outcome {
            Ok(runs) => eprintln!("{}: {runs} translated runs identical", path.display()),
            Err(e) => failures.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "panic".into()),
            ),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn sweep_fixtures_match_at_even_step_counts_on_openacc() {
    check_every_fixture(Target::Openacc, Flavour::Openacc, &[], EVERY_RUN);
}

#[test]
fn sweep_fixtures_match_at_even_step_counts_on_the_cuda_emulation() {
    let seed = vec![("TPACE_EMU_SEED".to_string(), "11".to_string())];
    check_every_fixture(Target::Cuda, Flavour::CudaEmulation, &seed, EVERY_RUN);
}

#[test]
fn sweep_fixtures_match_at_even_step_counts_on_pocl() {
    if std::process::Command::new("clinfo")
        .arg("-l")
        .output()
        .map_or(true, |o| !o.status.success())
        && std::env::var_os("CI").is_none()
    {
        eprintln!("no OpenCL platform here: skipped");
        return;
    }
    let one_thread = vec![
        ("POCL_MAX_PTHREAD_COUNT".to_string(), "1".to_string()),
        ("POCL_CPU_MAX_CU_COUNT".to_string(), "1".to_string()),
    ];
    // Half the settings at each step count (every edge at some count).
    let subset = Subset {
        keep: &|steps, i| i % 2 == (steps % 2) as usize,
        defines: &|_| Vec::new(),
    };
    check_every_fixture(Target::Opencl, Flavour::Opencl, &one_thread, subset);
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sweeps")
        .join(name)
}

#[test]
fn the_ir_says_which_sweeps_come_from_calls_and_how_pointers_rotate() {
    let parboil = compile(&fixture("parboil_stencil.c"));
    let p = &parboil.program.pipelines[0];
    let names: Vec<&str> = p.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["h_A0", "h_Anext"]);
    assert_eq!(
        p.body[0].call.as_ref().map(|c| c.function.as_str()),
        Some("cpu_stencil")
    );
    let r = p.rotation.as_ref().expect("the swap is a rotation");
    assert_eq!(r.takes, [1, 0]);
    assert_eq!((r.period(), r.after(3, 0), r.after(4, 0)), (2, 1, 0));
    // The scalars read in the function are its parameters, bound to the call's values.
    let values: Vec<(&str, &str)> = p.body[0]
        .scalars
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_str()))
        .collect();
    assert_eq!(values, [("c1", "c1"), ("c0", "c0")]);
    // Its loop bounds are in the caller's words.
    assert_eq!(p.body[0].loops[0].hi, "(nz) - 1");
    assert_eq!(parboil.program.sweep_functions.len(), 1);
    assert_eq!(parboil.program.sweep_functions[0].directives.len(), 3);

    let wave = compile(&fixture("wave2d_rows.c"));
    let p = &wave.program.pipelines[0];
    let r = p.rotation.as_ref().expect("the levels rotate");
    assert_eq!(r.takes, [1, 2, 0]);
    assert_eq!(r.period(), 3);
    assert_eq!(p.body[0].loops[0].hi, "(n) - 1");
    assert_eq!(p.body[0].scalars[0].value, "courant * courant");

    let twice = compile(&fixture("relax_twice.c"));
    let p = &twice.program.pipelines[0];
    assert!(p.rotation.is_none());
    assert_eq!(p.body.len(), 2);
    // The same function, its arrays in the other order: sweep 1 writes b, sweep 2 a.
    let written = |s: usize| {
        p.body[s]
            .accesses
            .iter()
            .find(|a| a.kind == tpace::ir::AccessKind::Write)
            .map(|a| p.arrays[a.array].name.clone())
    };
    assert_eq!(
        (written(0), written(1)),
        (Some("b".into()), Some("a".into()))
    );
    let w: Vec<&str> = p.body.iter().map(|s| s.scalars[0].value.as_str()).collect();
    assert_eq!(w, ["omega", "omega * 0.5 + 0.25"]);
}

#[test]
fn the_translation_comments_the_functions_directives_and_keeps_them() {
    let compiled = compile(&fixture("parboil_stencil.c"));
    let out = driver::translate(&compiled, Target::Openacc).expect("translates");
    assert!(!out.main.contains("#pragma tpace"), "a tpace line left");
    assert!(out.main.contains(
        "/* pragma tpace loop dim(3) (a sweep of the pipelined time loop that calls `cpu_stencil`) */"
    ));
    assert!(out.main.contains("    (void)cpu_stencil;"));
    assert!(out.main.contains("static const int rotate[2] = {1, 0};"));
}

/// `source` (a program of this test) translated for OpenACC with `from` replaced
/// by `to` in the translation, against its sequential run: the first difference.
fn broken(source: &str, from: &str, to: &str, steps: u64, p: &Params) -> Option<String> {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let compiled = driver::compile_source("broken.c", source).unwrap_or_else(|d| panic!("{d:#?}"));
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    let out = driver::translate(&compiled, Target::Openacc).expect("translates");
    let out = replace_once(&out, from, to, "the test program");
    let built = build_ok(&tc, &out, dir.path(), "broken", Flavour::Openacc);
    let got = run_ok(&built.binary, steps, p, &dir.path().join("g.dump"));
    first_difference(&seq.dump, &got.dump)
}

#[test]
fn a_runtime_that_ignores_the_rotation_is_caught() {
    let source = std::fs::read_to_string(fixture("parboil_stencil.c")).expect("fixture");
    let from = "const int at = tpace_rotated(r->plan.s.rotate, a, ch->t + i);";
    // The kernels always read the first buffer: wrong from the second step on.
    let diff = broken(
        &source,
        from,
        "const int at = a;",
        4,
        &params("mm", 2, 7, 2),
    );
    assert!(
        diff.is_some(),
        "kernels that ignore the swap went unnoticed"
    );
    // The dump names the storage each pointer names after the loop: at an odd
    // step count the two are the other way round.
    let dump = "tp_in->tp_host[tpace_rotated(shape.rotate, 0, tp_in->tp_steps)]";
    let diff = broken(
        &source,
        dump,
        "tp_in->tp_host[0]",
        3,
        &params("mmtb", 2, 9, 2),
    );
    assert!(
        diff.is_some(),
        "a dump of the storage, not of the pointer, went unnoticed"
    );
    assert!(
        broken(
            &source,
            dump,
            "tp_in->tp_host[0]",
            4,
            &params("mmtb", 2, 9, 2)
        )
        .is_none(),
        "after an even step count the pointer names its own storage again"
    );
}

/// Three levels rotated, the newest computed from the middle one two planes
/// below: only the level the step after next writes constrains the windows.
const FAR_READ: &str = r#"#include <stdio.h>
#include <stdlib.h>
#define X 40
#define Y 9
int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5, n, x, y;
    float (*a)[Y] = malloc(sizeof(float[Y]) * X), (*b)[Y] = malloc(sizeof(float[Y]) * X),
          (*c)[Y] = malloc(sizeof(float[Y]) * X);
    for (x = 0; x < X; x++)
        for (y = 0; y < Y; y++) {
            a[x][y] = (float)((x * 5 + y) % 7);
            b[x][y] = (float)((x + 3 * y) % 5);
            c[x][y] = (float)(x % 3);
        }
#pragma tpace pipeline targetinout(a, b, c) size([0:X][0:Y]) halo([2:2][1:1])
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 2; x < X - 2; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                c[x][y] = 0.5f * b[x - 2][y] + 0.25f * (b[x - 2][y - 1] + b[x - 2][y + 1]);
        float (*t)[Y] = a;
        a = b;
        b = c;
        c = t;
    }
    printf("%f %f %f\n", a[20][4], b[20][4], c[20][4]);
    return 0;
}
"#;

#[test]
fn a_rotation_constrains_the_windows_steps_ahead() {
    let compiled = driver::compile_source("far.c", FAR_READ).unwrap_or_else(|d| panic!("{d:#?}"));
    let plan = &compiled.stages[0].plan;
    // Only the write two steps later (the storage read as b is written as c) needs a skew.
    assert_eq!(plan.skew.per_step, 1);
    let p = params("mmtb", 6, 5, 2);
    assert_eq!(
        broken(FAR_READ, "shape.skew = 1;", "shape.skew = 1;", 12, &p),
        None
    );
    let diff = broken(FAR_READ, "shape.skew = 1;", "shape.skew = 0;", 12, &p);
    assert!(diff.is_some(), "windows that do not move went unnoticed");
}

#[test]
fn lowering_does_not_import_the_front_end() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lower");
    for entry in std::fs::read_dir(&dir).expect("src/lower") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        assert!(
            !text.contains("crate::front"),
            "{} reaches into the front end: lowering takes what it needs from the IR",
            path.display()
        );
    }
}

#[test]
fn an_array_passed_only_to_sweep_functions_and_never_read_after_stays_on_the_device() {
    let source = std::fs::read_to_string(fixture("relax_twice.c")).expect("fixture");
    let from = "sum += a[i] * (double)(i % 9 + 1) - b[i];";
    assert!(source.contains(from), "update this test");
    let source = source.replace(from, "sum += a[i] * (double)(i % 9 + 1);");
    let compiled = driver::compile_source("unread.c", &source).unwrap_or_else(|d| panic!("{d:#?}"));
    let unread = &compiled.stages[0].plan.unread;
    // The calls in the time loop are the pipeline's own sweeps, not escapes.
    assert!(unread[0].is_none(), "{unread:?}");
    assert!(unread[1].is_some(), "{unread:?}");
    let same = "tpace_dump_unread(\"b\"";
    assert_eq!(
        broken(&source, same, same, 7, &params("mmtb", 3, 10, 2)),
        None
    );
}

/// A sweep function whose rows are a VLA parameter: their length is the call's
/// value, which the program checks against the size clause before the pipeline.
const VLA_ROWS: &str = r#"#include <stdio.h>
#include <stdlib.h>
#define N 30
#define M 12
static void blur(int cols, float (*out)[cols], float (*in)[cols])
{
    int i, j;
#pragma tpace loop dim(2)
    for (i = 1; i < N - 1; i++)
#pragma tpace loop dim(1)
        for (j = 1; j < M - 1; j++)
            out[i][j] = 0.5f * in[i][j] + 0.125f * (in[i - 1][j] + in[i + 1][j] + in[i][j - 1] + in[i][j + 1]);
}
int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 4, t, i, j;
    int cols = M;
    float (*a)[M] = malloc(sizeof(float[M]) * N), (*b)[M] = malloc(sizeof(float[M]) * N);
    for (i = 0; i < N; i++)
        for (j = 0; j < M; j++)
            a[i][j] = b[i][j] = (float)((i * j) % 5);
#pragma tpace pipeline targetinout(a, b) size([0:N][0:M]) halo([1:1][1:1])
    for (t = 0; t < steps; t++) {
        blur(cols, b, a);
        blur(cols, a, b);
    }
    printf("%f\n", a[N / 2][M / 2]);
    return 0;
}
"#;

#[test]
fn rows_of_a_parameter_are_checked_against_the_size_clause() {
    let compiled = driver::compile_source("vla.c", VLA_ROWS).unwrap_or_else(|d| panic!("{d:#?}"));
    let checks: Vec<&str> = compiled.program.pipelines[0].arrays[0]
        .checks
        .iter()
        .map(|c| c.holds.as_str())
        .collect();
    assert!(
        checks.contains(&"(long)((cols)) == (long)(M)"),
        "{checks:?}"
    );
    let same = "int cols = M;";
    assert_eq!(
        broken(VLA_ROWS, same, same, 5, &params("mm", 2, 7, 2)),
        None
    );
    // Rows of another length: refused before the pipeline starts, in words.
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let out = driver::translate(&compiled, Target::Openacc).expect("translates");
    let out = replace_once(&out, same, "int cols = M - 1;", "vla.c");
    let built = build_ok(&tc, &out, dir.path(), "short", Flavour::Openacc);
    let refused =
        tpace::driver::run::execute(&built.binary, &["3".into()], &[], &dir.path().join("d"))
            .expect_err("runs with rows of another length");
    assert!(
        refused
            .0
            .contains("takes `a` with rows of (cols) elements, not the M of the size clause"),
        "{refused}"
    );
}

/// The offsets at which sweep `s` of `p` reads array `a`, sorted.
fn read_offsets(p: &tpace::ir::Pipeline, s: usize, a: &str) -> Vec<Vec<i64>> {
    let mut out: Vec<Vec<i64>> = p.body[s]
        .accesses
        .iter()
        .filter(|x| x.kind == tpace::ir::AccessKind::Read && p.arrays[x.array].name == a)
        .map(|x| x.offsets.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The seven points of a 3-D star of reach 1, sorted.
fn star3() -> Vec<Vec<i64>> {
    let mut s = vec![vec![0, 0, 0]];
    for d in 0..3 {
        for o in [-1, 1] {
            let mut v = vec![0, 0, 0];
            v[d] = o;
            s.push(v);
        }
    }
    s.sort();
    s
}

/// Index variables (issue 26, item 4) in a sweep function (item 1): Rodinia's
/// computeTempCPU computes `c = x + y * nx + z * nx * ny` and the clamped
/// neighbours from its own parameters, which the call binds to main's
/// numCols, numRows and layers; the size clause is in main's names. The
/// values are read in the caller's names (else the strides would not be the
/// size clause's and the program refused), the kernels keep the user's
/// subscripts in the function's names, which they have as values the host
/// evaluates from the call's arguments.
#[test]
fn index_variables_in_a_sweep_function_are_read_in_the_callers_names() {
    let compiled = compile(&ordinary("hotspot3d_do.c"));
    let p = &compiled.program.pipelines[0];
    let call = p.body[0].call.as_ref().expect("the sweep is in a function");
    assert_eq!(call.function, "computeTempCPU");
    assert_eq!(read_offsets(p, 0, "tempIn"), star3());
    assert_eq!(read_offsets(p, 0, "powerIn"), [vec![0, 0, 0]]);
    let mut kept: Vec<String> = p.body[0]
        .accesses
        .iter()
        .filter_map(|a| match &a.kept {
            Some(tpace::ir::Subscript::Flat(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    kept.sort();
    kept.dedup();
    assert_eq!(kept, ["b", "c", "e", "n", "s", "t", "w"]);
    let bound: Vec<(&str, &str)> = p.body[0]
        .scalars
        .iter()
        .filter(|s| s.name != s.value)
        .map(|s| (s.name.as_str(), s.value.as_str()))
        .collect();
    for want in [("nx", "numCols"), ("ny", "numRows"), ("nz", "layers")] {
        assert!(bound.contains(&want), "{want:?} not among {bound:?}");
    }
    // The swap at the end of the `do` body, before the counter's advance.
    let r = p.rotation.as_ref().expect("the swap is a rotation");
    assert_eq!(r.takes, [1, 0, 2]);
    let advance = p
        .time
        .advance
        .as_ref()
        .expect("the body advances the counter");
    assert_eq!(compiled.program.source[advance.clone()].trim(), "i++;");
    assert!(r.statements.iter().all(|s| s.end <= advance.start));
    // The kernel keeps the function's subscript; the host passes main's extents.
    let out = driver::translate(&compiled, Target::Cuda).expect("translates");
    assert!(out.main.contains("(long)(w) - tp_origin"), "{}", out.main);
    // Through its own subscripts: the one-point kernel, not the marching one.
    assert!(!out.main.contains("enum { TP_AHEAD"), "{}", out.main);
    let host = out.host.as_deref().expect("a host program");
    assert!(
        host.contains("= numCols;") && host.contains("= layers;"),
        "the host does not pass main's extents"
    );
}

/// A `while` loop (issue 26, item 3) whose body calls a sweep function, rotates
/// three levels and then advances its counter; the function reads rows through
/// clamped index variables (one subscript per dimension, kept).
#[test]
fn a_while_loop_calls_a_sweep_function_rotates_and_then_advances() {
    let compiled = compile(&fixture("wave2d_while.c"));
    let p = &compiled.program.pipelines[0];
    assert_eq!(p.time.form, tpace::ir::TimeForm::While);
    assert!(p.time.inclusive);
    assert_eq!(
        p.body[0].call.as_ref().map(|c| c.function.as_str()),
        Some("wave_rows")
    );
    let r = p.rotation.as_ref().expect("the levels rotate");
    assert_eq!((r.takes.clone(), r.statements.len()), (vec![1, 2, 0], 4));
    let advance = p
        .time
        .advance
        .as_ref()
        .expect("the body advances the counter");
    assert_eq!(compiled.program.source[advance.clone()].trim(), "step++;");
    assert!(r.statements.iter().all(|s| s.end <= advance.start));
    // `uc[above][j]` and `uc[below][j]`: rows i - 1, i, i + 1 reached.
    assert_eq!(
        read_offsets(p, 0, "old"),
        [vec![-1, 0], vec![0, -1], vec![0, 0], vec![0, 1], vec![1, 0]]
    );
    assert!(p.body[0].accesses.iter().any(|a| a.kept
        == Some(tpace::ir::Subscript::PerDim(vec![
            "above".into(),
            "j".into()
        ]))));
    assert_eq!(p.body[0].loops[0].hi, "(ny)");
}

/// Parboil's Index3D macro (readable since issue 26, item 7) in its cpu_stencil,
/// over loops that run the innermost index outermost.
#[test]
fn the_index3d_macro_reads_in_a_sweep_function() {
    for (path, function) in [
        (ordinary("stencil3d_parboil.c"), "cpu_stencil"),
        (fixture("parboil_stencil.c"), "cpu_stencil"),
    ] {
        let compiled = compile(&path);
        let p = &compiled.program.pipelines[0];
        assert_eq!(
            p.body[0].call.as_ref().map(|c| c.function.as_str()),
            Some(function)
        );
        assert_eq!(read_offsets(p, 0, "h_A0"), star3(), "{}", path.display());
        assert!(p.body[0].accesses.iter().all(|a| a.kept.is_none()));
        assert_eq!(
            p.rotation.as_ref().map(|r| r.takes.clone()),
            Some(vec![1, 0])
        );
        // Plain subscripts: the function's 3-D sweep gets the marching kernel
        // (issue 28) as the same nest in the time loop would.
        let out = driver::translate(&compiled, Target::Cuda).expect("translates");
        assert!(
            out.main.contains("enum { TP_AHEAD = TPACE_MARCH_AHEAD(1)"),
            "{}: no marching kernel",
            path.display()
        );
    }
}

/// Arrays that come back because their pointers rotate get the ranks the
/// analysis names (under --mpi; for a storage, those of every pointer of its
/// cycle, under any of which it may end).
#[test]
fn rotated_arrays_come_back_to_the_ranks_of_their_cycle() {
    let compiled = compile(&fixture("wave2d_while.c"));
    let stage = &compiled.stages[0];
    for (a, r) in stage.plan.receivers.iter().enumerate() {
        assert!(
            stage.plan.unread[a].is_none(),
            "array {a} does not come back"
        );
        let r = r.as_ref().expect("a rotated array has receivers");
        assert_eq!(r, &stage.facts.arrays[a].receivers);
    }
}

/// A sweep function defined after `main`, called after the loop advances its
/// counter `t`, whose nest reads a local of that name (`t`, its own) and whose
/// loop index `j` the time loop declares too (`long j;`, the caller's, unused):
/// the function's names are its own, not the time loop's.
const NAMES_OF_ITS_OWN: &str = r#"#include <stdio.h>
#include <stdlib.h>
#define N 45
static void relax(float *dst, const float *src, int n, float w);
int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5, t = 0, i;
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    if (a == NULL || b == NULL)
        return 1;
    for (i = 0; i < N; i++) {
        a[i] = (float)(i % 7);
        b[i] = (float)(i % 3);
    }
#pragma tpace pipeline targetinout(a, b) size([0:N]) halo([1:1])
    while (t < steps) {
        long j;
        t++;
        relax(b, a, N, 0.25f);
        float *tmp = a;
        a = b;
        b = tmp;
    }
    printf("%d %f %f\n", t, a[N / 2], b[N / 3]);
    free(a);
    free(b);
    return 0;
}

static void relax(float *dst, const float *src, int n, float w)
{
    int j;
#pragma tpace loop dim(1)
    for (j = 1; j < n - 1; j++) {
        const float t = src[j - 1] - 2.0f * src[j] + src[j + 1];
        dst[j] = src[j] + w * t;
    }
}
"#;

#[test]
fn a_sweep_functions_names_are_its_own_not_the_time_loops() {
    let compiled = driver::compile_source("own.c", NAMES_OF_ITS_OWN)
        .unwrap_or_else(|d| panic!("the function's `t` is no counter: {d:#?}"));
    let p = &compiled.program.pipelines[0];
    assert!(p.body[0].call.is_some());
    // The time loop's `long j;` stays the caller's: it is no index of a nest of the loop.
    let host: Vec<&str> = p
        .host
        .iter()
        .map(|h| compiled.program.source[h.span.clone()].trim())
        .collect();
    assert!(host.contains(&"long j;"), "{host:?}");
    assert_eq!(p.body[0].loops[0].var, "j");
    assert_ne!(
        p.body[0].loops[0].declared_type.as_deref(),
        Some("long"),
        "the function's index took the caller's declaration"
    );
    let same = "a[i] = (float)(i % 7);";
    assert_eq!(
        broken(NAMES_OF_ITS_OWN, same, same, 6, &params("mmtb", 2, 7, 2)),
        None
    );
    assert_eq!(
        broken(NAMES_OF_ITS_OWN, same, same, 5, &params("mm", 3, 10, 1)),
        None
    );
    // A call that passes the counter is refused wherever it stands (what a sweep
    // function is passed is evaluated once, before the loop), at the argument.
    let reads = NAMES_OF_ITS_OWN.replace(
        "relax(b, a, N, 0.25f);",
        "relax(b, a, N, 0.25f + 0.01f * (float)(t % 3));",
    );
    let d = driver::compile_source("reads.c", &reads)
        .expect_err("a call after the advance passes the counter");
    assert!(
        d[0].message
            .contains("`relax` is passed the time loop's counter `t` for `w`"),
        "{d:#?}"
    );
    assert_eq!(&reads[d[0].span.clone()], "t");
}
