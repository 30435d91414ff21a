//! Several devices that scale (issue 25): the devices of one process run at once
//! (each on a host thread of its own), their ghost planes go device to device where
//! the devices reach each other (CUDA peer copies, played by the emulation), and
//! after the pipeline an array goes only to the ranks that read it: rank 0 alone
//! where the program only outputs it, every rank where what follows may depend on
//! it. Every run is compared bit for bit with the sequential program; each check
//! is shown to fail where the runtime is broken on purpose.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use tpace::back::{Output, Target};
use tpace::driver;
use tpace::driver::dump::{FLOAT_RTOL, first_difference, printed_difference};
use tpace::driver::run::{Built, Execution, Flavour, Params, Toolchain, execute_as};

/// Jacobi-2D at X x Y, as the example is otherwise.
fn jacobi_source(x: u32, y: u32) -> String {
    let src = include_str!("../examples/jacobi2d.c");
    let out = src
        .replace("#define X 1000", &format!("#define X {x}"))
        .replace("#define Y 600", &format!("#define Y {y}"));
    assert_ne!(
        out, src,
        "examples/jacobi2d.c's extents changed: update this test"
    );
    out
}

/// The sequential reference and the translation (with `edit`'s first text replaced by
/// its second, once), built in `dir`.
fn builds(
    tc: &Toolchain,
    dir: &Path,
    name: &str,
    source: &str,
    target: Target,
    mpi: bool,
    edit: Option<(&str, &str)>,
) -> (Built, Built) {
    let compiled = driver::compile_source(&format!("{name}.c"), source).expect("compiles");
    let reference = build_ok(
        tc,
        &reference_of(&compiled),
        dir,
        &format!("{name}_ref"),
        Flavour::Reference,
    );
    let mut out: Output = driver::translate_with(&compiled, target, mpi).expect("translates");
    if let Some((from, to)) = edit {
        out = replace_once(&out, from, to, name);
    }
    let flavour = match target {
        Target::Cuda => Flavour::CudaEmulation,
        _ => Flavour::Openacc,
    };
    let translated = build_ok(
        tc,
        &out,
        dir,
        &format!("{name}_{}", edit.is_some()),
        flavour,
    );
    assert!(
        warnings(&translated.warnings).is_empty(),
        "{name}: the translation builds with warnings:\n{}",
        translated.warnings
    );
    (reference, translated)
}

/// Run `binary` for `steps` steps (under mpirun with `ranks`), with `params` and `env`.
fn run(
    tc: &Toolchain,
    binary: &Path,
    steps: u64,
    ranks: Option<u64>,
    params: &Params,
    env: &[(&str, &str)],
    dump: &Path,
) -> Execution {
    let mut all = params.env();
    all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    execute_as(binary, &[steps.to_string()], &all, dump, ranks, &tc.mpirun)
        .unwrap_or_else(|f| panic!("{} {ranks:?} {params:?} {env:?}: {f}", binary.display()))
}

/// `source` built as `name`: its sequential run of `steps` steps and its translation
/// for `target` (`--mpi` where `mpi`).
fn sequential_and_translated(
    tc: &Toolchain,
    dir: &Path,
    name: &str,
    source: &str,
    (target, mpi): (Target, bool),
    steps: u64,
) -> (Built, Execution) {
    let (reference, translated) = builds(tc, dir, name, source, target, mpi, None);
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.join("r.dump"),
    );
    (translated, seq)
}

/// A program broken on purpose: `source` built as `name` for `target` (`--mpi` where
/// `mpi`) with `edit`'s first text replaced by its second.
struct Broken<'a> {
    name: &'a str,
    source: &'a str,
    target: Target,
    mpi: bool,
    edit: (&'a str, &'a str),
}

/// Build `b`, run it `steps` steps (under mpirun with `ranks`) with `p` and `env`, and
/// assert that its arrays differ from the sequential run `seq`: the break is caught.
fn assert_caught(
    tc: &Toolchain,
    dir: &Path,
    b: &Broken,
    (steps, ranks): (u64, Option<u64>),
    (p, env): (&Params, &[(&str, &str)]),
    seq: &Execution,
    what: &str,
) {
    let (_, broken) = builds(tc, dir, b.name, b.source, b.target, b.mpi, Some(b.edit));
    let got = run(
        tc,
        &broken.binary,
        steps,
        ranks,
        p,
        env,
        &dir.join("b.dump"),
    );
    assert!(
        first_difference(&seq.dump, &got.dump).is_some(),
        "{what} went unnoticed"
    );
}

/// The phases line of a run over several devices (the last one: the last pipeline's).
fn phases(got: &Execution) -> &str {
    got.stderr
        .lines()
        .rfind(|l| l.contains(": phases over "))
        .unwrap_or_else(|| panic!("no phases line: {}", got.stderr))
}

/// The text between `before` and `after` in `line`.
fn between<'a>(line: &'a str, before: &str, after: &str) -> &'a str {
    let start = line
        .find(before)
        .unwrap_or_else(|| panic!("no `{before}` in {line}"))
        + before.len();
    let end = line[start..]
        .find(after)
        .unwrap_or_else(|| panic!("no `{after}` after `{before}` in {line}"));
    &line[start..start + end]
}

/// The kernels' intervals of a TPACE_TRACE file over several devices, per device.
fn kernel_intervals(trace: &str) -> std::collections::BTreeMap<u32, Vec<(f64, f64)>> {
    let mut lines = trace.lines();
    let header = lines.next().expect("a header line");
    assert!(header.ends_with("\tdevice"), "no device column: {header}");
    let mut by_device = std::collections::BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 9, "{line}");
        if f[4] != "kernels" {
            continue;
        }
        let (from, to): (f64, f64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
        assert!(from <= to, "{line}");
        by_device
            .entry(f[8].parse::<u32>().unwrap())
            .or_insert_with(Vec::new)
            .push((from, to));
    }
    by_device
}

/// Pairs of one device's kernels and the other's that ran at the same time.
fn overlapping(a: &[(f64, f64)], b: &[(f64, f64)]) -> usize {
    a.iter()
        .map(|x| b.iter().filter(|y| x.0.max(y.0) < x.1.min(y.1)).count())
        .sum()
}

/// Two devices of one process run at once: from the trace (the emulation's device
/// timers are the host's clock), kernels of one device run while the other's do.
/// The kernels take tens of milliseconds each (20 to 40 on an idle CPU), so that on a loaded machine of one or
/// two cores the two host threads' time slices still interleave within them.
/// With TPACE_THREADS=0 the same program issues both devices' work from one thread
/// and waits for one device after the other: then no two kernels overlap, which is
/// what the check catches (the devices serialised before issue 25).
#[test]
fn the_devices_of_one_process_run_at_once() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 12;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "jacobi_overlap",
        &jacobi_source(600, 240),
        (Target::Cuda, false),
        steps,
    );
    let trace = dir.path().join("trace.tsv");
    let trace_text = trace.display().to_string();
    let p = Params {
        gpus: Some(2),
        ..params("mmtb", 6, 75, 2)
    };
    for threads in ["1", "0"] {
        let env = [
            ("TPACE_EMU_DEVICES", "2"),
            ("TPACE_TRACE", trace_text.as_str()),
            ("TPACE_THREADS", threads),
        ];
        let got = run(
            &tc,
            &translated.binary,
            steps,
            None,
            &p,
            &env,
            &dir.path().join("t.dump"),
        );
        let what = format!("TPACE_THREADS={threads}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        assert_eq!(got.report["devices"], "2", "{what}");
        let kernels = kernel_intervals(&std::fs::read_to_string(&trace).expect("the trace"));
        assert_eq!(kernels.len(), 2, "{what}: {kernels:?}");
        let (a, b) = (&kernels[&0], &kernels[&1]);
        let pairs = overlapping(a, b);
        if threads == "1" {
            assert!(
                phases(&got).contains("every device at once, one host thread each"),
                "{what}: {}",
                phases(&got)
            );
            assert!(
                pairs > 0,
                "{what}: the devices' kernels never overlap: {a:?} {b:?}"
            );
        } else {
            assert!(
                phases(&got).contains("devices issued in turn from one thread"),
                "{what}"
            );
            assert_eq!(
                pairs, 0,
                "{what}: devices waited for one after the other overlap: {a:?} {b:?}"
            );
        }
    }
}

/// One run of the peer test: plan, devices, settings, whether ghost planes go device to device.
type PeerRun = (Params, u64, Vec<(String, String)>, bool);

/// Jacobi-2D 300 x 64 for three devices of one process (host path, OpenACC), named
/// `name`: its translation, its sequential run of 9 steps, and the program to break.
fn jacobi_on_three_devices<'a>(
    tc: &Toolchain,
    dir: &Path,
    name: &'a str,
    source: &'a str,
) -> (Built, Execution, Broken<'a>) {
    let (translated, seq) =
        sequential_and_translated(tc, dir, name, source, (Target::Openacc, false), 9);
    let broken = Broken {
        name,
        source,
        target: Target::Openacc,
        mpi: false,
        edit: ("", ""),
    };
    (translated, seq, broken)
}

/// Three devices, mmtb with blocks of k steps, chunks of b planes, 2 streams.
fn three_devices(k: u64, b: u64) -> Params {
    Params {
        gpus: Some(3),
        ..params("mmtb", k, b, 2)
    }
}

/// The first block's ghost planes above a device, which the device above overwrites with
/// its first downloads, are copied by the caller's thread while the devices start the
/// block; those downloads wait for the copy. Three devices of one process (host path,
/// OpenACC), the copy 200 ms late: bit for bit; without the wait, not.
#[test]
fn the_first_blocks_ghost_planes_above_are_copied_while_the_block_starts() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = jacobi_source(300, 64);
    let (translated, seq, broken) =
        jacobi_on_three_devices(&tc, dir.path(), "late_ghosts", &source);
    // Blocks of 4 steps, and one block of all 9 (k = 9).
    for k in [4, 9] {
        let late = Late {
            env: &[("TPACE_LATE_GHOSTS_DELAY_MS", "200")],
            wait: (
                "if (to > s->dev[g].late_lo && from < s->dev[g].late_hi)",
                "if (to > s->dev[g].late_lo && from < s->dev[g].late_hi && 0)",
            ),
            what: format!("the first block's ghost planes above a device copied late, k = {k}"),
            ranks: None,
            params: three_devices(k, 20),
        };
        late.holds_and_its_wait_is_needed(&tc, dir.path(), &translated.binary, &broken, &seq);
    }
}

/// The first block's ghost planes below a device, in the slab of the device below it, are
/// uploaded straight from the host arrays, not copied first; the device below downloads
/// there only once those uploads are done. Three devices of one process (host path,
/// OpenACC), the uploads 200 ms late: bit for bit, and the phases line counts the bytes
/// read in place; without the wait, a wrong answer; with `TPACE_IN_PLACE=0`, nothing read
/// in place and the same answer.
#[test]
fn the_first_blocks_ghost_planes_below_are_read_in_place() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = jacobi_source(300, 64);
    let (translated, seq, broken) =
        jacobi_on_three_devices(&tc, dir.path(), "below_in_place", &source);
    // Blocks of 4 steps, one block of all 9 (k = 9), and chunks of 2 planes: the ghost
    // planes below a device span five chunks, more than the two slots.
    for (k, b) in [(4, 20), (9, 20), (9, 2)] {
        let params = three_devices(k, b);
        let in_place = |env: &[(&str, &str)]| {
            let got = run(
                &tc,
                &translated.binary,
                9,
                None,
                &params,
                env,
                &dir.path().join("p.dump"),
            );
            assert_eq!(
                first_difference(&seq.dump, &got.dump),
                None,
                "k = {k}, b = {b}, {env:?}"
            );
            between(
                phases(&got),
                "through host memory, ",
                " uploaded straight from the host arrays",
            )
            .to_string()
        };
        assert_ne!(
            in_place(&[]),
            "0 B",
            "k = {k}, b = {b}: two devices have ghost planes below"
        );
        assert_eq!(
            in_place(&[("TPACE_IN_PLACE", "0")]),
            "0 B",
            "k = {k}, b = {b}"
        );
        let late = Late {
            env: &[("TPACE_BELOW_DELAY_MS", "200")],
            wait: (
                "if (to > s->dev[g].below_lo && from < s->dev[g].below_hi)",
                "if (to > s->dev[g].below_lo && from < s->dev[g].below_hi && 0)",
            ),
            what: format!(
                "the first block's ghost planes below a device read in place, late, k = {k}, b = {b}"
            ),
            ranks: None,
            params,
        };
        late.holds_and_its_wait_is_needed(&tc, dir.path(), &translated.binary, &broken, &seq);
    }
}

/// Arrays no sweep writes (coefficients that vary along the cut axis, read 3 planes
/// out) have their ghost planes uploaded straight from the host arrays in every block,
/// where another device of the process holds them: bit for bit over three devices and
/// several blocks, and with `TPACE_IN_PLACE=0` (copied) nothing is read in place.
#[test]
fn ghost_planes_of_arrays_only_read_are_read_in_place() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let fixture = include_str!("fixtures/layouts/wide_coefficients.c");
    let source = fixture.replace("#define X 47", "#define X 150");
    assert_ne!(source, fixture, "wide_coefficients.c's extent changed");
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "coefficients_in_place",
        &source,
        (Target::Cuda, false),
        steps,
    );
    let params = Params {
        gpus: Some(3),
        ..params("mmtb", 2, 5, 2)
    };
    for (setting, none) in [("1", false), ("0", true)] {
        let got = run(
            &tc,
            &translated.binary,
            steps,
            None,
            &params,
            &[("TPACE_IN_PLACE", setting)],
            &dir.path().join("h.dump"),
        );
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "TPACE_IN_PLACE={setting}"
        );
        let bytes = between(
            phases(&got),
            "through host memory, ",
            " uploaded straight from the host arrays",
        );
        assert_eq!(bytes == "0 B", none, "TPACE_IN_PLACE={setting}: {bytes}");
    }
}

/// Ghost planes between the devices of one process go device to device where they
/// reach each other (peer copies), through host memory with TPACE_PEER=0 or where
/// they do not (TPACE_EMU_PEER=0): the same answer, bit for bit, either way, over
/// several blocks, uneven slabs, both schedules. A device that reads the ghost planes
/// of the wrong block gives a wrong answer.
#[test]
fn ghost_planes_go_device_to_device_where_devices_reach_each_other() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("../examples/heat3d.c");
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "heat3d_peer",
        source,
        (Target::Cuda, false),
        steps,
    );
    let mut runs: Vec<PeerRun> = Vec::new();
    let set = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    runs.push((params("mmtb", 2, 7, 3), 3, set(&[]), true));
    runs.push((params("mm", 3, 10, 2), 3, set(&[]), true));
    runs.push((params("mmtb", 4, 5, 2), 2, set(&[]), true));
    runs.push((
        params("mmtb", 2, 7, 3),
        3,
        set(&[("TPACE_PEER", "0")]),
        false,
    ));
    runs.push((
        params("mmtb", 2, 7, 3),
        3,
        set(&[("TPACE_EMU_PEER", "0")]),
        false,
    ));
    runs.push((
        params("mmtb", 2, 7, 3),
        3,
        set(&[("TPACE_THREADS", "0")]),
        true,
    ));
    let mut plan_bytes = 0u64;
    let mut i = 0;
    while i < runs.len() {
        let (p, gpus, extra, device_to_device) = runs[i].clone();
        i += 1;
        let mut env = vec![("TPACE_EMU_DEVICES", "3")];
        env.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let p = Params {
            gpus: Some(gpus),
            ..p
        };
        let got = run(
            &tc,
            &translated.binary,
            steps,
            None,
            &p,
            &env,
            &dir.path().join("t.dump"),
        );
        let what = format!("{gpus} devices {p:?} {extra:?}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        let peer = between(phases(&got), "ghost planes ", " device to device");
        if device_to_device {
            assert_ne!(
                peer,
                "0 B",
                "{what}: no ghost planes went device to device: {}",
                phases(&got)
            );
        } else {
            assert_eq!(peer, "0 B", "{what}: {}", phases(&got));
        }
        // Under a budget that the plan alone fills, no room is left for them on the devices;
        // under one twice as large, there is.
        if extra.first().is_some_and(|(k, _)| k == "TPACE_PEER") {
            plan_bytes = got.report["device_bytes"].parse().unwrap();
            for (budget, fits) in [(plan_bytes, false), (2 * plan_bytes, true)] {
                runs.push((
                    params("mmtb", 2, 7, 3),
                    3,
                    set(&[("TPACE_DEVICE_MEM", &budget.to_string())]),
                    fits,
                ));
            }
        }
    }
    assert!(plan_bytes > 0 && runs.len() == 8);
    // The next block's ghost planes copied into the buffer the current block reads.
    let (_, broken) = builds(
        &tc,
        dir.path(),
        "heat3d_peer",
        source,
        Target::Cuda,
        false,
        Some((
            "const int parity = (int)((ch->t / s->k + 1) % 2);",
            "const int parity = (int)((ch->t / s->k) % 2);",
        )),
    );
    let p = Params {
        gpus: Some(3),
        ..params("mmtb", 2, 7, 3)
    };
    for peer in ["1", "0"] {
        let env = [("TPACE_EMU_DEVICES", "3"), ("TPACE_PEER", peer)];
        let got = run(
            &tc,
            &broken.binary,
            steps,
            None,
            &p,
            &env,
            &dir.path().join("b.dump"),
        );
        assert!(
            first_difference(&seq.dump, &got.dump).is_some(),
            "TPACE_PEER={peer}: ghost planes of the wrong block went unnoticed"
        );
    }
    // The first block's ghost planes not uploaded into the device copies it reads.
    let no_upload = Broken {
        name: "heat3d_peer",
        source,
        target: Target::Cuda,
        mpi: false,
        edit: (
            "            tpace_ghost_upload_first(s, g, side);",
            "            (void)tpace_ghost_upload_first;",
        ),
    };
    assert_caught(
        &tc,
        dir.path(),
        &no_upload,
        (steps, None),
        (&p, &[("TPACE_EMU_DEVICES", "3")]),
        &seq,
        "the first block's ghost planes missing on the device",
    );
}

/// The number after `host cores a process: ` in a phases line.
fn host_cores(got_stderr: &str) -> u64 {
    let line = got_stderr
        .lines()
        .rfind(|l| l.contains(": phases over "))
        .unwrap_or_else(|| panic!("no phases line: {got_stderr}"));
    let at = line
        .find("host cores a process: ")
        .unwrap_or_else(|| panic!("no host cores in {line}"));
    line[at + "host cores a process: ".len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no core count in {line}"))
}

/// mpirun binds each rank to one core where it starts two or fewer (Open MPI's
/// default), and a rank needs more (a host thread per device, copies of ghost planes
/// and results on several threads): a rank bound to fewer cores than its share of the
/// node's takes its share and says so; TPACE_BIND=keep keeps mpirun's binding; any
/// other value is refused in words. The answer is the sequential one every time.
#[test]
fn a_rank_bound_to_one_core_takes_its_share_of_the_node() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("../examples/jacobi2d.c");
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "jacobi_bind",
        source,
        (Target::Openacc, true),
        steps,
    );
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let dump = dir.path().join("t.dump");
    let mpirun = |bind: &str| {
        Command::new(&tc.mpirun)
            .args(["--oversubscribe", "--bind-to", "core", "-np", "1"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("TPACE_GPUS", "2")
            .env("TPACE_BIND", bind)
            .env("TPACE_DUMP", &dump)
            .arg(&translated.binary)
            .arg(steps.to_string())
            .output()
            .expect("mpirun")
    };
    for bind in ["", "share", "keep"] {
        let out = mpirun(bind);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "TPACE_BIND={bind}: {stderr}");
        let got = driver::dump::read(&dump).expect("the run's dump");
        assert_eq!(first_difference(&seq.dump, &got), None, "TPACE_BIND={bind}");
        let cores = host_cores(&stderr);
        if bind == "keep" || allowed < 2 {
            assert_eq!(cores, 1, "TPACE_BIND={bind}: {stderr}");
            assert!(!stderr.contains("mpirun had bound it"), "{stderr}");
        } else {
            assert!(cores >= 2, "TPACE_BIND={bind}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "host cores a process: {cores}, its share of the node's (mpirun had bound it to 1;"
                )),
                "{stderr}"
            );
        }
    }
    let out = mpirun("all");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("TPACE_BIND is `share`") && stderr.contains("or `keep`"),
        "{stderr}"
    );
}

/// The toolchain with Open MPI's wrappers; `None` (with a note) where there is no
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

/// Jacobi-2D prints a checksum of `a` and nothing else reads it: rank 0 alone receives
/// it after the pipeline, every other rank's planes once (less than one grid), and the
/// answer is the sequential one, its output printed once. Over 3 ranks the slabs are
/// uneven (1000 planes).
#[test]
fn rank_zero_alone_receives_what_only_output_reads() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("../examples/jacobi2d.c");
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "jacobi_root",
        source,
        (Target::Openacc, true),
        steps,
    );
    let grid_bytes = 1000 * 600 * 4;
    for (ranks, gpus, p) in [
        (3, 1, params("mmtb", 3, 70, 2)),
        (2, 2, params("mm", 4, 90, 3)),
        (3, 2, Params::default()),
    ] {
        let p = Params {
            gpus: Some(gpus),
            ..p
        };
        let got = run(
            &tc,
            &translated.binary,
            steps,
            Some(ranks),
            &p,
            &[],
            &dir.path().join("t.dump"),
        );
        let what = format!("{ranks} ranks x {gpus} devices {p:?}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        assert_eq!(
            printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
            None,
            "{what}"
        );
        let line = phases(&got);
        assert_eq!(
            between(line, "to rank 0 alone: ", ";"),
            "a",
            "{what}: {line}"
        );
        assert_eq!(
            between(line, "to every rank: ", ";"),
            "none",
            "{what}: {line}"
        );
        let moved: u64 = between(line, "; ", " bytes between ranks")
            .rsplit("; ")
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // Every plane but rank 0's, once: 1000 planes of 600 floats over `ranks * gpus` slabs.
        let devices = ranks * gpus;
        let rank0: u64 = (0..gpus)
            .map(|e| 1000 / devices + u64::from(e < 1000 % devices))
            .sum();
        assert_eq!(moved, (1000 - rank0) * 600 * 4, "{what}: {line}");
        assert!(moved < grid_bytes, "{what}");
    }
}

/// A program with two pipelines (tests/fixtures/styles/two_phases.c): the second reads
/// what the first leaves, so every rank receives the first's arrays; the second's are
/// only printed, so rank 0 alone receives them. Bit for bit over uneven slabs; and
/// were the first's arrays sent to rank 0 alone, the other ranks would start the
/// second pipeline from stale planes: a wrong answer.
#[test]
fn every_rank_receives_what_a_later_pipeline_reads() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("fixtures/styles/two_phases.c");
    let steps = 7;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "two_phases",
        source,
        (Target::Openacc, true),
        steps,
    );
    for (ranks, gpus, p) in [
        (3, 1, params("mmtb", 2, 5, 2)),
        (2, 2, params("mm", 3, 4, 2)),
    ] {
        let p = Params {
            gpus: Some(gpus),
            ..p
        };
        let got = run(
            &tc,
            &translated.binary,
            steps,
            Some(ranks),
            &p,
            &[],
            &dir.path().join("t.dump"),
        );
        let what = format!("{ranks} ranks x {gpus} devices {p:?}");
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
        let lines: Vec<&str> = got
            .stderr
            .lines()
            .filter(|l| l.contains(": phases over "))
            .collect();
        assert_eq!(lines.len(), 2, "{what}: {}", got.stderr);
        assert_eq!(
            between(lines[0], "to rank 0 alone: ", ";"),
            "none",
            "{what}: {}",
            lines[0]
        );
        assert_ne!(
            between(lines[0], "to every rank: ", ";"),
            "none",
            "{what}: {}",
            lines[0]
        );
        assert_eq!(
            between(lines[1], "to rank 0 alone: ", ";"),
            "u",
            "{what}: {}",
            lines[1]
        );
    }
    // The first pipeline's arrays to rank 0 alone: the second starts from stale planes.
    let to_root = Broken {
        name: "two_phases",
        source,
        target: Target::Openacc,
        mpi: true,
        edit: (
            "    /* arrays[0]: every rank receives it after the pipeline",
            "    arrays[0].to_root = arrays[1].to_root = 1; /* arrays[0]: every rank receives it after the pipeline",
        ),
    };
    let p = Params {
        gpus: Some(1),
        ..params("mmtb", 2, 5, 2)
    };
    assert_caught(
        &tc,
        dir.path(),
        &to_root,
        (steps, Some(3)),
        (&p, &[]),
        &seq,
        "the first pipeline's arrays sent to rank 0 alone",
    );
}

/// A double program whose fused kernels opt in to more shared memory than a kernel gets
/// without asking (on every device: the opt-in is per device), and a stencil of radius
/// three, over 2 devices of one process and 3 ranks of 2 devices each: slabs of uneven
/// planes (23 and 47 along the cut axis), several blocks, bit for bit.
#[test]
fn a_double_program_and_a_wide_halo_over_devices_and_ranks() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    for (file, p, fuse) in [
        (
            "tests/fixtures/layouts/heat3d_double.c",
            params("mmtb", 4, 5, 2),
            "4",
        ),
        (
            "tests/fixtures/layouts/star2d_halo3.c",
            params("mmtb", 2, 5, 3),
            "1",
        ),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let source = std::fs::read_to_string(&path).expect("fixture");
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (reference, translated) =
            builds(&tc, dir.path(), &name, &source, Target::Cuda, true, None);
        let steps = 8;
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        for (ranks, gpus) in [(None, 2), (Some(3), 2), (Some(3), 1)] {
            let p = Params {
                gpus: Some(gpus),
                ..p.clone()
            };
            let env = [("TPACE_EMU_DEVICES", "2"), ("TPACE_FUSE", fuse)];
            let got = run(
                &tc,
                &translated.binary,
                steps,
                ranks,
                &p,
                &env,
                &dir.path().join("t.dump"),
            );
            let what = format!("{file}: {ranks:?} ranks x {gpus} devices {p:?}");
            assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
            assert!(
                got.stderr.contains(&format!("fuse={fuse} ")),
                "{what}: {}",
                got.stderr
            );
        }
    }
}

/// What the phases line says of the results that went to rank 0 as the last block's
/// chunks finished: bytes sent while the senders' blocks ran, bytes sent after them,
/// bytes of those copied straight into rank 0's memory. `None` where none went early.
fn early_results(line: &str) -> Option<(u64, u64, u64)> {
    let at = line.find("to rank 0 as the last block's chunks finished: ")?;
    let text = &line[at..];
    let number = |before: &str, after: &str| -> u64 {
        between(text, before, after)
            .parse()
            .unwrap_or_else(|e| panic!("`{before}`: {e} in {line}"))
    };
    Some((
        number("finished: ", " bytes sent while"),
        number("blocks ran, ", " after them"),
        number("of which ", " copied straight"),
    ))
}

/// The bytes every rank but 0 owns of `arrays` arrays of `plane` floats a plane: `n`
/// planes over `ranks` ranks of `gpus` devices, split as the runtime's tpace_slab does.
fn other_ranks_bytes(n: u64, ranks: u64, gpus: u64, plane: u64, arrays: u64) -> u64 {
    let devices = ranks * gpus;
    let rank0: u64 = (0..gpus)
        .map(|e| n / devices + u64::from(e < n % devices))
        .sum();
    (n - rank0) * plane * 4 * arrays
}

/// Whether this machine lets one process write another's memory (process_vm_writev) the
/// way rank 0 asks for: Yama's ptrace_scope absent, 0 or 1 (rank 0 sets PR_SET_PTRACER).
fn node_local_copies_allowed() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map(|s| s.trim().parse::<u32>().unwrap_or(3) <= 1)
        .unwrap_or(true)
}

/// Jacobi-2D's `a` is only printed after the pipeline, so rank 0 alone receives it, and
/// it need not wait for the pipeline's end: as each chunk of the last block is final on
/// a rank, its planes go to rank 0, by MPI (TPACE_CMA=0, or where the system refuses
/// one process writing another's memory: TPACE_CMA=2 plays that) or copied straight
/// into rank 0's memory by threads of the sending rank. Over 2 and 3 ranks, uneven
/// slabs (601 planes), one block (k >= steps) and several (k < steps, steps not a
/// multiple of k), one chunk per slab, 2 devices per rank: bit for bit, every other
/// rank's planes once, and with many chunks in the last block, sent while the blocks
/// ran (were the pieces sent after the blocks, as TPACE_EARLY_RESULTS=0 does, none
/// would be).
#[test]
fn results_reach_rank_zero_as_the_chunks_finish() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let (reference, translated) = builds(
        &tc,
        dir.path(),
        "jacobi_early",
        &jacobi_source(601, 240),
        Target::Cuda,
        true,
        None,
    );
    let copies = node_local_copies_allowed();
    let steps = 12;
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    // (ranks, devices a rank, plan, whether the last block has many chunks a slab)
    let cases = [
        (2, 1, params("mmtb", 12, 25, 2), true),
        (3, 1, params("mmtb", 12, 25, 2), true),
        (3, 1, params("mmtb", 5, 30, 2), false),
        (2, 2, params("mm", 4, 40, 3), false),
        (2, 1, params("mmtb", 20, 1000, 1), false),
        (3, 1, params("mm", 7, 1000, 2), false),
    ];
    for (ranks, gpus, p, many_chunks) in cases {
        let p = Params {
            gpus: Some(gpus),
            ..p
        };
        for cma in ["0", "1", "2"] {
            let env = [("TPACE_EMU_DEVICES", "2"), ("TPACE_CMA", cma)];
            let got = run(
                &tc,
                &translated.binary,
                steps,
                Some(ranks),
                &p,
                &env,
                &dir.path().join("t.dump"),
            );
            let what = format!("{ranks} ranks x {gpus} devices {p:?} TPACE_CMA={cma}");
            assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
            assert_eq!(
                printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
                None,
                "{what}"
            );
            let line = phases(&got);
            let whole = other_ranks_bytes(601, ranks, gpus, 240, 1);
            let (during, after, copied) =
                early_results(line).unwrap_or_else(|| panic!("{what}: nothing went early: {line}"));
            assert_eq!(during + after, whole, "{what}: {line}");
            let moved: u64 = between(line, "; ", " bytes between ranks")
                .rsplit("; ")
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(moved, whole, "{what}: {line}");
            match cma {
                "1" if copies => assert_eq!(copied, whole, "{what}: {line}"),
                "1" => eprintln!("{what}: node-local copies refused here (Yama): {line}"),
                _ => assert_eq!(copied, 0, "{what}: {line}"),
            }
            // Sent as the chunks finished: while the senders' blocks ran, where one block
            // has many chunks a slab (a short last block may end before this thread
            // wakes). Copies wait until rank 0's last block has begun, which a loaded
            // machine may delay past a sender's blocks: the MPI path alone is held to it.
            if many_chunks && cma != "1" {
                assert!(
                    during > 0,
                    "{what}: nothing sent while the blocks ran: {line}"
                );
            }
        }
    }
    // After the blocks, as before: nothing goes early, the answer is the same.
    let p = Params {
        gpus: Some(1),
        ..params("mmtb", 12, 25, 2)
    };
    let env = [("TPACE_EARLY_RESULTS", "0")];
    let got = run(
        &tc,
        &translated.binary,
        steps,
        Some(2),
        &p,
        &env,
        &dir.path().join("t.dump"),
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    assert_eq!(early_results(phases(&got)), None, "{}", phases(&got));
}

/// Run `binary` under mpirun with `ranks` ranks, `env` on every rank and `root_env` on
/// rank 0 alone (a shell sets it where Open MPI says the rank is 0).
fn run_rank_zero_apart(
    tc: &Toolchain,
    binary: &Path,
    steps: u64,
    ranks: u64,
    env: &[(String, String)],
    root_env: &str,
    dump: &Path,
) -> Result<Execution, tpace::driver::Failure> {
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then export {root_env}; fi; exec {} {steps}",
        binary.display()
    );
    let args = ["-c".to_string(), script];
    execute_as(
        Path::new("/bin/sh"),
        &args,
        env,
        dump,
        Some(ranks),
        &tc.mpirun,
    )
}

/// Where the results come into rank 0's arrays, they must not come before rank 0's last
/// block has taken the ghost planes it reads there (the last block is the only one
/// here: its ghost planes are the program's starting values). With rank 0 late to its
/// last block (TPACE_RESULTS_DELAY_MS on rank 0 alone, for tests), the other ranks
/// finish first and wait for its leave: bit for bit, by MPI and by node-local copies.
/// Copy threads that did not wait for it would overwrite those planes with final values
/// first: caught. And with every other rank late instead (each finished range held
/// back), rank 0 waits for all of it after its blocks: bit for bit too.
#[test]
fn results_come_into_rank_zero_only_when_it_lets_them() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = jacobi_source(400, 200);
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "jacobi_late",
        &source,
        (Target::Openacc, true),
        steps,
    );
    let p = Params {
        gpus: Some(1),
        ..params("mmtb", 9, 70, 2)
    };
    let env_of = |cma: &str| -> Vec<(String, String)> {
        let mut env = p.env();
        env.push(("TPACE_CMA".into(), cma.into()));
        env
    };
    let check =
        |built: &Built, ranks: u64, env: &[(String, String)], root_env: &str, what: &str| {
            let dump = dir.path().join("t.dump");
            let got = run_rank_zero_apart(&tc, &built.binary, steps, ranks, env, root_env, &dump)
                .unwrap_or_else(|f| panic!("{what}: {f}"));
            (
                first_difference(&seq.dump, &got.dump).is_none()
                    && printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL).is_none(),
                got,
            )
        };
    for (ranks, cma) in [(2, "0"), (3, "0"), (2, "1"), (3, "1")] {
        let what = format!("{ranks} ranks, TPACE_CMA={cma}, rank 0 late");
        let (same, got) = check(
            &translated,
            ranks,
            &env_of(cma),
            "TPACE_RESULTS_DELAY_MS=400",
            &what,
        );
        assert!(same, "{what}: the translation differs: {}", got.stderr);
        let mut late = env_of(cma);
        late.push(("TPACE_RESULTS_DELAY_MS".into(), "100".into()));
        let what = format!("{ranks} ranks, TPACE_CMA={cma}, the senders late");
        let (same, got) = check(&translated, ranks, &late, "TPACE_RESULTS_DELAY_MS=0", &what);
        assert!(same, "{what}: the translation differs: {}", got.stderr);
    }
    if !node_local_copies_allowed() {
        eprintln!("node-local copies refused here (Yama): the copy threads' break not played");
        return;
    }
    let (_, broken) = builds(
        &tc,
        dir.path(),
        "jacobi_late",
        &source,
        Target::Openacc,
        true,
        Some((
            "        while (!m->quit && !(m->go && m->queue != NULL))",
            "        while (!m->quit && m->queue == NULL)",
        )),
    );
    let (same, got) = check(
        &broken,
        2,
        &env_of("1"),
        "TPACE_RESULTS_DELAY_MS=400",
        "copies before rank 0's leave",
    );
    assert!(
        !same,
        "copies written before rank 0 took its ghost planes went unnoticed: {}",
        got.stderr
    );
}

/// One pipeline whose arrays go both ways: `u` is only printed (rank 0 alone receives it,
/// early), `v` decides the exit status (every rank receives it, after the blocks).
/// Braceless loop nests, on emulated CUDA devices and the OpenACC host path, 2 and 3
/// ranks (uneven), one block and several: bit for bit.
#[test]
fn early_and_every_rank_arrays_in_one_pipeline() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    for target in [Target::Cuda, Target::Openacc] {
        let (reference, translated) = builds(
            &tc,
            dir.path(),
            "two_fields",
            TWO_FIELDS,
            target,
            true,
            None,
        );
        let steps = 10;
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        for (ranks, p) in [
            (2, params("mmtb", 10, 30, 2)),
            (3, params("mmtb", 3, 25, 2)),
            (3, params("mm", 4, 1000, 2)),
        ] {
            let p = Params { gpus: Some(1), ..p };
            let got = run(
                &tc,
                &translated.binary,
                steps,
                Some(ranks),
                &p,
                &[],
                &dir.path().join("t.dump"),
            );
            let what = format!("{target:?}: {ranks} ranks {p:?}");
            assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
            assert_eq!(
                printed_difference(&seq.stdout, &got.stdout, FLOAT_RTOL),
                None,
                "{what}"
            );
            let line = phases(&got);
            assert_eq!(
                between(line, "to rank 0 alone: ", ";"),
                "u",
                "{what}: {line}"
            );
            assert_eq!(between(line, "to every rank: ", ";"), "v", "{what}: {line}");
            let (during, after, _) = early_results(line).expect("u goes early");
            assert_eq!(
                during + after,
                other_ranks_bytes(301, ranks, 1, 48, 1),
                "{what}: {line}"
            );
        }
    }
}

/// Over ranks the program runs the plan the Rust model chooses for them (`tpace plan
/// --devices --ranks`), with the same predicted time: the results that go to rank 0 as
/// the last block's chunks finish priced by what the last block leaves (one block, and
/// several).
#[test]
fn ranks_run_the_plan_and_the_prediction_of_the_model() {
    use tpace::model::expr::Macros;
    use tpace::model::predict::Machine;
    use tpace::model::{Profile, Workload, workload};
    let Some(tc) = mpi_toolchain() else { return };
    let h100 = Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    let dir = tempfile::tempdir().expect("scratch folder");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let c = common::compile(&path);
    let translated = build_ok(
        &tc,
        &driver::translate_with(&c, Target::Openacc, true).expect("translates"),
        dir.path(),
        "jacobi_model",
        Flavour::Openacc,
    );
    let extents =
        workload::extents(c.unit(0), &Macros::new(&[], &c.program.source).unwrap()).unwrap();
    for (ranks, steps) in [(2u64, 7u64), (3, 300)] {
        let w = Workload::from_unit(c.unit(0), &extents, steps)
            .unwrap()
            .with_fusion(None, &c.program.pipelines[0].arrays);
        let d = tpace::model::devices::choose_devices(&w, &h100, None, ranks, ranks, ranks, false)
            .unwrap();
        let got = run(
            &tc,
            &translated.binary,
            steps,
            Some(ranks),
            &Params {
                gpus: Some(1),
                ..Params::default()
            },
            &[],
            &dir.path().join("t.dump"),
        );
        let what = format!("{ranks} ranks, {steps} steps");
        let r = &got.report;
        assert_eq!(
            r["k"].parse::<u64>().unwrap(),
            d.choice.best.config.k,
            "{what}"
        );
        assert_eq!(
            r["b"].parse::<u64>().unwrap(),
            d.choice.best.config.b,
            "{what}"
        );
        let predicted: f64 = r["predicted_seconds"].parse().unwrap();
        assert!(
            (predicted - d.total_s).abs() <= 1e-8 * d.total_s,
            "{what}: predicted {predicted} vs {}",
            d.total_s
        );
        assert!(d.results_s > 0.0, "{what}");
    }
}

/// Two fields advanced together; only `u` is printed, `v` decides the exit status.
const TWO_FIELDS: &str = r#"#include <stdio.h>
#include <stdlib.h>

#define X 301
#define Y 48

static float u[X][Y];
static float v[X][Y];

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 10;
    int x, y, n;
    for (x = 0; x < X; x++)
        for (y = 0; y < Y; y++) {
            u[x][y] = (float)((x * 13 + y * 7) % 29) / 3.0f;
            v[x][y] = (float)((x + 5 * y) % 11) / 5.0f;
        }
#pragma tpace init
#pragma tpace pipeline targetinout(u, v) size([0:X][0:Y]) halo([1:1][1:1])
    for (n = 0; n < steps; n++) {
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                v[x][y] = 0.5f * v[x][y] + 0.125f * (u[x - 1][y] + u[x + 1][y] + u[x][y - 1] + u[x][y + 1]);
#pragma tpace loop dim(2)
        for (x = 1; x < X - 1; x++)
#pragma tpace loop dim(1)
            for (y = 1; y < Y - 1; y++)
                u[x][y] = u[x][y] + 0.1f * (v[x - 1][y] + v[x + 1][y] - 2.0f * v[x][y]);
    }
    if (v[X / 2][Y / 2] > 1e30f) {
        printf("diverged\n");
        return 1;
    }
    double s = 0.0;
    for (x = 0; x < X; x++)
        for (y = 0; y < Y; y++)
            s += u[x][y] * (double)((x + 2 * y) % 7 + 1);
    printf("two fields %dx%d, %d steps: checksum %.9e\n", X, Y, steps, s);
    return 0;
}
"#;

/// Ghost planes between two ranks of one node are copied straight out of the
/// neighbour's memory by the rank that reads them (on several threads; MPI carries
/// only where they are and that they were taken), by MPI where TPACE_CMA=0 or the
/// system refuses (TPACE_CMA=2 plays that): bit for bit either way, over 3 ranks
/// (uneven slabs), several blocks (k = 2, 9 steps) and 2 devices a rank. A copy that
/// takes half the planes gives a wrong answer.
#[test]
fn ghost_planes_between_ranks_of_one_node_come_out_of_the_neighbours_memory() {
    let Some(tc) = mpi_toolchain() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let source = include_str!("../examples/heat3d.c");
    let steps = 9;
    let (translated, seq) = sequential_and_translated(
        &tc,
        dir.path(),
        "heat3d_pull",
        source,
        (Target::Openacc, true),
        steps,
    );
    let allowed = node_local_copies_allowed();
    for (ranks, gpus) in [(3, 1), (2, 2)] {
        for cma in ["1", "0", "2"] {
            let p = Params {
                gpus: Some(gpus),
                ..params("mmtb", 2, 5, 2)
            };
            let env = [("TPACE_CMA", cma), ("TPACE_WIDE_COPY_MIN", "0")];
            let got = run(
                &tc,
                &translated.binary,
                steps,
                Some(ranks),
                &p,
                &env,
                &dir.path().join("t.dump"),
            );
            let what = format!("{ranks} ranks x {gpus} TPACE_CMA={cma}");
            assert_eq!(first_difference(&seq.dump, &got.dump), None, "{what}");
            let line = phases(&got);
            let pulled = between(
                line,
                "between ranks ",
                " copied out of the neighbour's memory",
            );
            let by_mpi = between(line, "neighbour's memory, ", " by MPI");
            // Where a block's start holds a rank up, in seconds (docs/scale-out.md).
            for part in [
                "packing edge planes for the neighbours ",
                "chunks waiting for the neighbours' planes ",
                "and copying them ",
            ] {
                let secs = between(line, part, " s");
                assert!(secs.parse::<f64>().is_ok(), "{what}: `{part}`: {line}");
            }
            if cma == "1" && allowed {
                assert!(pulled != "0 B" && by_mpi == "0 B", "{what}: {line}");
            } else {
                assert!(pulled == "0 B" && by_mpi != "0 B", "{what}: {line}");
            }
        }
    }
    if !allowed {
        eprintln!(
            "this system refuses one process reading another's memory: the broken copy is not tried"
        );
        return;
    }
    let half = Broken {
        name: "heat3d_pull",
        source,
        target: Target::Openacc,
        mpi: true,
        edit: ("dst, from, bytes,", "dst, from, bytes / 2,"),
    };
    let p = Params {
        gpus: Some(1),
        ..params("mmtb", 2, 5, 2)
    };
    assert_caught(
        &tc,
        dir.path(),
        &half,
        (steps, Some(3)),
        (&p, &[]),
        &seq,
        "half a neighbour's ghost planes copied",
    );
    // The planes above a rank's slab are lent, not packed: the rank's last chunks overwrite
    // them only once the rank above has taken them. That rank 200 ms late to take them:
    // the same answer; without the wait, not.
    let late = Late {
        env: &[("TPACE_PULL_DELAY_MS", "200")],
        wait: (
            "if (!s->lent || to <= s->lent_lo",
            "if (1 || to <= s->lent_lo",
        ),
        what: "the rank above late to take the planes lent to it".into(),
        ranks: Some(3),
        params: three_ranks(),
    };
    late.holds_and_its_wait_is_needed(&tc, dir.path(), &translated.binary, &half, &seq);
    // The planes below a rank's slab are packed by the caller's thread while the block's
    // first chunks run, and its downloads there wait for it. 200 ms late to pack: the same
    // answer, by either path; without the wait, not.
    for cma in ["1", "0"] {
        let late = Late {
            env: &[("TPACE_PACK_DELAY_MS", "200"), ("TPACE_CMA", cma)],
            wait: (
                "if (to > s->pack_lo[side] && from < s->pack_hi[side])",
                "if (0)",
            ),
            what: format!("a rank late to pack its edge planes, TPACE_CMA={cma}"),
            ranks: Some(3),
            params: three_ranks(),
        };
        late.holds_and_its_wait_is_needed(&tc, dir.path(), &translated.binary, &half, &seq);
    }
}

/// A part of the exchange made late on purpose (`env`), and the wait that makes that
/// harmless (`wait`: its text and the text that removes it), over `ranks` ranks (None:
/// one process) with `params`.
struct Late<'a> {
    env: &'a [(&'a str, &'a str)],
    wait: (&'a str, &'a str),
    what: String,
    ranks: Option<u64>,
    params: Params,
}

/// Three ranks of one device each, mmtb k = 2: blocks enough for every exchange.
fn three_ranks() -> Params {
    Params {
        gpus: Some(1),
        ..params("mmtb", 2, 5, 2)
    }
}

impl Late<'_> {
    /// `binary` (`broken`'s program) late as `env` says gives the sequential answer `seq`
    /// over 9 steps; built without the wait, it does not.
    fn holds_and_its_wait_is_needed(
        &self,
        tc: &Toolchain,
        dir: &Path,
        binary: &Path,
        broken: &Broken,
        seq: &Execution,
    ) {
        let steps = 9;
        let (ranks, p) = (self.ranks, &self.params);
        let got = run(tc, binary, steps, ranks, p, self.env, &dir.join("t.dump"));
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "{}",
            self.what
        );
        let no_wait = Broken {
            edit: self.wait,
            name: broken.name,
            source: broken.source,
            target: broken.target,
            mpi: broken.mpi,
        };
        assert_caught(
            tc,
            dir,
            &no_wait,
            (steps, ranks),
            (p, self.env),
            seq,
            &format!("{}, without the wait", self.what),
        );
    }
}
