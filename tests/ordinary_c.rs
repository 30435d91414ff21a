//! C as users write it, beyond what the fixture sweep checks (issue 15,
//! items 7 and 8): the run-time layout checks of arrays held in structs
//! refuse what they must and matter when they do; the `-I`/`-D` options
//! reach the front end, the model and every compiler; the program's own
//! macros (file, its headers, the command line) are told from the system's.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain, build, execute};
use tpace::driver::{self};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ordinary")
        .join(name)
}

/// Run `tpace ARGS` in the repository root: (success, stdout, stderr).
fn tpace(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tpace");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// himeno_struct.c with `wrk1` allocated one element deeper than the grid, so
/// that its strides are not the size clause's.
fn himeno_with_a_deeper_wrk1() -> String {
    let source = std::fs::read_to_string(fixture("himeno_struct.c")).expect("fixture");
    let from = "new_mat(&wrk1, 1, GRID_I, GRID_J, GRID_K)";
    assert!(source.contains(from), "update this test");
    source.replacen(from, "new_mat(&wrk1, 1, GRID_I, GRID_J, GRID_K + 1)", 1)
}

#[test]
fn a_struct_array_with_other_strides_is_refused_at_run_time_and_the_check_matters() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let compiled = driver::compile_source("deeper.c", &himeno_with_a_deeper_wrk1())
        .unwrap_or_else(|d| panic!("{d:#?}"));
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        5,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    let out = driver::translate(&compiled, Target::Openacc).expect("translates");
    let built = build_ok(&tc, &out, dir.path(), "checked", Flavour::Openacc);
    let refused = execute(
        &built.binary,
        &["5".into()],
        &[],
        &dir.path().join("c.dump"),
    )
    .expect_err("the translation runs with a wrk1 of other strides");
    assert!(
        refused.0.contains(
            "array `wrk1->m` is indexed with a stride of wrk1->mcols * wrk1->mdeps in dim(3), \
             which is not the p->mcols * p->mdeps of the size clause's extents"
        ),
        "{refused}"
    );
    // Without the checks the program runs, and its answer is not the sequential one.
    let mut unchecked = out.clone();
    let lines: Vec<String> = out
        .main
        .lines()
        .filter(|l| l.contains("tp_layout_ok[") && l.contains("(long)wrk1->"))
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 2, "wrk1's two stride checks: {lines:?}");
    for line in &lines {
        let (lhs, _) = line.split_once(" = ").expect("an assignment");
        unchecked = replace_once(&unchecked, line, &format!("{lhs} = 1;"), "deeper.c");
    }
    let built = build_ok(&tc, &unchecked, dir.path(), "unchecked", Flavour::Openacc);
    let got = run_ok(
        &built.binary,
        5,
        &Params::default(),
        &dir.path().join("u.dump"),
    );
    assert!(
        first_difference(&seq.dump, &got.dump).is_some(),
        "a wrk1 of other strides gave the sequential answer: the check would not be needed"
    );
}

#[test]
fn preprocessor_options_reach_the_front_end_and_the_program_keeps_its_text() {
    let path = fixture("jacobi2d_polybench.c");
    let path_text = path.to_string_lossy().into_owned();
    let include = fixture("include").to_string_lossy().into_owned();
    // Without -I the header is not found: the preprocessor's failure is said, and
    // the arrays declared through its macros can not be read.
    let (ok, _, err) = tpace(&["check", &path_text]);
    assert!(!ok);
    assert!(
        err.contains("warning: `") && err.contains(" -E` failed on "),
        "{err}"
    );
    assert!(err.contains("polybench_like.h"), "{err}");
    assert!(err.contains("cannot find the declaration of `A`"), "{err}");
    assert!(
        err.contains("looks declared through `POLYBENCH_2D(...)`"),
        "{err}"
    );
    // With -I and -D, as to the C compiler.
    let (ok, out, err) = tpace(&["check", "-I", &include, "-DN=40", &path_text]);
    assert!(ok, "{err}");
    assert!(out.contains("array A          double"), "{out}");
    let (ok, out, err) = tpace(&["translate", "-I", &include, "-D", "N=40", &path_text]);
    assert!(ok, "{err}");
    // The user's text is copied, not its expansion.
    assert!(
        out.contains("DATA_TYPE POLYBENCH_2D(A, N, N, n, n)"),
        "the declaration macro is not kept"
    );
    assert!(out.contains("#include \"polybench_like.h\""));
    // The printed build line carries the options.
    let dir = tempfile::tempdir().expect("scratch folder");
    let cu = dir.path().join("jacobi.cu").to_string_lossy().into_owned();
    let (ok, _, err) = tpace(&[
        "translate",
        "-I",
        &include,
        "-DN=40",
        "--target",
        "cuda",
        &path_text,
        "-o",
        &cu,
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("build: nvcc -I {include} -DN=40 -O3")),
        "{err}"
    );
    // -DDATA_TYPE_IS_FLOAT changes the element type the analysis reads.
    let (ok, out, err) = tpace(&["check", "-I", &include, "-DDATA_TYPE_IS_FLOAT", &path_text]);
    assert!(ok, "{err}");
    assert!(out.contains("array A          float"), "{out}");
}

#[test]
fn the_model_evaluates_sizes_with_the_preprocessors_macros() {
    let path = fixture("jacobi2d_polybench.c")
        .to_string_lossy()
        .into_owned();
    let include = fixture("include").to_string_lossy().into_owned();
    // `size([0:_PB_N]...)`: _PB_N is POLYBENCH_LOOP_BOUND(N, n), N is the -D value.
    let (ok, out, err) = tpace(&["plan", "-I", &include, "-DN=4000", "-DTSTEPS=100", &path]);
    assert!(ok, "{err}");
    assert!(out.contains("grid 4000 x 4000"), "{out}");
    assert!(out.contains("; 100 steps"), "{out}");
    // The header's default without -D.
    let (ok, out, err) = tpace(&["plan", "-I", &include, &path]);
    assert!(ok, "{err}");
    assert!(out.contains("grid 250 x 250"), "{out}");
}

#[test]
fn the_model_takes_run_time_struct_extents_from_set() {
    let path = fixture("himeno_struct.c").to_string_lossy().into_owned();
    let (ok, _, err) = tpace(&["plan", &path, "--steps", "10"]);
    assert!(!ok);
    assert!(err.contains("give --set p->mrows=VALUE"), "{err}");
    let (ok, out, err) = tpace(&[
        "plan",
        &path,
        "--set",
        "p->mrows=513",
        "--set",
        "p->mcols=257",
        "--set",
        "p->mdeps=129",
        "--steps",
        "10",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("grid 513 x 257 x 129"), "{out}");
    assert!(out.contains("a->m[3] (4 B, in)"), "{out}");
}

#[test]
fn run_passes_the_options_to_every_compiler() {
    let path = fixture("jacobi2d_polybench.c")
        .to_string_lossy()
        .into_owned();
    let include = fixture("include").to_string_lossy().into_owned();
    let (ok, out, err) = tpace(&[
        "run",
        "-I",
        &include,
        "-DN=30",
        "-DPOLYBENCH_USE_SCALAR_LB",
        "--schedule",
        "mmtb",
        "--k",
        "3",
        "--chunk",
        "7",
        &path,
        "--",
        "5",
    ]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("identical (2 arrays, 900 cells each)"),
        "{out}"
    );
}

#[test]
fn the_programs_own_macros_are_told_from_the_systems() {
    let path = fixture("jacobi2d_polybench.c");
    let compiled = compile(&path);
    let own = &compiled.program.user_macros;
    for name in [
        "N",
        "TSTEPS",
        "DATA_TYPE",
        "POLYBENCH_2D",
        "_PB_N",
        "POLYBENCH_USE_SCALAR_LB",
    ] {
        assert!(own.iter().any(|m| m == name), "{name} not in {own:?}");
    }
    for name in ["_STDIO_H", "EOF", "__GNUC__", "NULL"] {
        assert!(!own.iter().any(|m| m == name), "{name} in {own:?}");
    }
    // Every macro the preprocessor listed is in the program for the model.
    let all = &compiled.program.macros;
    assert!(all.iter().any(|m| m.name == "N" && m.body == "40"));
    assert!(all.iter().any(|m| m.name == "EOF"));
}

#[test]
fn fixture_flags_are_read_from_the_first_line() {
    let flags = fixture_flags(&fixture("jacobi2d_polybench.c"));
    assert_eq!(
        flags.defines,
        ["N=40", "TSTEPS=6", "POLYBENCH_USE_SCALAR_LB"]
    );
    assert_eq!(flags.include_dirs, [fixture("include")]);
    assert!(
        fixture_flags(&fixture("himeno_struct.c"))
            .defines
            .is_empty()
    );
    // The sequential program builds with them, and not without.
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let compiled = compile(&fixture("jacobi2d_polybench.c"));
    assert!(
        build(
            &tc,
            &reference_of(&compiled),
            dir.path(),
            "bare",
            Flavour::Reference
        )
        .is_err()
    );
    build_ok(
        &flags.toolchain(&tc),
        &reference_of(&compiled),
        dir.path(),
        "flagged",
        Flavour::Reference,
    );
}
