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
        ("memory_gbs", p.memory_gbs),
        ("h2d_gbs", p.h2d_gbs),
        ("d2h_gbs", p.d2h_gbs),
        ("duplex_gbs", p.duplex_gbs),
        ("compute_units", p.compute_units),
    ] {
        let f = f.unwrap_or_else(|| panic!("{field} missing"));
        assert!(f.value > 0.0, "{field} = {}", f.value);
        assert!(f.source.contains("CPU emulation"), "{field}: {}", f.source);
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("not a GPU"), "{text}");
    // `tpace plan` takes the file as a machine.
    let plan = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--steps",
        "100",
        "--machine",
        path.to_str().unwrap(),
    ]);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
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
    let plan = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--steps",
        "100",
        "--devices",
        "2",
        "--machine",
        path.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    assert!(text.contains("2 devices (2 rank(s))"), "{text}");
}
