//! The C port of the performance model (src/back/runtime/model.h), which
//! generated programs run at start-up, against the Rust model that `tpace plan`
//! runs: the same plan and the same predicted time for every example's workload
//! and for edge shapes, and a generated program that, without TPACE_*, runs the
//! plan `tpace plan` prints and stays bit for bit equal to the sequential program.

mod common;

use common::{build_ok, compile, run_ok, run_with};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};
use tpace::model::cmodel::initializer;
use tpace::model::expr::Macros;
use tpace::model::predict::{Machine, Schedule};
use tpace::model::search::choose;
use tpace::model::{Profile, Workload, workload};

/// One search: a workload on a machine under a memory cap (None: the profile's memory).
struct Case {
    label: String,
    w: Workload,
    m: Machine,
    cap: Option<u128>,
}

fn compiled(example: &str) -> tpace::driver::Compiled {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example);
    tpace::driver::compile_file(&path).expect("compiles")
}

/// Every example at its file's extents and at large ones, on the bundled
/// profiles the model can use, under several caps; plus edge shapes.
fn cases() -> Vec<Case> {
    let h100 = Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    let h200 = Machine::from_profile(&Profile::bundled("h200").unwrap()).unwrap();
    let mut out = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut examples: Vec<String> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".c"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 4, "{examples:?}");
    for name in &examples {
        let c = compiled(&format!("examples/{name}"));
        let src = &c.program.source;
        let ext = workload::extents(c.unit(0), &Macros::new(&[], src).unwrap()).unwrap();
        let rank = ext.len();
        let big: Vec<u64> = match rank {
            1 => vec![400_000_000],
            2 => vec![48_000, 48_000],
            _ => vec![2_000, 1_000, 1_000],
        };
        for (extents, steps) in [
            (ext.clone(), 40),
            (ext.clone(), 3),
            (ext.clone(), 0),
            (big.clone(), 2048),
            (big.clone(), 100_001),
        ] {
            let w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
            let grid = u128::from(w.plane) * u128::from(w.n) * 16;
            for m in [&h100, &h200] {
                for cap in [None, Some(grid / 3), Some(grid / 50), Some(u128::MAX >> 1)] {
                    out.push(Case {
                        label: format!(
                            "{name} {extents:?} {steps} steps on {} cap {cap:?}",
                            m.name
                        ),
                        w: w.clone(),
                        m: m.clone(),
                        cap,
                    });
                }
            }
        }
        // One plane, and a cut axis shorter than the stencil's reach.
        for n in [1, 2] {
            let mut extents = ext.clone();
            extents[0] = n;
            let w = Workload::from_unit(c.unit(0), &extents, 9).unwrap();
            out.push(Case {
                label: format!("{name} n={n}"),
                w,
                m: h100.clone(),
                cap: None,
            });
        }
    }
    // The grids of issue 27's sweeps (traced on the H100 on 2026-11-25 under the
    // benchmark's 8G): stream counts tie or nearly tie, and the tie goes to more streams
    // where the copies together outlast the kernels (Jacobi-2D), to fewer where they fit
    // in the kernels' time (heat-3D, CIP-2D without a budget) or one copy outlasts them
    // (Himeno ELARGE on the H200): search.rs `gives_way`.
    let himeno = compiled("examples/himeno.c");
    let elarge = Macros::new(
        &["MIMAX=513".into(), "MJMAX=513".into(), "MKMAX=1025".into()],
        &himeno.program.source,
    )
    .unwrap();
    let himeno_ext = workload::extents(himeno.unit(0), &elarge).unwrap();
    // A spec sheet too (no [[kernels]]): the bandwidth formula prices the depths, all
    // but a 3-D tile kernel alone on its multiprocessor (predict.rs formula_prices).
    let spec_file = root.join("bench/showit/h200-spec.toml");
    let spec = Machine::from_profile(&Profile::load(spec_file.to_str().unwrap()).unwrap()).unwrap();
    for (file, extents, steps) in [
        ("examples/jacobi2d.c", vec![49152, 61440], 128),
        ("examples/heat3d.c", vec![1152, 1536, 1728], 128),
        ("examples/cip2d.c", vec![16384, 16384], 64),
        ("examples/himeno.c", himeno_ext, 64),
    ] {
        let c = compiled(file);
        let w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
        for m in [&h100, &h200, &spec] {
            for cap in [Some(8u128 << 30), Some(4u128 << 30), None] {
                out.push(Case {
                    label: format!("{file} {extents:?} {steps} steps on {} cap {cap:?}", m.name),
                    w: w.clone(),
                    m: m.clone(),
                    cap,
                });
            }
        }
    }
    // A wide halo over a short axis, and budgets that fit only the smallest plans.
    let c = compiled("examples/jacobi2d.c");
    let mut wide = Workload::from_unit(c.unit(0), &[5, 3000], 17).unwrap();
    (wide.h_lo, wide.h_hi, wide.skew, wide.handover_below) = (4, 4, 4, 4);
    out.push(Case {
        label: "halo 4 over 5 planes".into(),
        w: wide,
        m: h100.clone(),
        cap: None,
    });
    let w = Workload::from_unit(c.unit(0), &[20_000, 20_000], 512).unwrap();
    // Device bytes of one plane: both arrays and the swap's second buffer.
    let plane =
        w.plane_bytes(|m| m.movement.on_device()) + u128::from(w.extra_bytes_per_point * w.plane);
    // 3 planes: nothing fits; 4 or 5: only naive (and mm at k = 1, which ties);
    // 6 and more: mmtb too.
    for planes in [3u128, 4, 5, 6, 7, 12, 40] {
        out.push(Case {
            label: format!("jacobi 20000^2 cap {planes} planes"),
            w: w.clone(),
            m: h100.clone(),
            cap: Some(planes * plane),
        });
    }
    out
}

/// One C file with every case and a main that prints each choice and its time.
fn harness(cases: &[Case]) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n",
    );
    c.push_str(tpace::runtime::MODEL);
    for (i, case) in cases.iter().enumerate() {
        writeln!(
            c,
            "static const tpace_model m{i} = {};",
            initializer(&case.w, &case.m)
        )
        .unwrap();
    }
    c.push_str("int main(void)\n{\n    struct timespec t0, t1;\n    tpace_model_choice r;\n");
    for (i, case) in cases.iter().enumerate() {
        let cap = case
            .cap
            .or(case.m.memory_bytes.map(|b| b as u128))
            .unwrap_or(0);
        let (hi, lo) = ((cap >> 64) as u64, cap as u64);
        writeln!(
            c,
            "    {{\n        const tpace_model_run w = {{{n}ULL, {plane}ULL, {steps}ULL}};\n\
             \x20       tpace_u128 cap = ((tpace_u128){hi}ULL << 64) | {lo}ULL;\n\
             \x20       clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);\n\
             \x20       r = tpace_model_choose_fused(&m{i}, &w, cap, -1, 0, 0, 0, 0, TPACE_MC_FUSE_MAX);\n\
             \x20       clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);\n\
             \x20       printf(\"%d %d %llu %llu %llu %.17g %llu %llu %.9f %llu\\n\", r.found, r.best.schedule, r.best.k, \
             r.best.b, r.best.streams, r.seconds, (unsigned long long)(r.device_bytes >> 64), \
             (unsigned long long)r.device_bytes, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), \
             r.fuse);\n\
             \x20   }}",
            n = case.w.n,
            plane = case.w.plane,
            steps = case.w.steps,
        )
        .unwrap();
    }
    c.push_str("    return 0;\n}\n");
    c
}

fn schedule_code(s: Schedule) -> &'static str {
    match s {
        Schedule::Incore => "0",
        Schedule::Naive => "1",
        Schedule::Mm => "2",
        Schedule::Mmtb => "3",
    }
}

#[test]
fn the_c_search_picks_what_the_rust_search_picks() {
    let cases = cases();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("harness.c");
    std::fs::write(&src, harness(&cases)).unwrap();
    let bin = dir.path().join("harness");
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&bin).output().expect("harness runs");
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), cases.len());
    let mut slowest = 0.0f64;
    let mut kinds = std::collections::BTreeSet::new();
    for (case, line) in cases.iter().zip(lines) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let rust = choose(&case.w, &case.m, case.cap);
        let label = &case.label;
        match rust {
            Err(e) => {
                assert!(e.contains("no plan fits"), "{label}: {e}");
                assert_eq!(f[0], "0", "{label}: C found a plan, Rust did not");
                kinds.insert("none fits");
            }
            Ok(choice) => {
                let b = &choice.best;
                let c = b.config;
                assert_eq!(f[0], "1", "{label}: C found no plan");
                let want = [
                    schedule_code(c.schedule).to_string(),
                    c.k.to_string(),
                    c.b.to_string(),
                    c.streams.to_string(),
                ];
                assert_eq!(&f[1..5], &want, "{label}: C picked {line}, Rust {c:?}");
                let seconds: f64 = f[5].parse().unwrap();
                let rel = (seconds - b.total_s).abs() / b.total_s.abs().max(1e-300);
                assert!(
                    rel <= 1e-9 || seconds == b.total_s,
                    "{label}: C {seconds}, Rust {}",
                    b.total_s
                );
                let bytes = (f[6].parse::<u128>().unwrap() << 64) | f[7].parse::<u128>().unwrap();
                assert_eq!(bytes, b.device_bytes, "{label}");
                // The steps per kernel the search chose among every count the kernels
                // have (where the plan fuses at all: naive ignores the count, so there
                // the first count tried wins the tie in both).
                if b.fuse > 1 {
                    assert_eq!(f[9], b.fuse.to_string(), "{label}: steps per kernel");
                    kinds.insert(if b.fuse == 4 {
                        "fused 4"
                    } else {
                        "fused, not 4"
                    });
                }
                kinds.insert(c.schedule.name());
            }
        }
        slowest = slowest.max(f[8].parse().unwrap());
    }
    // The cases reach every schedule and a cap nothing fits under.
    for kind in ["incore", "naive", "mm", "mmtb", "fused 4", "fused, not 4"] {
        assert!(kinds.contains(kind), "no case picks {kind}: {kinds:?}");
    }
    // A program searches once at start-up: it must cost next to nothing (CPU time, so
    // that other processes on a busy machine do not count).
    assert!(slowest < 0.05, "slowest C search took {slowest} s");
    eprintln!("slowest C search: {:.3} ms", slowest * 1e3);
}

/// `tpace plan`'s best plan for an example: schedule, k, b, streams.
fn tpace_plan(
    example: &str,
    target: Target,
    steps: u64,
    cap: Option<u128>,
) -> (String, u64, u64, u64) {
    let mut args = vec![
        "plan".to_string(),
        example.to_string(),
        "--target".into(),
        target.name().into(),
        "--steps".into(),
        steps.to_string(),
    ];
    if let Some(c) = cap {
        args.extend(["--mem-cap".into(), c.to_string()]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(&args)
        .output()
        .expect("tpace plan runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let best = text
        .lines()
        .find_map(|l| l.strip_prefix("best plan: "))
        .unwrap_or_else(|| panic!("no best plan in:\n{text}"));
    let words: Vec<&str> = best.split_whitespace().collect();
    let num = |key: &str| -> u64 {
        words
            .iter()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} missing in `{best}`"))
            .parse()
            .unwrap()
    };
    (words[0].to_string(), num("k="), num("b="), num("streams="))
}

/// Without TPACE_SCHEDULE, TPACE_K, TPACE_CHUNK and TPACE_STREAMS a generated
/// program runs the plan `tpace plan` prints for its extents, steps and
/// budget, says the model chose it, needs the memory the model counts, and
/// still leaves every array bit for bit as the sequential program does.
#[test]
fn without_tpace_variables_a_program_runs_the_plan_tpace_plan_prints() {
    let tc = Toolchain::detect();
    let h100 = Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    let mut schedules = std::collections::BTreeSet::new();
    for (example, target, flavour) in [
        ("examples/jacobi2d.c", Target::Openacc, Flavour::Openacc),
        ("examples/heat3d.c", Target::Cuda, tc.cuda_flavour()),
    ] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let c = compile(&root.join(example));
        let dir = tempfile::tempdir().unwrap();
        let reference = build_ok(
            &tc,
            &common::reference_of(&c),
            dir.path(),
            "reference",
            Flavour::Reference,
        );
        let translated = build_ok(
            &tc,
            &tpace::driver::translate(&c, target).unwrap(),
            dir.path(),
            "translated",
            flavour,
        );
        let extents =
            workload::extents(c.unit(0), &Macros::new(&[], &c.program.source).unwrap()).unwrap();
        for steps in [1u64, 7, 40] {
            let seq = run_ok(
                &reference.binary,
                steps,
                &Params::default(),
                &dir.path().join("r.dump"),
            );
            let mut w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
            if !target.fuses_steps() {
                w = w.with_fusion(None, &c.program.pipelines[0].arrays);
            }
            let per_plane = w.plane_bytes(|m| m.movement.on_device())
                + u128::from(w.extra_bytes_per_point * w.plane);
            let grid = per_plane * u128::from(w.n);
            for cap in [None, Some(grid / 2), Some(grid / 7), Some(per_plane * 9)] {
                let Ok(choice) = choose(&w, &h100, cap) else {
                    continue;
                };
                let env: Vec<(String, String)> = cap
                    .map(|c| ("TPACE_DEVICE_MEM".to_string(), c.to_string()))
                    .into_iter()
                    .collect();
                let got = run_with(
                    &translated.binary,
                    steps,
                    &Params::default(),
                    &env,
                    &dir.path().join("t.dump"),
                );
                let what = format!("{example}, {steps} steps, budget {cap:?}");
                let r = &got.report;
                let reported = (
                    r["schedule"].clone(),
                    r["k"].parse::<u64>().unwrap(),
                    r["b"].parse::<u64>().unwrap(),
                    r["streams"].parse::<u64>().unwrap(),
                );
                assert_eq!(reported, tpace_plan(example, target, steps, cap), "{what}");
                assert!(
                    got.stderr
                        .contains("(chosen by the model for h100; device "),
                    "{what}: {}",
                    got.stderr
                );
                let bytes: u128 = r["device_bytes"].parse().unwrap();
                assert_eq!(bytes, choice.best.device_bytes, "{what}");
                let predicted: f64 = r["predicted_seconds"].parse().unwrap();
                let rel = (predicted - choice.best.total_s).abs() / choice.best.total_s;
                assert!(
                    rel < 1e-8,
                    "{what}: predicted {predicted} vs {}",
                    choice.best.total_s
                );
                assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
                assert_eq!(got.stdout, seq.stdout, "{what}");
                schedules.insert(reported.0);
            }
        }
    }
    // The budgets drive the model both in core and out of core.
    assert!(schedules.contains("incore"), "{schedules:?}");
    assert!(schedules.len() >= 2, "{schedules:?}");
}

/// A variable the user sets is kept, the model chooses the rest and says so;
/// all four set, the model chooses nothing.
#[test]
fn user_variables_are_honoured_and_the_model_fills_in_the_rest() {
    let tc = Toolchain::detect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let c = compile(&root.join("examples/jacobi2d.c"));
    let dir = tempfile::tempdir().unwrap();
    let built = build_ok(
        &tc,
        &tpace::driver::translate(&c, Target::Openacc).unwrap(),
        dir.path(),
        "t",
        Flavour::Openacc,
    );
    let dump = dir.path().join("t.dump");
    let budget = vec![("TPACE_DEVICE_MEM".to_string(), "2000000".to_string())];
    let only_k = Params {
        k: Some(4),
        ..Params::default()
    };
    let got = run_with(&built.binary, 13, &only_k, &budget, &dump);
    assert_eq!(got.report["k"], "4");
    // k is set: only mm and mmtb use it.
    assert!(
        ["mm", "mmtb"].contains(&got.report["schedule"].as_str()),
        "{:?}",
        got.report
    );
    assert!(
        got.stderr
            .contains("(TPACE_K set by the user, the rest chosen by the model for h100; device "),
        "{}",
        got.stderr
    );
    let all = common::params("mmtb", 3, 100, 2);
    let got = run_with(&built.binary, 13, &all, &budget, &dump);
    assert_eq!(
        (
            got.report["k"].as_str(),
            got.report["b"].as_str(),
            got.report["streams"].as_str()
        ),
        ("3", "100", "2")
    );
    assert!(
        got.stderr.contains("(set by TPACE_*; device "),
        "{}",
        got.stderr
    );
    // A budget no plan fits keeps the old refusal.
    let tiny = vec![("TPACE_DEVICE_MEM".to_string(), "1000".to_string())];
    let out = tpace::driver::run::execute(&built.binary, &["13".into()], &tiny, &dump);
    let Err(err) = out else {
        panic!("a 1000-byte budget was not refused")
    };
    let err = err.0;
    assert!(err.contains("raise TPACE_DEVICE_MEM"), "{err}");
}

/// Over several devices the program runs the plan the Rust model chooses for them
/// (`tpace plan --devices`): the same k, schedule and streams, the same predicted
/// time (the exchange per block included), and still the sequential answer.
#[test]
fn several_devices_run_the_plan_the_model_chooses_for_them() {
    let tc = Toolchain::detect();
    let h100 = Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let c = compile(&root.join("examples/jacobi2d.c"));
    let dir = tempfile::tempdir().unwrap();
    let reference = build_ok(
        &tc,
        &common::reference_of(&c),
        dir.path(),
        "r",
        Flavour::Reference,
    );
    let translated = build_ok(
        &tc,
        &tpace::driver::translate(&c, Target::Openacc).unwrap(),
        dir.path(),
        "t",
        Flavour::Openacc,
    );
    let extents =
        workload::extents(c.unit(0), &Macros::new(&[], &c.program.source).unwrap()).unwrap();
    let mut ks = std::collections::BTreeSet::new();
    for (devices, steps, cap) in [
        (2u64, 7u64, None),
        (3, 40, None),
        (2, 40, Some(2_000_000u128)),
    ] {
        let mut w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
        w = w.with_fusion(None, &c.program.pipelines[0].arrays);
        let d = tpace::model::devices::choose_devices(&w, &h100, cap, devices, 1, devices, false)
            .unwrap();
        let mut env = vec![("TPACE_GPUS".to_string(), devices.to_string())];
        if let Some(cap) = cap {
            env.push(("TPACE_DEVICE_MEM".to_string(), cap.to_string()));
        }
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        let got = run_with(
            &translated.binary,
            steps,
            &Params::default(),
            &env,
            &dir.path().join("t.dump"),
        );
        let what = format!("{devices} devices, {steps} steps, cap {cap:?}");
        let r = &got.report;
        let best = d.choice.best.config;
        assert_eq!(r["devices"], devices.to_string(), "{what}");
        assert_eq!(r["schedule"], best.schedule.name(), "{what}");
        assert_eq!(r["k"].parse::<u64>().unwrap(), best.k, "{what}");
        assert_eq!(r["streams"].parse::<u64>().unwrap(), best.streams, "{what}");
        let predicted: f64 = r["predicted_seconds"].parse().unwrap();
        assert!(
            (predicted - d.total_s).abs() <= 1e-8 * d.total_s,
            "{what}: predicted {predicted} vs {}",
            d.total_s
        );
        assert!(
            got.stderr.contains(&format!("over {devices} devices")),
            "{what}"
        );
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        ks.insert(best.k);
    }
    assert!(!ks.is_empty());
}
