//! `tpace probe` end to end, on the CPU emulation of CUDA (CI has no GPU): the
//! probe builds, runs, and writes a profile that loads and that `tpace plan`
//! accepts; without a GPU and without `--emulate` it refuses in words.

use std::process::Command;

fn tpace(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tpace")
}

/// `tpace plan PROGRAM ARGS... --machine MACHINE`, which must succeed: its report.
fn plan_on(machine: &std::path::Path, program: &str, args: &[&str]) -> String {
    let path = machine.to_str().expect("a UTF-8 path");
    let all = [&["plan", program][..], args, &["--machine", path]].concat();
    let plan = tpace(&all);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    String::from_utf8_lossy(&plan.stdout).into_owned()
}

#[test]
fn the_probe_writes_a_profile_that_loads() {
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = dir.path().join("cpu.toml");
    let out = tpace(&[
        "probe",
        "--emulate",
        "--bytes",
        "2000000",
        "--name",
        "cpu",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = tpace::model::Profile::load(path.to_str().unwrap()).expect("the profile loads");
    assert_eq!(p.name, "cpu");
    for (field, f) in [
        ("memory_gbs", p.memory_gbs.clone()),
        ("h2d_gbs", p.h2d_gbs.clone()),
        ("d2h_gbs", p.d2h_gbs.clone()),
        ("duplex_gbs", p.duplex_gbs.clone()),
        ("compute_units", p.compute_units.clone()),
    ] {
        let f = f.unwrap_or_else(|| panic!("{field} missing"));
        assert!(f.value > 0.0, "{field} = {}", f.value);
        assert!(f.source.contains("CPU emulation"), "{field}: {}", f.source);
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("not a GPU"), "{text}");
    // tpace's own kernels, timed per type, shape class and depth (one step and fused).
    for elem in ["float", "double"] {
        for shape in ["2d-r1", "3d-r1", "2d-r2"] {
            for fuse in [1, 2] {
                let k = p
                    .kernel(elem, shape, fuse)
                    .unwrap_or_else(|| panic!("no [[kernels]] {elem} {shape} {fuse}:\n{text}"));
                assert!(k.ps > 0.0 && k.bytes > 0.0 && k.rows > 0, "{k:?}");
                assert!(k.source.contains("CPU emulation"), "{}", k.source);
                assert!(k.source.contains("TPACE_TRACE"), "{}", k.source);
                // Fused launches aimed at one wave of the emulation's 4 "multiprocessors".
                let units = p.compute_units.as_ref().unwrap().value as u64;
                match (fuse, k.blocks) {
                    (1, b) => assert_eq!(b, None, "{k:?}"),
                    (_, Some(b)) => assert!(b >= units && b % units == 0, "{k:?}"),
                    (_, None) => panic!("a fused entry without its blocks: {k:?}"),
                }
            }
        }
    }
    // `tpace plan` takes the file as a machine, and prices the kernels by its entries.
    // On the emulation fused kernels are much slower than one step per kernel (their
    // barriers are threads meeting), so the CUDA plan follows the figures to one step.
    let fused_slower =
        p.kernel("float", "2d-r1", 4).unwrap().ps > p.kernel("float", "2d-r1", 1).unwrap().ps;
    for target in ["cuda", "openacc"] {
        let out = plan_on(
            &path,
            "examples/jacobi2d.c",
            &["--target", target, "--steps", "100"],
        );
        assert!(
            out.contains("kernel cost        measured ([[kernels]]): float 2d-r1, "),
            "{target}: {out}"
        );
        if target == "openacc" || fused_slower {
            assert!(
                out.contains("float 2d-r1, 1 step(s) per kernel"),
                "{target}: {out}"
            );
        }
        if target == "cuda" && fused_slower {
            assert!(out.contains(" fuse=1 "), "{out}");
        }
    }
}

/// `--into` refreshes a profile in place: the measured figures and the kernels
/// replaced, the name, comments and the other figures kept; a profile without
/// `[[kernels]]` (an old one) still plans, from its bandwidth figures.
#[test]
fn the_probe_refreshes_a_profile_in_place() {
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = dir.path().join("h100.toml");
    let old = std::fs::read_to_string("profiles/h100.toml").unwrap();
    // The profile as it was before it had kernels: it loads and plans.
    let bare: String = match old.find("# ---- [[kernels]]") {
        Some(at) => old[..at].to_string(),
        None => old.clone(),
    };
    std::fs::write(&path, &bare).unwrap();
    let before = tpace::model::Profile::load(path.to_str().unwrap()).expect("loads");
    assert!(before.kernels.is_empty());
    let out = plan_on(
        &path,
        "examples/heat3d.c",
        &["--target", "cuda", "--steps", "64"],
    );
    assert!(
        out.contains("kernel cost        from the bandwidth figures"),
        "{out}"
    );
    let run = tpace(&[
        "probe",
        "--emulate",
        "--bytes",
        "2000000",
        "--into",
        path.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let after = tpace::model::Profile::load(path.to_str().unwrap()).expect("loads");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after.name, "h100", "{text}");
    assert_eq!(after.stencil_gbs, before.stencil_gbs);
    assert_eq!(after.tile_bytes, before.tile_bytes);
    assert!(after.h2d_gbs.unwrap().source.contains("CPU emulation"));
    assert!(!after.kernels.is_empty());
    assert!(
        after
            .kernels
            .iter()
            .all(|k| k.source.contains("CPU emulation"))
    );
    assert!(
        text.starts_with("# Refreshed by `tpace probe --into`"),
        "{text}"
    );
    // A file that is not there is refused before anything runs.
    let missing = dir.path().join("none.toml");
    let out = tpace(&["probe", "--emulate", "--into", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
    assert!(!missing.exists());
}

#[test]
fn without_a_gpu_the_probe_refuses_in_words() {
    let has_gpu = Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success());
    if has_gpu {
        return; // the refusal is for machines without one
    }
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = dir.path().join("never.toml");
    let out = tpace(&["probe", "-o", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs nvcc and a CUDA GPU") && err.contains("--emulate"),
        "{err}"
    );
    assert!(!path.exists(), "a refused probe wrote {}", path.display());
}

/// `--mpi` adds the exchange between two MPI ranks, which `plan --devices` uses.
#[test]
fn the_probe_measures_the_exchange_between_two_ranks() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    if !Command::new(&mpicc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(std::env::var_os("CI").is_none(), "mpicc not found in CI");
        eprintln!("mpicc not found: the exchange probe did not run here");
        return;
    }
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = dir.path().join("mpi.toml");
    let out = tpace(&[
        "probe",
        "--emulate",
        "--mpi",
        "--bytes",
        "4000000",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = tpace::model::Profile::load(path.to_str().unwrap()).expect("the profile loads");
    let gbs = p.exchange_gbs.expect("exchange_gbs measured");
    let latency = p.exchange_latency_us.expect("exchange_latency_us measured");
    assert!(
        gbs.value > 0.0 && latency.value > 0.0,
        "{gbs:?} {latency:?}"
    );
    assert!(gbs.source.contains("MPI"), "{}", gbs.source);
    let text = plan_on(
        &path,
        "examples/jacobi2d.c",
        &["--steps", "100", "--devices", "2"],
    );
    assert!(text.contains("2 devices (2 rank(s))"), "{text}");
}
