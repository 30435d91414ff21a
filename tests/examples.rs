//! Every example and layout fixture, translated to OpenACC, built with the host
//! fallback and run over a sweep of out-of-core parameters, must leave every
//! listed array bit for bit as the sequential program does (DESIGN.md §2, §6).
//! A second test breaks the embedded runtime on purpose and checks that the
//! comparison notices. The tests at the end are edge cases that once broke
//! the translator.

mod common;

use common::*;
use std::path::Path;
use tpace::back::Target;
use tpace::driver;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};

#[test]
fn every_example_matches_its_sequential_program_bit_for_bit() {
    check_all(Target::Openacc, Flavour::Openacc, &[]);
}

#[test]
fn the_comparison_catches_a_broken_reduction() {
    check_reduction_breaks(Target::Openacc, Flavour::Openacc, &[]);
}

#[test]
fn the_comparison_catches_a_broken_runtime() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 13;
    let seq = jacobi_reference(&tc, dir.path(), steps);
    // Jacobi-2D reading its temporary afterwards: the folded download must happen.
    let reads_work = "tests/fixtures/liveness/jacobi2d_reads_work.c";
    let seq_reads_work = example_reference(reads_work, &tc, dir.path(), steps);
    // Each break runs with several chunks and k > 1, so that ghost planes,
    // carries and hand-overs are needed.
    let breaks = [
        (
            "mm_short_upload",
            "tpace_upload_planes(r, ch, host_lo, win_hi);",
            "tpace_upload_planes(r, ch, host_lo, win_hi - 1);",
            "mm",
        ),
        (
            "mm_no_carry",
            "if (ch->c > 0 && win_lo < own_lo)",
            "if (0)",
            "mm",
        ),
        (
            "mmtb_no_handover",
            "if (!tpace_on_device(arr) || from >= own_lo)",
            "if (1)",
            "mmtb",
        ),
        (
            "mmtb_short_handover",
            "tpace_buf_plane(r, arr, arr->slot[prev->slot], prev->base, from),\n                       tpace_planes_bytes(r, arr, own_lo - from), ch->slot);",
            "tpace_buf_plane(r, arr, arr->slot[prev->slot], prev->base, from),\n                       tpace_planes_bytes(r, arr, own_lo - from - 1), ch->slot);",
            "mmtb",
        ),
        (
            "mmtb_short_download",
            "to = tpace_mmtb_done_below(p, ch->c, ch->kb, max_tau);",
            "to = tpace_mmtb_done_below(p, ch->c, ch->kb, max_tau) - 1;",
            "mmtb",
        ),
        (
            "swap_shadow_not_filled",
            "        if (arr->swap) {\n            tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->shadow[ch->slot], ch->base, from),\n                           tpace_buf_plane(r, arr, arr->slot[ch->slot], ch->base, from),",
            "        if (0) {\n            tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->shadow[ch->slot], ch->base, from),\n                           tpace_buf_plane(r, arr, arr->slot[ch->slot], ch->base, from),",
            "mmtb",
        ),
        (
            "swap_wrong_final_buffer",
            "return tpace_swap_buffer(r, ch, a, ch->kb);",
            "return tpace_swap_buffer(r, ch, a, ch->kb - 1);",
            "mmtb",
        ),
        (
            "folded_temporary_not_downloaded",
            "tpace_download_folded(r, ch, arr, from, to);",
            "0;",
            "mm",
        ),
        (
            "last_block_not_downloaded",
            "if (last_block && a->unread)\n        return 0;",
            "if (last_block)\n        return 0;",
            "mmtb",
        ),
        (
            "mmtb_no_skew",
            "long shift = (long)i * p->s.skew + tau;",
            "long shift = (long)i * 0 + tau;",
            "mmtb",
        ),
    ];
    for (name, from, to, schedule) in breaks {
        // The folded temporary comes back only where the program reads it.
        let (program, seq) = if name.starts_with("folded") {
            (reads_work, &seq_reads_work)
        } else {
            ("jacobi2d.c", &seq)
        };
        let text = broken_example(program, Target::Openacc, from, to);
        let built = build_ok(&tc, &text, dir.path(), name, Flavour::Openacc);
        let p = params(schedule, 3, 7, 2);
        let got = run_ok(
            &built.binary,
            steps,
            &p,
            &dir.path().join(format!("{name}.dump")),
        );
        let diff = first_difference(&seq.dump, &got.dump)
            .unwrap_or_else(|| panic!("{name}: the broken runtime was not caught"));
        eprintln!("{name}: caught, {diff}");
        // `name[i][j]: sequential .. vs translated ..`
        let (array, rest) = diff
            .split_once('[')
            .unwrap_or_else(|| panic!("{name}: `{diff}` names no cell"));
        assert!(
            ["a", "work"].contains(&array),
            "{name}: `{diff}` does not name a listed array"
        );
        let (cell, _) = rest
            .split_once(':')
            .unwrap_or_else(|| panic!("{name}: `{diff}` has no `:`"));
        let subs: Vec<&str> = cell.trim_end_matches(']').split("][").collect();
        assert_eq!(subs.len(), 2, "{name}: `{diff}` does not name a 2-D cell");
        assert!(
            subs.iter().all(|s| s.parse::<i64>().is_ok()),
            "{name}: `{diff}` does not name a cell by its indices"
        );
        assert!(
            diff.contains("sequential") && diff.contains("translated"),
            "{diff}"
        );
    }
}

/// jacobi2d's source with `from` replaced by `to` (exactly once).
fn jacobi_variant(from: &str, to: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let source = std::fs::read_to_string(path).expect("examples/jacobi2d.c");
    assert_eq!(
        source.matches(from).count(),
        1,
        "`{from}` not in jacobi2d.c"
    );
    source.replace(from, to)
}

/// Translate `source`, build both programs, run both: the first difference, if any.
fn compare_source(source: &str, steps: u64, p: &Params) -> Option<String> {
    compare_source_on(Target::Openacc, Flavour::Openacc, source, steps, p)
}

/// [`compare_source`] for any target.
fn compare_source_on(
    target: Target,
    flavour: Flavour,
    source: &str,
    steps: u64,
    p: &Params,
) -> Option<String> {
    let compiled = driver::compile_source("variant.c", source)
        .unwrap_or_else(|d| panic!("the variant does not compile: {d:?}"));
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let translated = build_ok(
        &tc,
        &driver::translate(&compiled, target).expect("translates"),
        dir.path(),
        "translated",
        flavour,
    );
    assert!(
        warnings(&translated.warnings).is_empty(),
        "the translation builds with warnings:\n{}",
        translated.warnings
    );
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    let got = run_ok(&translated.binary, steps, p, &dir.path().join("t.dump"));
    first_difference(&seq.dump, &got.dump)
}

// Edge cases that once broke the translator.

#[test]
fn zero_steps_leave_the_arrays_alone() {
    let source = jacobi_variant("#define X 1000", "#define X 20");
    assert_eq!(compare_source(&source, 0, &params("mm", 3, 7, 2)), None);
}

/// An array written under an `if` keeps its old values where the condition fails,
/// so it is not a pure temporary and must travel both ways (it once was taken for one).
#[test]
fn conditionally_written_temporary() {
    let source = jacobi_variant(
        "                work[x][y] = (a",
        "                if (a[x][y] > 5.0f)\n                    work[x][y] = (a",
    );
    assert_eq!(compare_source(&source, 13, &params("mm", 3, 7, 2)), None);
}

/// A copy from a float temporary into a double array converts each value, so it
/// does not run as a swap (it once did, folding the temporary: the translation left
/// `inf` in it): the variant matches on both targets, and neither folds nor fuses.
#[test]
fn a_copy_between_element_types_is_not_a_swap() {
    let source = jacobi_variant("static float a[X][Y];", "static double a[X][Y];");
    let compiled = driver::compile_source("variant.c", &source)
        .unwrap_or_else(|d| panic!("the variant does not compile: {d:?}"));
    assert_eq!(compiled.stages[0].plan.swap, None);
    assert_eq!(compiled.stages[0].plan.fusion, None);
    for p in [
        params("mmtb", 3, 7, 2),
        params("mm", 4, 9, 3),
        params("incore", 5, 1, 1),
    ] {
        assert_eq!(compare_source(&source, 7, &p), None, "{p:?}");
        let cuda = compare_source_on(Target::Cuda, Flavour::CudaEmulation, &source, 7, &p);
        assert_eq!(cuda, None, "CUDA {p:?}");
    }
}

/// Whether `work` (listed first) counts as a pure temporary in a jacobi2d variant.
fn work_is_pure_temporary(from: &str, to: &str) -> bool {
    let source = jacobi_variant(from, to);
    let compiled = driver::compile_source("variant.c", &source)
        .unwrap_or_else(|d| panic!("the variant does not compile: {d:?}"));
    assert_eq!(compiled.program.pipelines[0].arrays[0].name, "work");
    compiled.stages[0].facts.arrays[0].pure_temporary
}

#[test]
fn only_a_write_at_every_point_makes_a_pure_temporary() {
    let stmt = "work[x][y] = (a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0;";
    let rhs = "(a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0";
    // As written, and as the loop's only statement without braces.
    assert!(work_is_pure_temporary(stmt, stmt));
    assert!(work_is_pure_temporary(
        &format!("{{\n                {stmt}\n            }}"),
        stmt,
    ));
    // Writes that some points skip leave old values behind.
    for conditional in [
        format!("if (a[x][y] > 5.0f) {stmt}"),
        format!("if (a[x][y] > 5.0f) {{}} else {stmt}"),
        format!("while (a[x][y] > 5.0f) {stmt}"),
        format!("a[x][y] > 5.0f && (work[x][y] = {rhs});"),
        format!("a[x][y] > 5.0f || (work[x][y] = {rhs});"),
        format!("(void)(a[x][y] > 5.0f ? (work[x][y] = {rhs}) : 0.0f);"),
    ] {
        assert!(
            !work_is_pure_temporary(stmt, &conditional),
            "taken for a pure temporary with: {conditional}"
        );
    }
}

/// `init` on the line right above `pipeline` (once overlapping edits: a panic in splice).
#[test]
fn init_pragma_directly_before_the_pipeline() {
    let source = jacobi_variant(
        "#pragma tpace init\n\n#pragma tpace pipeline",
        "#pragma tpace init\n#pragma tpace pipeline",
    );
    assert_eq!(compare_source(&source, 13, &params("mm", 3, 7, 2)), None);
}

/// `n` from "... lower VAR to n or less" in a refusal.
fn suggested(message: &str, var: &str) -> u64 {
    let key = format!("lower {var} to ");
    let at = message
        .find(&key)
        .unwrap_or_else(|| panic!("no `{key}` in: {message}"))
        + key.len();
    message[at..]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number after `{key}` in: {message}"))
}

#[test]
fn a_device_memory_budget_is_kept_or_refused_in_words() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 13;
    let seq = jacobi_reference(&tc, dir.path(), steps);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let text = driver::translate(&compile(&path), Target::Openacc).expect("translates");
    let built = build_ok(&tc, &text, dir.path(), "budget", Flavour::Openacc);
    let env = |pairs: &[(&str, String)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let dump = dir.path().join("b.dump");
    let refused = |pairs: &[(&str, String)]| -> String {
        match tpace::driver::run::execute(&built.binary, &[steps.to_string()], &env(pairs), &dump) {
            Ok(_) => panic!("{pairs:?} was not refused"),
            Err(f) => f.0,
        }
    };
    let kept = |pairs: &[(&str, String)], budget: u64| {
        let got = run_with(&built.binary, steps, &Params::default(), &env(pairs), &dump);
        let bytes: u64 = got.report["device_bytes"].parse().expect("device_bytes");
        assert!(bytes <= budget, "{pairs:?}: {bytes} bytes over {budget}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{pairs:?}");
        got
    };
    let mb = ("TPACE_DEVICE_MEM", "1000000".to_string());
    // Chunks too wide for the budget: the message names the widest that fits, and it does.
    // (Streams are set too: left unset, the model would pick fewer that fit.)
    let wide = [
        mb.clone(),
        ("TPACE_SCHEDULE", "mmtb".into()),
        ("TPACE_K", "8".into()),
        ("TPACE_STREAMS", "3".into()),
    ];
    let msg = refused(&[&wide[..], &[("TPACE_CHUNK", "500".into())]].concat());
    assert!(
        msg.contains("4.89 MB of device memory but 1 MB are available"),
        "{msg}"
    );
    let b = suggested(&msg, "TPACE_CHUNK");
    kept(
        &[&wide[..], &[("TPACE_CHUNK", b.to_string())]].concat(),
        1_000_000,
    );
    refused(&[&wide[..], &[("TPACE_CHUNK", (b + 1).to_string())]].concat());
    // k too large for any chunk: the message names the largest k that fits, and it does.
    let small = [
        ("TPACE_DEVICE_MEM", "100000".to_string()),
        ("TPACE_SCHEDULE", "mmtb".into()),
        ("TPACE_STREAMS", "3".into()),
    ];
    let msg = refused(&[&small[..], &[("TPACE_K", "13".into())]].concat());
    let k = suggested(&msg, "TPACE_K");
    assert!(k >= 1, "{msg}");
    kept(
        &[&small[..], &[("TPACE_K", k.to_string())]].concat(),
        100_000,
    );
    refused(&[&small[..], &[("TPACE_K", (k + 1).to_string())]].concat());
    // TPACE_K alone at that budget: the model finds a chunk width and streams that fit.
    let model_k = kept(
        &[small[0].clone(), ("TPACE_K", (k + 1).to_string())],
        100_000,
    );
    assert_eq!(model_k.report["k"], (k + 1).to_string());
    // Without TPACE_*: the model's plan within the budget (tests/model_c.rs checks
    // it is the plan `tpace plan` prints); out of core when the grid does not fit.
    let big = kept(&[("TPACE_DEVICE_MEM", "20M".into())], 20_000_000);
    assert!(
        big.stderr
            .contains("(chosen by the model for h100; device "),
        "{}",
        big.stderr
    );
    let out = kept(std::slice::from_ref(&mb), 1_000_000);
    assert_ne!(out.report["schedule"], "incore");
    assert!(refused(&[mb, ("TPACE_SCHEDULE", "incore".into())]).contains("TPACE_SCHEDULE=mmtb"));
}

/// A scalar declared outside the sweep and written at each point before use
/// (Himeno's `s0`, `ss`) is a per-point temporary: both targets keep it private.
#[test]
fn a_per_point_temporary_declared_outside_the_sweep() {
    let source = jacobi_variant("    int n, x, y;", "    int n, x, y;\n    float t;").replace(
        "                a[x][y] = work[x][y];",
        "                t = work[x][y] * 0.5f;\n                a[x][y] = t + t;",
    );
    for (target, flavour) in [
        (Target::Openacc, Flavour::Openacc),
        (Target::Cuda, Flavour::CudaEmulation),
    ] {
        assert_eq!(
            compare_source_on(target, flavour, &source, 13, &params("mmtb", 3, 7, 2)),
            None,
            "{target:?}"
        );
    }
}

/// Himeno's coefficient arrays `a[4][..]`, `b[3][..]`, `c[3][..]`, indexed
/// `a[0][i][j][k]`: every component is an array of its own (cut, moved and
/// compared as one; `examples/himeno.c` runs over the sweep with every example).
#[test]
fn himeno_lists_each_component_as_an_array() {
    assert_components_listed(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/himeno.c"));
}

/// OpenACC has no device timers: with `TPACE_TRACE` set the program says so, writes
/// no trace, and still computes the same arrays.
#[test]
fn openacc_says_it_cannot_trace() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let seq = jacobi_reference(&tc, dir.path(), 5);
    let text = translated_example("jacobi2d.c", Target::Openacc);
    let built = build_ok(&tc, &text, dir.path(), "acc", Flavour::Openacc);
    let trace = dir.path().join("trace.tsv");
    let got = run_with(
        &built.binary,
        5,
        &params("mmtb", 2, 300, 2),
        &[(
            "TPACE_TRACE".to_string(),
            trace.to_string_lossy().into_owned(),
        )],
        &dir.path().join("acc.dump"),
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    assert!(
        got.stderr
            .contains("note: this target has no device timers; TPACE_TRACE is ignored"),
        "{}",
        got.stderr
    );
    assert!(!trace.exists());
}

/// The style fixtures are C as users write it: each builds with
/// `gcc -std=gnu11 -Wall -Wextra -Werror -Wno-unknown-pragmas`; and
/// c_only_host.c and split_vla.c are C that is not C++ (g++ refuses them), so
/// that the CUDA target's host program is tested as C.
#[test]
fn the_style_fixtures_are_valid_c_and_some_are_not_cxx() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/styles");
    let scratch = tempfile::tempdir().expect("scratch folder");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/fixtures/styles") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "c") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
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
            .arg("-lm")
            .output()
            .expect("run gcc");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{name}: gcc reports:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if ["c_only_host.c", "split_vla.c"].contains(&name.as_str()) {
            let cxx = std::process::Command::new("g++")
                .args(["-fsyntax-only", "-x", "c++"])
                .arg(&path)
                .output()
                .expect("run g++");
            assert!(
                !cxx.status.success(),
                "{name} is valid C++: it tests no C-only code"
            );
        }
        count += 1;
    }
    assert!(count >= 8, "only {count} style fixtures");
}
