//! Arrays the program never reads after a pipeline are not brought back
//! (issue 19, item 2): on the CPU (OpenACC under gcc's host fallback, and the
//! CUDA emulation), the runtime's report shows the bytes saved, the program's
//! output and every array it does read stay bit for bit the sequential
//! program's, and a program that reads the temporary afterwards keeps its
//! download. Fixtures: tests/fixtures/liveness/.

mod common;

use common::*;
use std::path::Path;
use tpace::back::Target;
use tpace::driver::dump::{first_difference, printed_difference};
use tpace::driver::run::{Built, Execution, Flavour, Params, Toolchain};
use tpace::driver::{self, Compiled};
use tpace::model::{Config, Machine, Profile, Schedule, Workload, predict};

const STEPS: u64 = 7;

/// A fixture compiled, its sequential program and its translation built in `dir`.
struct Program {
    compiled: Compiled,
    reference: Built,
    translated: Built,
}

fn build_fixture(
    tc: &Toolchain,
    dir: &Path,
    name: &str,
    target: Target,
    flavour: Flavour,
) -> Program {
    let compiled = compile(&program_path(&format!("tests/fixtures/liveness/{name}")));
    let stem = name.trim_end_matches(".c");
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir,
        &format!("{stem}_ref"),
        Flavour::Reference,
    );
    let translated = build_ok(
        tc,
        &driver::translate(&compiled, target).expect("translates"),
        dir,
        stem,
        flavour,
    );
    Program {
        compiled,
        reference,
        translated,
    }
}

/// Runs both programs with `p`: the translation must match (arrays it brings back
/// bit for bit, printed output); returns its run.
fn run_matching(prog: &Program, dir: &Path, p: &Params, env: &[(String, String)]) -> Execution {
    let seq = run_ok(
        &prog.reference.binary,
        STEPS,
        &Params::default(),
        &dir.join("r.dump"),
    );
    let got = run_with(&prog.translated.binary, STEPS, p, env, &dir.join("t.dump"));
    assert_eq!(first_difference(&seq.dump, &got.dump), None, "{p:?}");
    assert_eq!(
        printed_difference(&seq.stdout, &got.stdout, 0.0),
        None,
        "{p:?}"
    );
    assert_eq!(seq.stdout, got.stdout, "{p:?}: the printed output differs");
    assert_eq!(unread_dumped(&got), unread_planned(&prog.compiled), "{p:?}");
    got
}

/// A byte count of the runtime's report.
fn bytes(got: &Execution, key: &str) -> u64 {
    got.report
        .get(key)
        .unwrap_or_else(|| panic!("no `{key}` in the report:\n{}", got.stderr))
        .parse()
        .expect("a number")
}

/// The settings each comparison runs under: every schedule, several chunks
/// (one not dividing the extent), k not dividing the step count.
fn settings() -> Vec<Params> {
    vec![
        params("naive", 1, 7, 2),
        params("mm", 3, 7, 2),
        params("mm", 2, 20, 3),
        params("mmtb", 3, 7, 3),
        params("mmtb", 4, 57, 2),
        params("incore", 1, 1, 1),
    ]
}

/// jacobi2d_split.c never reads its temporary `w` after the loop; the same program
/// with a `report` that reads it must bring it back. Both match their sequential
/// programs; the first moves the same bytes up and, down, exactly `a` once per
/// block, the second that plus the copy's box of `w` (one contiguous span per
/// chunk: in-core exactly the box's span, `(X - 2) * Y - 2` elements).
fn unread_temporary_saves_its_download(target: Target, flavour: Flavour, env: &[(String, String)]) {
    let tc = Toolchain::detect();
    let scratch = tempfile::tempdir().expect("scratch folder");
    let dir = scratch.path();
    let unread = build_fixture(&tc, dir, "jacobi2d_split.c", target, flavour);
    let read = build_fixture(&tc, dir, "jacobi2d_split_reads_w.c", target, flavour);
    let (x, y, elem) = (57u64, 45u64, 8u64);
    let grid = x * y * elem;
    for p in settings() {
        let skip = run_matching(&unread, dir, &p, env);
        let keep = run_matching(&read, dir, &p, env);
        let names = |got: &Execution| -> Vec<(String, bool)> {
            got.dump
                .iter()
                .map(|a| (a.name.clone(), a.unread))
                .collect()
        };
        assert_eq!(
            names(&skip),
            [("w".into(), true), ("a".into(), false)],
            "{p:?}"
        );
        assert_eq!(
            names(&keep),
            [("w".into(), false), ("a".into(), false)],
            "{p:?}"
        );
        let (schedule, k, _, _) = expected_report(&p, x, STEPS);
        let blocks = STEPS.div_ceil(k);
        assert_eq!(bytes(&skip, "up_bytes"), bytes(&keep, "up_bytes"), "{p:?}");
        assert_eq!(
            bytes(&skip, "down_bytes"),
            blocks * grid,
            "{p:?}: `a` once per block"
        );
        let saved = bytes(&keep, "down_bytes") - bytes(&skip, "down_bytes");
        let box_span = ((x - 2) * y - 2) * elem;
        if schedule == "incore" {
            assert_eq!(saved, box_span, "{p:?}");
        } else {
            assert!(
                saved >= (x - 2) * (y - 2) * elem && saved <= box_span,
                "{p:?}: {saved}"
            );
        }
        eprintln!(
            "{p:?}: down {} B where the program reads `w` after the loop, {} B where it does not",
            bytes(&keep, "down_bytes"),
            bytes(&skip, "down_bytes")
        );
    }
}

#[test]
fn an_unread_temporary_is_not_downloaded_openacc() {
    unread_temporary_saves_its_download(Target::Openacc, Flavour::Openacc, &[]);
}

#[test]
fn an_unread_temporary_is_not_downloaded_cuda_emulation() {
    let seed = vec![("TPACE_EMU_SEED".to_string(), "5".to_string())];
    unread_temporary_saves_its_download(Target::Cuda, Flavour::CudaEmulation, &seed);
}

/// heat2d_local.c's pure temporary `t` (moved only for its final values) is a
/// local its function frees unread: nothing of it crosses the bus. In-core, each
/// of the two runs moves exactly `u` in and out once; the same program with `t`
/// read before it is freed moves `t` both ways too. Out-of-core, the bytes differ
/// by at most `t` once each way.
#[test]
fn an_unread_pure_temporary_never_crosses_the_bus() {
    let tc = Toolchain::detect();
    let scratch = tempfile::tempdir().expect("scratch folder");
    let dir = scratch.path();
    let unread = build_fixture(
        &tc,
        dir,
        "heat2d_local.c",
        Target::Openacc,
        Flavour::Openacc,
    );
    let source = std::fs::read_to_string(program_path("tests/fixtures/liveness/heat2d_local.c"))
        .expect("the fixture");
    let reads_t = source.replace(
        "    free(u);\n    free(t);",
        "    s += t[1][1];\n    free(u);\n    free(t);",
    );
    assert_ne!(reads_t, source);
    let compiled = driver::compile_source("heat2d_local_reads_t.c", &reads_t).expect("compiles");
    let read = Program {
        reference: build_ok(
            &tc,
            &reference_of(&compiled),
            dir,
            "reads_t_ref",
            Flavour::Reference,
        ),
        translated: build_ok(
            &tc,
            &driver::translate(&compiled, Target::Openacc).expect("translates"),
            dir,
            "reads_t",
            Flavour::Openacc,
        ),
        compiled,
    };
    assert!(
        driver::summary(&unread.compiled).contains("download of `t` after the last step skipped")
    );
    assert!(!driver::summary(&read.compiled).contains("skipped"));
    let grid = 39 * 28 * 8u64;
    let skip = run_matching(&unread, dir, &params("incore", 1, 1, 1), &[]);
    let keep = run_matching(&read, dir, &params("incore", 1, 1, 1), &[]);
    assert_eq!(
        (bytes(&skip, "up_bytes"), bytes(&skip, "down_bytes")),
        (grid, grid)
    );
    assert_eq!(
        (bytes(&keep, "up_bytes"), bytes(&keep, "down_bytes")),
        (2 * grid, 2 * grid)
    );
    for p in [
        params("mm", 3, 7, 2),
        params("mmtb", 2, 10, 3),
        params("naive", 1, 13, 2),
    ] {
        let skip = run_matching(&unread, dir, &p, &[]);
        let keep = run_matching(&read, dir, &p, &[]);
        let up = bytes(&keep, "up_bytes") - bytes(&skip, "up_bytes");
        let down = bytes(&keep, "down_bytes") - bytes(&skip, "down_bytes");
        assert!(up > 0 && up <= 2 * grid, "{p:?}: {up}");
        assert_eq!(down, grid, "{p:?}: `t` comes back once, whole");
    }
}

/// `tpace check` and `tpace plan` say which download is skipped and why (with
/// the line); the model counts one download of the temporary fewer, as whole planes.
#[test]
fn the_plan_and_the_model_say_so() {
    let unread = compile(&program_path("tests/fixtures/liveness/jacobi2d_split.c"));
    let read = compile(&program_path(
        "tests/fixtures/liveness/jacobi2d_split_reads_w.c",
    ));
    let check = driver::summary(&unread);
    assert!(
        check.contains(
            "download of `w` after the last step skipped: the program never reads it after the pipeline \
             (" 
        ) && check.contains("jacobi2d_split.c:76: the program ends (the end of `main`) without reading it)"),
        "{check}"
    );
    let check = driver::summary(&read);
    assert!(!check.contains("skipped"), "{check}");
    assert!(
        check.contains("`report` is called after the pipeline and uses `w`"),
        "{check}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(["plan", "--steps", "64"])
        .arg(program_path("tests/fixtures/liveness/jacobi2d_split.c"))
        .output()
        .expect("tpace plan runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("w (8 B, folded into the swap's other buffer, never moved)"),
        "{text}"
    );
    assert!(
        text.contains("download of `w` after the last step skipped"),
        "{text}"
    );
    let m = Machine::from_profile(&Profile::bundled("h100").expect("bundled")).expect("machine");
    let (x, y, steps) = (4096u64, 2048u64, 64u64);
    for schedule in [
        Schedule::Mm,
        Schedule::Mmtb,
        Schedule::Incore,
        Schedule::Naive,
    ] {
        let c = Config {
            schedule,
            k: 16,
            b: 1000,
            streams: 2,
        };
        let down = |compiled: &Compiled| {
            let w = Workload::from_unit(compiled.unit(0), &[x, y], steps).expect("workload");
            predict(&w, &m, c).expect("predicts").d2h_bytes
        };
        assert_eq!(
            down(&read) - down(&unread),
            u128::from(x * y * 8),
            "{schedule:?}"
        );
    }
}

/// The comparison can not hide a wrong array behind the marker: a translation
/// that leaves `a` (which the program reads) behind and dumps it as not brought
/// back matches the sequential dumps, so the checks also hold the marked arrays
/// to the plan's, and those differ.
#[test]
fn the_marked_arrays_are_held_to_the_plan() {
    let tc = Toolchain::detect();
    let scratch = tempfile::tempdir().expect("scratch folder");
    let dir = scratch.path();
    let path = program_path("tests/fixtures/liveness/jacobi2d_split.c");
    let compiled = compile(&path);
    let text = driver::translate(&compiled, Target::Openacc).expect("translates");
    let from = "tpace_dump(\"a\", tp_in->tp_host[1], sizeof(double), 2, tp_in->tp_dim_lo, tp_in->tp_dim_n);";
    let broken = replace_once(
        &replace_once(
            &text,
            "arrays[0].unread = 1;",
            "arrays[0].unread = 1; arrays[1].unread = 1;",
            "jacobi2d_split.c",
        ),
        from,
        "tpace_dump_unread(\"a\", sizeof(double), 2, tp_in->tp_dim_lo, tp_in->tp_dim_n);",
        "jacobi2d_split.c",
    );
    let built = build_ok(&tc, &broken, dir, "broken", Flavour::Openacc);
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir,
        "ref",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        STEPS,
        &Params::default(),
        &dir.join("r.dump"),
    );
    let got = run_ok(
        &built.binary,
        STEPS,
        &params("mmtb", 3, 7, 3),
        &dir.join("t.dump"),
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    assert_eq!(unread_dumped(&got), ["a", "w"]);
    assert_eq!(unread_planned(&compiled), ["w"]);
    // The program prints a checksum of `a`, stale now: its output differs too.
    assert!(printed_difference(&seq.stdout, &got.stdout, 0.0).is_some());
}
