//! `tpace plan` end to end: the binary on the examples prints the chosen
//! plan, its time breakdown, its memory and the runners-up, and how many plans
//! its search predicted (the work, which the tests bound; how fast the release
//! binary plans is timed by `bench/plan-speed.sh`, not here).

use std::path::Path;
use std::process::{Command, Output};

/// Run the binary.
fn tpace(args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .current_dir(root)
        .args(args)
        .output()
        .expect("tpace runs")
}

/// The plans the search predicted, fitting and too big, from the report's
/// `model:` line.
fn plans_predicted(report: &str) -> usize {
    let line = report
        .lines()
        .find(|l| l.starts_with("model: "))
        .unwrap_or_else(|| panic!("no model line in:\n{report}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |after: &str| -> usize {
        let at = words.iter().position(|w| w.starts_with(after)).unwrap();
        words[at - 1].parse().unwrap()
    };
    number("plans") + number("too")
}

/// The search's work for a grid of any size: it grows with the logarithm of
/// the extents and the step count (the unit test
/// `the_search_predicts_a_bounded_number_of_plans_for_any_grid` has the exact
/// bound), so a search that became exhaustive in k or b fails here. For 48 000
/// planes and 2048 steps it predicts about 23 000 plans per steps-per-kernel
/// count; an exhaustive b alone would be over 40 million.
const MOST_PLANS_PER_DEPTH: usize = 60_000;

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The report of a `tpace plan` run that must succeed.
fn report_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text(out)
}

/// The report's sections, in order, and the numbers a reader looks for.
fn check_structure(report: &str) {
    let sections = [
        "plan for h100",
        "\n  grid ",
        "\n  device memory cap ",
        "\nbest plan: ",
        "\n  predicted time ",
        "\n  host-to-device ",
        "\n  device-to-host ",
        "\n  kernels ",
        "\n  launches ",
        "\n  device-to-device ",
        "\n  hidden by overlap ",
        "\n  device memory ",
        "\nnext best:",
        "\nmodel: ",
    ];
    let mut at = 0;
    for s in sections {
        let found = report[at..]
            .find(s)
            .unwrap_or_else(|| panic!("`{s}` missing or out of order in:\n{report}"));
        at += found + s.len();
    }
    let best = report
        .lines()
        .find(|l| l.starts_with("best plan: "))
        .unwrap();
    for key in [" k=", " b=", " streams="] {
        assert!(best.contains(key), "{best}");
    }
    let table: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("next best:"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(table.len() >= 2, "too few alternatives:\n{report}");
    for row in table {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert!(
            ["incore", "naive", "mm", "mmtb"].contains(&cols[0]),
            "bad row `{row}`"
        );
        assert!(cols[4].parse::<f64>().is_ok(), "bad total in `{row}`");
    }
}

#[test]
fn jacobi2d_out_of_core_plan() {
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--machine",
        "h100",
        "--set",
        "X=48000",
        "--set",
        "Y=48000",
        "--steps",
        "2048",
        "--mem-cap",
        "8GB",
    ]);
    let report = report_of(&out);
    check_structure(&report);
    assert!(report.contains("grid 48000 x 48000"), "{report}");
    assert!(report.contains("2048 steps"), "{report}");
    assert!(report.contains("device memory cap 8.00 GB"), "{report}");
    assert!(report.contains("best plan: mmtb"), "{report}");
    // One step per kernel (the OpenACC default target): one depth searched.
    assert!(plans_predicted(&report) <= MOST_PLANS_PER_DEPTH, "{report}");
}

/// Issue 19 item 1 on the grid traced on the H100 (2026-11-25, CUDA, 8G, 128 steps):
/// two streams ran 0.440 to 0.449 s, three and four 0.404 s. The plan takes more than
/// two, says S=2 is slower by the queues' round trip, and names the slack tie.
#[test]
fn the_traced_jacobi2d_grid_gets_more_than_two_streams() {
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--target",
        "cuda",
        "--machine",
        "h100",
        "--set",
        "X=49152",
        "--set",
        "Y=61440",
        "--steps",
        "128",
        "--mem-cap",
        "8G",
    ]);
    let report = report_of(&out);
    check_structure(&report);
    let best = report
        .lines()
        .find(|l| l.starts_with("best plan: "))
        .unwrap();
    assert!(best.contains("mmtb k=128"), "{best}");
    assert!(
        !best.contains("streams=2") && !best.contains("streams=1"),
        "{best}"
    );
    let streams = report
        .lines()
        .find(|l| l.trim_start().starts_with("streams "))
        .unwrap();
    let seconds = |s: &str| -> f64 {
        let at = streams.find(&format!("{s} ")).unwrap() + s.len() + 1;
        streams[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(seconds("S=2") > seconds("S=3") * 1.05, "{streams}");
    assert_eq!(seconds("S=3"), seconds("S=4"), "{streams}");
    assert!(streams.contains("taken for its slack"), "{streams}");
}

/// Issue 27's sweeps: where stream counts tie and the copies fit in the kernels' time
/// (heat-3D without a budget) or one copy outlasts them (Himeno ELARGE on the H200),
/// two streams ran as fast or fastest on the H100 and the H200 (Himeno: S=2 0.351 s,
/// S=4 0.371 s); the plan takes the fewest streams of the tie and says why.
#[test]
fn ties_go_to_fewer_streams_where_more_buy_no_slack() {
    for (args, why) in [
        (
            vec![
                "examples/heat3d.c",
                "--set",
                "NX=1152",
                "--set",
                "NY=1536",
                "--set",
                "NZ=1728",
                "--steps",
                "128",
                "--machine",
                "h100",
            ],
            "the copies fit in the kernels' time",
        ),
        (
            vec![
                "examples/himeno.c",
                "--set",
                "MIMAX=513",
                "--set",
                "MJMAX=513",
                "--set",
                "MKMAX=1025",
                "--steps",
                "64",
                "--machine",
                "h200",
            ],
            "the link sets the pace",
        ),
    ] {
        let mut all = vec!["plan", "--target", "cuda"];
        all.extend(args);
        let report = report_of(&tpace(&all));
        let best = report
            .lines()
            .find(|l| l.starts_with("best plan: "))
            .unwrap();
        assert!(
            best.contains("mmtb") && best.contains("streams=2 "),
            "{best}"
        );
        let streams = report
            .lines()
            .find(|l| l.trim_start().starts_with("streams "))
            .unwrap();
        assert!(
            streams.contains("S=3, S=4 predicted as fast or within 1 %, S=2 taken"),
            "{streams}"
        );
        assert!(streams.contains(why), "{streams}");
    }
}

#[test]
fn heat3d_plan_with_the_files_defaults() {
    let out = tpace(&["plan", "examples/heat3d.c", "--steps", "40"]);
    let report = report_of(&out);
    check_structure(&report);
    assert!(report.contains("grid 96 x 64 x 80"), "{report}");
    // A small grid fits the device whole.
    assert!(report.contains("device memory cap 85.02 GB"), "{report}");
}

#[test]
fn heat3d_large_grid_plans_with_bounded_work() {
    let out = tpace(&[
        "plan",
        "examples/heat3d.c",
        "--set",
        "NX=100000",
        "--set",
        "NY=1000",
        "--set",
        "NZ=1000",
        "--steps",
        "10000",
    ]);
    let report = report_of(&out);
    check_structure(&report);
    // Every steps-per-kernel count the CUDA target's fused kernels could have (at most 8).
    assert!(
        plans_predicted(&report) <= 8 * MOST_PLANS_PER_DEPTH,
        "{report}"
    );
}

#[test]
fn errors_are_clear() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["plan", "examples/heat3d.c", "--machine", "tpu9"],
            "unknown machine `tpu9`",
        ),
        (&["plan", "examples/heat3d.c"], "--steps"),
        (
            &[
                "plan",
                "examples/heat3d.c",
                "--steps",
                "4",
                "--machine",
                "xeon-phi-5110p",
            ],
            "machine profile `xeon-phi-5110p` lacks h2d_gbs, d2h_gbs, which the out-of-core model needs",
        ),
        (
            &[
                "plan",
                "examples/heat3d.c",
                "--steps",
                "4",
                "--mem-cap",
                "1kB",
            ],
            "no plan fits",
        ),
        (
            &["plan", "examples/heat3d.c", "--steps", "4", "--set", "NX"],
            "expected NAME=VALUE",
        ),
    ];
    for (args, want) in cases {
        let out = tpace(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The papers' GPUs (profiles from the vendors' datasheets) plan every example
/// for both targets, within their memory; a profile without the figures the model
/// needs is refused, naming them, and nothing is printed as a plan.
#[test]
fn the_paper_gpus_plan_every_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut examples: Vec<_> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 6, "{examples:?}");
    for (machine, cap) in [("k40c", "12.00 GB"), ("c2070", "6.00 GB")] {
        for path in &examples {
            for target in ["openacc", "cuda"] {
                let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
                    .current_dir(root)
                    .args(["plan", "--machine", machine, "--target", target])
                    .args(["--steps", "64"])
                    .arg(path)
                    .output()
                    .unwrap();
                let what = format!("{machine} {target} {}", path.display());
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let report = text(&out);
                assert!(report.contains(&format!("plan for {machine} (")), "{what}");
                assert!(
                    report.contains(&format!("device memory cap {cap}")),
                    "{what}"
                );
                assert!(report.contains("\nbest plan: "), "{what}:\n{report}");
                assert!(
                    report.contains("(derived): "),
                    "{what}: no note on the derived bus"
                );
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-bus.toml");
    std::fs::write(
        &path,
        "name = \"no-bus\"\ndescription = \"test\"\narch = \"gpu\"\n\
         [memory_gbs]\nvalue = 100\nkind = \"spec\"\nsource = \"test\"\n",
    )
    .unwrap();
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--steps",
        "10",
        "--machine",
        path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).is_empty(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "machine profile `no-bus` lacks h2d_gbs, d2h_gbs, which the out-of-core model needs"
        ),
        "{err}"
    );
}

#[test]
fn a_user_profile_file_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow-link.toml");
    std::fs::write(
        &path,
        "name = \"slow-link\"\ndescription = \"test\"\narch = \"gpu\"\n\
         [memory_gbs]\nvalue = 1000\nkind = \"assumed\"\nsource = \"test\"\n\
         [h2d_gbs]\nvalue = 1\nkind = \"assumed\"\nsource = \"test\"\n\
         [d2h_gbs]\nvalue = 1\nkind = \"assumed\"\nsource = \"test\"\n\
         [memory_gb]\nvalue = 0.01\nkind = \"assumed\"\nsource = \"test\"\n",
    )
    .unwrap();
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--steps",
        "100",
        "--set",
        "X=20000",
        "--machine",
        path.to_str().unwrap(),
    ]);
    let report = report_of(&out);
    assert!(report.contains("plan for slow-link"), "{report}");
    assert!(report.contains("device memory cap 10.00 MB"), "{report}");
}

/// The model counts the device memory a plan needs as the generated program
/// allocates it (the runtime reports `device_bytes`), for every schedule.
#[test]
fn the_model_counts_device_memory_as_the_runtime_allocates_it() {
    use tpace::back::Target;
    use tpace::driver::run::{Flavour, Params, Toolchain, build, execute};
    use tpace::model::Workload;
    use tpace::model::predict::{Config, Schedule, device_bytes};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let compiled = tpace::driver::compile_file(&path).expect("compiles");
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 13;
    // OpenACC runs one step per kernel; CUDA fuses 4 (and mmtb's strips take memory).
    for (target, flavour) in [
        (Target::Openacc, Flavour::Openacc),
        (Target::Cuda, Flavour::CudaEmulation),
    ] {
        let text = tpace::driver::translate(&compiled, target).expect("translates");
        let built = build(&tc, &text, dir.path(), "j", flavour).expect("builds");
        let mut w = Workload::from_unit(compiled.unit(0), &[1000, 600], steps).expect("workload");
        if !target.fuses_steps() {
            w = w.with_fusion(None, &compiled.program.pipelines[0].arrays);
        }
        for (schedule, name, k, b, streams) in [
            (Schedule::Mmtb, "mmtb", 7, 250, 3),
            (Schedule::Mmtb, "mmtb", 4, 100, 1),
            (Schedule::Mm, "mm", 5, 300, 2),
            (Schedule::Naive, "naive", 1, 128, 2),
            (Schedule::Incore, "incore", 13, 1000, 1),
        ] {
            let params = Params {
                schedule: Some(name.into()),
                k: Some(k),
                chunk: Some(b),
                streams: Some(streams),
                ..Params::default()
            };
            let run = execute(
                &built.binary,
                &[steps.to_string()],
                &params.env(),
                &dir.path().join("d.dump"),
            )
            .expect("runs");
            let reported: u128 = run.report["device_bytes"].parse().expect("device_bytes");
            let config = Config {
                schedule,
                k,
                b,
                streams,
            };
            assert_eq!(
                device_bytes(&w, config),
                reported,
                "{} {name} k={k} b={b} streams={streams}",
                target.name()
            );
        }
    }
}

/// `tpace translate --machine` plans the program for that profile: the header
/// and the model's constants name it; a profile the model cannot use is
/// refused, naming what it lacks, and no file is written.
#[test]
fn translate_plans_for_the_given_machine() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("j.c");
    let out_arg = out_path.to_str().unwrap();
    let out = tpace(&[
        "translate",
        "examples/jacobi2d.c",
        "--machine",
        "h200",
        "-o",
        out_arg,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = std::fs::read_to_string(&out_path).unwrap();
    let first = file.lines().next().unwrap();
    assert!(
        first.contains("planned for machine profile h200"),
        "{first}"
    );
    assert!(file.contains("    \"h200\", /* machine profile */"));
    std::fs::remove_file(&out_path).unwrap();
    let out = tpace(&[
        "translate",
        "examples/jacobi2d.c",
        "--machine",
        "xeon-phi-5110p",
        "-o",
        out_arg,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lacks h2d_gbs, d2h_gbs"), "{err}");
    assert!(!out_path.exists(), "a refused translation wrote {out_arg}");
    // The default is the profile `tpace plan` defaults to.
    let out = tpace(&["translate", "examples/jacobi2d.c"]);
    assert!(
        text(&out)
            .lines()
            .next()
            .unwrap()
            .contains("planned for machine profile h100")
    );
}

/// Reads of arrays no sweep writes do not widen what a step depends on (CIP's
/// velocities), but the planes any sweep reads of them must be on the device.
#[test]
fn constant_arrays_do_not_widen_the_step_reach_beyond_what_their_reads_need() {
    let reach = |path: &str| {
        let compiled = tpace::driver::compile_file(std::path::Path::new(&format!(
            "{}/{path}",
            env!("CARGO_MANIFEST_DIR")
        )))
        .unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let r = compiled.stages[0].plan.step_reach;
        (r.minus, r.plus)
    };
    // CIP: sweep 1 reads f, gx, gy at +-1; sweep 2 reads only the constant u, v at +-1.
    assert_eq!(reach("examples/cip2d.c"), (1, 1));
    // The changing array at +-1, the constant one at +-3 (sweep 1) and +-2 (sweep 2).
    assert_eq!(reach("tests/fixtures/layouts/wide_coefficients.c"), (3, 3));
    // Jacobi: the changing array at +-1, nothing constant.
    assert_eq!(reach("examples/jacobi2d.c"), (1, 1));
}

/// `tpace plan --devices`: every device's plan on its slab and ghost planes, the
/// exchanges counted; more devices predict less time on a large grid, and a grid
/// with fewer planes than devices is refused in words.
#[test]
fn a_plan_over_several_devices() {
    let run = |devices: &str| {
        let out = tpace(&[
            "plan",
            "examples/jacobi2d.c",
            "--set",
            "X=200000",
            "--set",
            "Y=100000",
            "--steps",
            "256",
            "--devices",
            devices,
        ]);
        text(&out)
    };
    let seconds = |report: &str| -> f64 {
        report
            .lines()
            .find(|l| l.trim_start().starts_with("predicted time"))
            .and_then(|l| l.split_whitespace().nth(2))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no predicted time in:\n{report}"))
    };
    let one = run("1");
    let eight = run("8");
    assert!(
        eight.contains("8 devices (8 rank(s)): slabs of up to 25000 planes"),
        "{eight}"
    );
    assert!(eight.contains("exchanges"), "{eight}");
    assert!(eight.contains("every device's plan"), "{eight}");
    assert!(seconds(&eight) < seconds(&one) / 4.0, "{eight}\n{one}");
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--steps",
        "10",
        "--devices",
        "2000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("fewer than the 2000 devices"), "{stderr}");
}
