//! Several devices and MPI ranks (issue 17): every program, translated with
//! `--mpi`, built with Open MPI's wrappers and run under `mpirun -np 1, 2, 3`
//! and with several devices per process (TPACE_GPUS; the CUDA emulation plays
//! 1 to 3 devices, TPACE_EMU_DEVICES), must leave every array bit for bit as
//! the sequential program does and print its output exactly once, over
//! parameter edges: uneven slabs, k larger than the step count, step counts
//! not a multiple of k, one chunk per slab, reductions across ranks. A slab
//! thinner than a block's ghost planes is refused in words, so is a grid with
//! fewer planes than devices; a broken exchange is caught; a failing rank ends
//! every rank with a message naming it.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use tpace::back::{Output, Target};
use tpace::driver;
use tpace::driver::dump::{FLOAT_RTOL, first_difference, printed_difference};
use tpace::driver::run::{Built, Execution, Flavour, Params, Toolchain, execute_as};

/// One run of the translation: ranks (None: no mpirun), devices per process, settings.
struct Case {
    ranks: Option<u64>,
    gpus: u64,
    params: Params,
}

fn case(ranks: Option<u64>, gpus: u64, params: Params) -> Case {
    Case {
        ranks,
        gpus,
        params,
    }
}

/// The toolchain with Open MPI's wrappers on; `None` (with a note) where there is no
/// mpicc here, except in CI, where its absence fails.
fn mpi_toolchain() -> Option<Toolchain> {
    let mut tc = Toolchain::detect();
    tc.mpi = true;
    let present = Command::new(&tc.mpicc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        assert!(
            std::env::var_os("CI").is_none(),
            "mpicc not found in CI: .ci/run installs Open MPI (openmpi-bin, libopenmpi-dev)"
        );
        eprintln!("mpicc not found: the MPI tests did not run here");
        return None;
    }
    Some(tc)
}

fn run_case(
    tc: &Toolchain,
    built: &Built,
    steps: u64,
    c: &Case,
    env: &[(String, String)],
    dump: &Path,
) -> Execution {
    let mut all = Params {
        gpus: Some(c.gpus),
        ..c.params.clone()
    }
    .env();
    all.extend(env.iter().cloned());
    execute_as(
        &built.binary,
        &[steps.to_string()],
        &all,
        dump,
        c.ranks,
        &tc.mpirun,
    )
    .unwrap_or_else(|f| {
        panic!(
            "{} ranks {:?} gpus {}: {f}",
            built.binary.display(),
            c.ranks,
            c.gpus
        )
    })
}

/// Build one program's reference and its --mpi translation, then run the cases.
fn check_devices(
    tc: &Toolchain,
    path: &Path,
    target: Target,
    flavour: Flavour,
    env: &[(String, String)],
) -> usize {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let compiled = compile(path);
    // The preprocessor flags the program's first line asks for, for every build.
    let tc = &fixture_flags(path).toolchain(tc);
    let dir = tempfile::tempdir().expect("scratch folder");
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let out = driver::translate_with(&compiled, target, true).expect("translates");
    let translated = build_ok(tc, &out, dir.path(), "translated", flavour);
    assert!(
        warnings(&translated.warnings).is_empty(),
        "{name}: the --mpi translation builds with warnings:\n{}",
        translated.warnings
    );
    let (ref_dump, got_dump) = (dir.path().join("r.dump"), dir.path().join("t.dump"));
    let mut runs = 0;
    // A pointer rotation ends with each pointer where the step count's parity puts it.
    let rotates = compiled
        .program
        .pipelines
        .iter()
        .any(|p| p.rotation.is_some());
    let counts: &[u64] = if rotates { &[7, 12, 13] } else { &[7, 13] };
    for &steps in counts {
        let seq = run_ok(&reference.binary, steps, &Params::default(), &ref_dump);
        let n = seq.dump[0].dims[0].1 as u64;
        let cases = [
            case(Some(1), 1, Params::default()),
            case(None, 2, Params::default()),
            case(None, 3, params("mmtb", 3, non_divisor(n.div_ceil(3), 2), 2)),
            case(None, 2, params("mm", steps + 5, n, 2)),
            case(
                Some(2),
                1,
                params("mm", 2, non_divisor(n.div_ceil(2), 3), 3),
            ),
            case(Some(3), 1, Params::default()),
            case(Some(2), 2, params("mmtb", 1, 1, 2)),
        ];
        for c in &cases {
            let got = run_case(tc, &translated, steps, c, env, &got_dump);
            let what = format!(
                "{name}: {steps} steps, {} ranks x TPACE_GPUS={} {:?}",
                c.ranks.unwrap_or(1),
                c.gpus,
                c.params
            );
            let devices = c.ranks.unwrap_or(1) * c.gpus;
            assert_eq!(
                got.report.get("devices").map(String::as_str),
                Some(devices.to_string().as_str()),
                "{what}: {}",
                got.stderr
            );
            // A run over several devices says where its time went, before its report.
            if devices > 1 {
                let phases = format!("phases over {devices} device(s)");
                let at = got.stderr.find(&phases);
                let report = got.stderr.rfind("schedule=");
                assert!(
                    at.is_some() && at < report,
                    "{what}: no `{phases}` line before the report: {}",
                    got.stderr
                );
            }
            assert_eq!(
                first_difference(&seq.dump, &got.dump),
                None,
                "{what}: the translation differs from the sequential program"
            );
            // Exactly the sequential program's output: once, not once a rank.
            assert_eq!(
                printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
                None,
                "{what}: the program's own output differs"
            );
            runs += 1;
        }
    }
    runs
}

fn every_program(target: Target, flavour: Flavour, env: &[(String, String)], only_examples: bool) {
    let Some(tc) = mpi_toolchain() else { return };
    let mut failures = Vec::new();
    for path in programs() {
        if only_examples && !path.to_string_lossy().contains("/examples/") {
            continue;
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_devices(&tc, &path, target, flavour, env)
        }));
        match outcome {
            Ok(runs) => eprintln!("{}: {runs} runs identical", path.display()),
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
fn every_program_on_several_devices_and_ranks_matches_openacc() {
    // Every host copy of ghost planes on several threads (tpace_copy_wide), however small.
    let env = [("TPACE_WIDE_COPY_MIN".to_string(), "0".to_string())];
    every_program(Target::Openacc, Flavour::Openacc, &env, false);
}

#[test]
fn every_example_on_emulated_cuda_devices_and_ranks_matches() {
    let env = [("TPACE_EMU_DEVICES".to_string(), "3".to_string())];
    every_program(Target::Cuda, Flavour::CudaEmulation, &env, true);
}

/// A kernel that keeps the program's flat index (hotspot3D's clamped neighbours,
/// issue 26) addresses a slab's buffer from the whole grid's first plane, not
/// the slab's: on several emulated CUDA devices and ranks.
#[test]
fn kept_flat_subscripts_on_several_devices_and_ranks_match() {
    let Some(tc) = mpi_toolchain() else { return };
    let path = program_path("tests/fixtures/ordinary/hotspot3d_do.c");
    let env = [("TPACE_EMU_DEVICES".to_string(), "3".to_string())];
    let runs = check_devices(&tc, &path, Target::Cuda, Flavour::CudaEmulation, &env);
    assert!(runs > 0);
}

/// A program's --mpi OpenACC translation, built in `dir` (with `edit`'s first text
/// replaced by its second).
fn built_mpi(
    tc: &Toolchain,
    dir: &Path,
    file: &str,
    name: &str,
    edit: Option<(&str, &str)>,
) -> Built {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let mut out: Output =
        driver::translate_with(&compile(&path), Target::Openacc, true).expect("translates");
    if let Some((from, to)) = edit {
        out = replace_once(&out, from, to, file);
    }
    build_ok(tc, &out, dir, name, Flavour::Openacc)
}

#[test]
fn a_broken_exchange_or_ghost_copy_is_caught() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let seq = jacobi_reference(&tc, dir.path(), 9);
    let breaks = [
        // A neighbour rank's planes received but never put in place: stale ghost planes.
        (
            "exchange_not_used",
            "    tpace_ghost_from_rank(r, side);\n    d->fill_copy_s",
            "    d->fill_copy_s",
            Some(2),
            1,
            &[][..] as &[(&str, &str)],
        ),
        // The ghost planes of a process's devices not copied at the block's start (where
        // the first block's below a device are copied, not read in place).
        (
            "no_ghost_copy",
            "host_ghost_bytes += tpace_ghost_copy(r, side, lo, hi);",
            "host_ghost_bytes += 0;",
            None,
            2,
            &[("TPACE_IN_PLACE", "0")][..],
        ),
    ];
    for (name, from, to, ranks, gpus, env) in breaks {
        let built = built_mpi(
            &tc,
            dir.path(),
            "examples/jacobi2d.c",
            name,
            Some((from, to)),
        );
        let c = case(ranks, gpus, params("mmtb", 3, 100, 2));
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let got = run_case(&tc, &built, 9, &c, &env, &dir.path().join("b.dump"));
        let diff = first_difference(&seq.dump, &got.dump)
            .unwrap_or_else(|| panic!("{name}: the broken exchange went unnoticed"));
        eprintln!("{name}: caught, {diff}");
    }
}

/// The first block's ghost planes beyond a rank, which every rank's host arrays hold as
/// the program set them up, are uploaded from there, not copied first: bit for bit over
/// three ranks, and the phases line counts them (none with `TPACE_IN_PLACE=0`); read one
/// plane off, the answer is wrong.
#[test]
fn the_first_blocks_ghost_planes_beyond_a_rank_are_read_in_place() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let seq = jacobi_reference(&tc, dir.path(), 9);
    let c = case(Some(3), 1, params("mmtb", 3, 100, 2));
    let built = built_mpi(&tc, dir.path(), "examples/jacobi2d.c", "in_place", None);
    for (setting, none) in [("1", false), ("0", true)] {
        let env = [("TPACE_IN_PLACE".to_string(), setting.to_string())];
        let got = run_case(&tc, &built, 9, &c, &env, &dir.path().join("t.dump"));
        let what = format!("TPACE_IN_PLACE={setting}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        let phases = got
            .stderr
            .lines()
            .rfind(|l| l.contains(": phases over "))
            .unwrap_or_else(|| panic!("{what}: no phases line: {}", got.stderr));
        let bytes = phases
            .split("through host memory, ")
            .nth(1)
            .and_then(|rest| rest.split(" uploaded straight from the host arrays").next())
            .unwrap_or_else(|| panic!("{what}: {phases}"));
        assert_eq!(bytes == "0 B", none, "{what}: {bytes}");
    }
    let off = built_mpi(
        &tc,
        dir.path(),
        "examples/jacobi2d.c",
        "in_place_off",
        Some((
            "tpace_host_plane(r, &r->arrays[a], side == 0 ? d->from : d->own_hi)",
            "tpace_host_plane(r, &r->arrays[a], side == 0 ? d->from + 1 : d->own_hi + 1)",
        )),
    );
    let got = run_case(&tc, &off, 9, &c, &[], &dir.path().join("b.dump"));
    assert!(
        first_difference(&seq.dump, &got.dump).is_some(),
        "ghost planes read one plane off went unnoticed"
    );
}

#[test]
fn a_slab_thinner_than_a_blocks_ghost_planes_is_refused_in_words() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let built = built_mpi(&tc, dir.path(), "examples/jacobi2d.c", "t", None);
    // 1000 planes over 3 ranks: 333 a rank; k = 500 would need 500 ghost planes.
    let mut p = params("mmtb", 500, 100, 2).env();
    p.push(("TPACE_GPUS".into(), "1".into()));
    let out = Command::new(&tc.mpirun)
        .args(["--oversubscribe", "-np", "3"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(&built.binary)
        .arg("600")
        .envs(p)
        .output()
        .expect("mpirun");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("more than the thinnest rank's 333 planes; lower TPACE_K to 333"),
        "{stderr}"
    );
    // More devices than planes: heat2d_asym's grid has 37 planes along the cut axis.
    let small = built_mpi(
        &tc,
        dir.path(),
        "tests/fixtures/layouts/heat2d_asym.c",
        "s",
        None,
    );
    let out = Command::new(&small.binary)
        .arg("5")
        .env("TPACE_GPUS", "64")
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("planes along the cut axis, fewer than the 64 devices"),
        "{stderr}"
    );
}

#[test]
fn a_failing_rank_ends_every_rank_and_says_which() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let built = built_mpi(&tc, dir.path(), "examples/jacobi2d.c", "t", None);
    // Rank 1 alone gets a setting it refuses; rank 0 would wait for it forever.
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export TPACE_K=0; fi; exec {} 20",
        built.binary.display()
    );
    // A hang guard, not a speed bound: coreutils' `timeout` ends mpirun if the
    // other rank waits forever (exit status 124).
    let out = Command::new("timeout")
        .arg("300")
        .arg(&tc.mpirun)
        .args(["--oversubscribe", "-np", "2", "sh", "-c", &script])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(124),
        "the other rank hung (mpirun ended after 5 minutes): {stderr}"
    );
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("tpace: rank 1 of 2: settings: TPACE_K=0 is not a whole number"),
        "{stderr}"
    );
}

#[test]
fn rank_zero_alone_writes_the_programs_files() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("../examples/heat1d.c").replace(
        "    return 0;\n}",
        "    FILE *f = fopen(\"result.txt\", \"w\");\n    if (f) {\n        fprintf(f, \"one line\\n\");\n        fclose(f);\n    }\n    return 0;\n}",
    );
    assert!(
        source.contains("result.txt"),
        "heat1d.c's end changed: update this test"
    );
    let compiled = driver::compile_source("heat1d_file.c", &source).expect("compiles");
    let out = driver::translate_with(&compiled, Target::Openacc, true).expect("translates");
    assert!(
        out.main
            .contains("#define fopen(tpace_path, tpace_mode) tpace_mpi_fopen")
    );
    let built = build_ok(&tc, &out, dir.path(), "t", Flavour::Openacc);
    let run = Command::new(&tc.mpirun)
        .args(["--oversubscribe", "-np", "3"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(&built.binary)
        .arg("5")
        .current_dir(dir.path())
        .output()
        .expect("mpirun");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let written = std::fs::read_to_string(dir.path().join("result.txt")).expect("result.txt");
    assert_eq!(written, "one line\n");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(stdout.matches("heat1d").count(), 1, "{stdout}");
}

/// `tpace run --ranks` end to end: built, run under mpirun, compared.
#[test]
fn tpace_run_with_ranks_and_gpus() {
    if mpi_toolchain().is_none() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args([
            "run",
            "examples/himeno.c",
            "--ranks",
            "2",
            "--gpus",
            "2",
            "--",
            "5",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("tpace run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("identical"), "{stdout}");
    assert!(stdout.contains("devices=4 ranks=2"), "{stdout}");
}

/// Fused kernels on a device's slab read their predecessor's strip only within its
/// rows. With k steps' ghost planes wider than a chunk, the window of a slab's second
/// chunk starts above the strip; the kernels once read rows past it (the values went
/// unused, so results matched, but on the H100 the read left the buffer: heat-3D on
/// 1152x1536x1728 with 2 ranks stopped with an illegal memory access). Built with
/// AddressSanitizer over the CUDA emulation, whose device buffers are `malloc`ed, so
/// a read outside them ends the run.
#[test]
fn fused_kernels_on_slabs_read_only_their_buffers() {
    let mut tc = Toolchain::detect();
    tc.extra_flags = vec!["-fsanitize=address".into(), "-g".into()];
    let dir = tempfile::tempdir().expect("scratch folder");
    // (program, steps, k, b, steps per kernel): k's ghost planes wider than b.
    let cases = [
        ("examples/heat3d.c", 40, 16, 10, 2),
        ("examples/heat3d.c", 40, 12, 7, 3),
        ("examples/jacobi2d.c", 40, 16, 10, 4),
    ];
    for (file, steps, k, b, fuse) in cases {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let compiled = compile(&path);
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let reference = build_ok(
            &tc,
            &reference_of(&compiled),
            dir.path(),
            &format!("{stem}_ref"),
            Flavour::Reference,
        );
        let out = driver::translate_with(&compiled, Target::Cuda, false).expect("translates");
        let built = build_ok(&tc, &out, dir.path(), &stem, Flavour::CudaEmulation);
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        let env = [
            ("TPACE_EMU_DEVICES".to_string(), "2".to_string()),
            ("TPACE_FUSE".to_string(), fuse.to_string()),
            ("ASAN_OPTIONS".to_string(), "detect_leaks=0".to_string()),
        ];
        let what = format!("{file}: 2 devices, mmtb k={k} b={b}, {fuse} steps per kernel");
        let c = case(None, 2, params("mmtb", k, b, 3));
        let got = run_case(&tc, &built, steps, &c, &env, &dir.path().join("t.dump"));
        assert!(
            got.stderr.contains(&format!("fuse={fuse}")),
            "{what}: the plan did not fuse: {}",
            got.stderr
        );
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "{what}: the translation differs from the sequential program"
        );
    }
}
