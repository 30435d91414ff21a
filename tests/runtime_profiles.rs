//! Profiles chosen at run time (issue 27, item 1): a generated program plans with the
//! bundled profile of the device it runs on (its `device` pattern matched against the
//! device's name), else with the profile it was translated for, and `TPACE_MACHINE=FILE`
//! overrides both. The C side (runtime/model.h: `tpace_model_on`, `tpace_machine_read`,
//! `tpace_device_matches`) against the Rust model on the same workloads and profiles, and
//! generated programs on the CUDA emulation, whose device name TPACE_EMULATE_DEVICE_NAME
//! sets.

mod common;

use common::{build_ok, compile, example_reference, run_with};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};
use tpace::model::cmodel::{initializer, machines_table, runtime_profiles};
use tpace::model::expr::Macros;
use tpace::model::predict::{Machine, Schedule};
use tpace::model::profile::device_matches;
use tpace::model::search::choose;
use tpace::model::{Profile, Workload, workload};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Compile `c` (C, with the model part before it) and run it; its standard output.
fn run_harness(name: &str, c: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join(format!("{name}.c"));
    let text = format!(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n{}\n{c}",
        tpace::runtime::MODEL
    );
    std::fs::write(&src, text).unwrap();
    let bin = dir.path().join(name);
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
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout).unwrap()
}

/// The same search in Rust and C: a program's model for h100 (its translate-time
/// profile) moved onto each bundled profile a program carries, by `tpace_model_on` with
/// the program's machine table and with the profile file read by `tpace_machine_read`,
/// picks the plan `tpace plan --machine P` picks, with the same predicted time.
#[test]
fn a_program_model_moved_onto_another_profile_plans_as_rust_does_on_it() {
    let h100 = Machine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    let targets = runtime_profiles();
    assert!(
        targets.iter().any(|p| p.name == "h200") && targets.iter().any(|p| p.name == "h100"),
        "{:?}",
        targets.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    // Workloads: every example at its extents and at large ones, fused or not.
    let mut cases: Vec<(String, Workload)> = Vec::new();
    for name in ["jacobi2d.c", "heat3d.c", "himeno.c", "cip2d.c", "heat1d.c"] {
        let c = compile(&root().join("examples").join(name));
        let ext =
            workload::extents(c.unit(0), &Macros::new(&[], &c.program.source).unwrap()).unwrap();
        let big: Vec<u64> = match ext.len() {
            1 => vec![400_000_000],
            2 => vec![49_152, 61_440],
            _ => vec![1152, 1536, 1728],
        };
        for (extents, steps) in [(ext.clone(), 40), (big, 128)] {
            let w = Workload::from_unit(c.unit(0), &extents, steps).unwrap();
            cases.push((format!("{name} {extents:?} {steps} steps"), w));
        }
    }
    let caps = [None, Some(8u128 << 30)];
    let mut c = machines_table();
    for (i, (_, w)) in cases.iter().enumerate() {
        writeln!(
            c,
            "static const tpace_model m{i} = {};",
            initializer(w, &h100)
        )
        .unwrap();
    }
    c.push_str("int main(void)\n{\n    tpace_model x;\n    tpace_model_choice r;\n    char err[512];\n    (void)tpace_machine_count;\n");
    for (pi, p) in targets.iter().enumerate() {
        let file = root().join(format!("profiles/{}.toml", p.name));
        writeln!(
            c,
            "    tpace_machine read{pi};\n    if (!tpace_machine_read(\"{}\", &read{pi}, err, sizeof err)) {{ printf(\"%s\\n\", err); return 1; }}",
            file.display()
        )
        .unwrap();
    }
    for (i, (_, w)) in cases.iter().enumerate() {
        for (pi, _) in targets.iter().enumerate() {
            for (ci, cap) in caps.iter().enumerate() {
                let cap_c = cap.map_or("x.memory_bytes".to_string(), |b| format!("{b}.0"));
                for source in ["tpace_machines", "read"] {
                    let machine = if source == "read" {
                        format!("&read{pi}")
                    } else {
                        format!("&tpace_machines[{pi}]")
                    };
                    writeln!(
                        c,
                        "    {{\n        tpace_model_on(&m{i}, {machine}, &x);\n        \
                         const tpace_model_run w = {{{n}ULL, {plane}ULL, {steps}ULL}};\n        \
                         r = tpace_model_choose_fused(&x, &w, (tpace_u128)({cap_c}), -1, 0, 0, 0, 0, TPACE_MC_FUSE_MAX);\n        \
                         printf(\"{i} {pi} {ci} {source} %s %d %d %llu %llu %llu %.17g %llu\\n\", x.machine, r.found, \
                         r.best.schedule, r.best.k, r.best.b, r.best.streams, r.seconds, r.fuse);\n    }}",
                        n = w.n,
                        plane = w.plane,
                        steps = w.steps,
                    )
                    .unwrap();
                }
            }
        }
    }
    c.push_str("    return 0;\n}\n");
    let text = run_harness("moved", &c);
    let mut lines = 0;
    for line in text.lines() {
        lines += 1;
        let f: Vec<&str> = line.split_whitespace().collect();
        let (i, pi, ci): (usize, usize, usize) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        let (label, w) = &cases[i];
        let p = &targets[pi];
        let m = Machine::from_profile(p).unwrap();
        let what = format!("{label} on {} ({}) cap {:?}", p.name, f[3], caps[ci]);
        assert_eq!(f[4], p.name, "{what}");
        let cap = caps[ci].or(m.memory_bytes.map(|b| b as u128));
        match choose(w, &m, cap) {
            Err(_) => assert_eq!(f[5], "0", "{what}: C found a plan, Rust none"),
            Ok(choice) => {
                let b = &choice.best;
                let code = match b.config.schedule {
                    Schedule::Incore => "0",
                    Schedule::Naive => "1",
                    Schedule::Mm => "2",
                    Schedule::Mmtb => "3",
                };
                let want = [
                    "1".to_string(),
                    code.to_string(),
                    b.config.k.to_string(),
                    b.config.b.to_string(),
                    b.config.streams.to_string(),
                ];
                assert_eq!(&f[5..10], &want, "{what}: C {line}, Rust {:?}", b.config);
                let seconds: f64 = f[10].parse().unwrap();
                assert!(
                    seconds == b.total_s || (seconds - b.total_s).abs() <= 1e-9 * b.total_s,
                    "{what}: C {seconds}, Rust {}",
                    b.total_s
                );
            }
        }
    }
    assert_eq!(lines, cases.len() * targets.len() * caps.len() * 2);
}

/// `tpace_device_matches` decides as profile.rs `device_matches`: whole words, in
/// order, any case.
#[test]
fn device_names_match_as_in_rust() {
    let cases = [
        ("H100", "NVIDIA H100 80GB HBM3"),
        ("H100", "NVIDIA H100 PCIe"),
        ("H200", "NVIDIA H200"),
        ("H200", "NVIDIA H200 NVL"),
        ("H200", "NVIDIA GH200 480GB"),
        ("h200", "nvidia h200"),
        ("H100", "NVIDIA H1000"),
        ("K40c", "Tesla K40c"),
        ("K40c", "Tesla K40m"),
        ("Tesla K40c", "NVIDIA Tesla K40c"),
        ("K40c Tesla", "NVIDIA Tesla K40c"),
        ("C2070", "Tesla C2070"),
        ("H100", "tpace CPU emulation"),
        ("H100", ""),
        ("H100", "H100"),
        ("H100", "H100-SXM5"),
    ];
    let mut c = String::from("int main(void)\n{\n");
    for (pattern, name) in cases {
        writeln!(
            c,
            "    printf(\"%d\\n\", tpace_device_matches(\"{pattern}\", \"{name}\"));"
        )
        .unwrap();
    }
    c.push_str("    return 0;\n}\n");
    let text = run_harness("matches", &c);
    let got: Vec<bool> = text.lines().map(|l| l == "1").collect();
    let want: Vec<bool> = cases.iter().map(|(p, n)| device_matches(p, n)).collect();
    assert_eq!(got, want, "{cases:?}");
    // The cases hold both answers, and the ones the profiles rely on.
    assert!(want.contains(&true) && want.contains(&false));
    assert!(device_matches("H200", "NVIDIA H200 NVL"));
    assert!(!device_matches("H200", "NVIDIA GH200 480GB"));
    assert!(device_matches("H100", "NVIDIA H100 80GB HBM3"));
}

/// A profile file the C reader takes or refuses; its report line (or error).
fn read_profile(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    let c = format!(
        "int main(void)\n{{\n    tpace_machine m;\n    char err[512];\n    \
         if (!tpace_machine_read(\"{}\", &m, err, sizeof err)) {{ printf(\"error %s\\n\", err); return 0; }}\n    \
         printf(\"ok %s %s %.17g %.17g %.17g %.17g %.17g %llu %d\\n\", m.name, m.device ? m.device : \"-\", \
         m.memory_bps, m.kernel_bps, m.h2d_bps, m.duplex_bps, m.launch_s, m.units, m.nkernels);\n    \
         for (int i = 0; i < m.nkernels; i++)\n        printf(\"k %s %s %llu %.17g %.17g %llu %llu %.17g %.17g\\n\", \
         m.kernels[i].elem, m.kernels[i].shape, m.kernels[i].fuse, m.kernels[i].ps, m.kernels[i].bytes, \
         m.kernels[i].rows, m.kernels[i].blocks, m.kernels[i].segment_rows, m.kernels[i].launch_rows);\n    \
         printf(\"cl %d %d %.17g %llu %llu %llu %.17g %.17g\\n\", m.cl.known, m.cl.phi, m.cl.bf_sys, m.cl.tile_bytes, \
         m.cl.min_groups, m.cl.max_group, m.cl.stream_bps, m.cl.tile_point_s);\n    \
         return 0;\n}}\n",
        path.display()
    );
    run_harness("read", &c).replace(&path.display().to_string(), "FILE")
}

/// Every bundled profile the runtime may read comes out of the C reader with the
/// figures and kernel table of the Rust one.
#[test]
fn the_c_reader_reads_every_bundled_profile_as_rust_does() {
    for p in runtime_profiles() {
        let text =
            std::fs::read_to_string(root().join(format!("profiles/{}.toml", p.name))).unwrap();
        let got = read_profile(&text);
        let m = Machine::from_profile(&p).unwrap();
        let first = got.lines().next().unwrap();
        let f: Vec<&str> = first.split_whitespace().collect();
        assert_eq!(f[0], "ok", "{}: {got}", p.name);
        assert_eq!(f[1], p.name);
        assert_eq!(f[2], p.device.as_deref().unwrap_or("-"));
        let num = |s: &str| s.parse::<f64>().unwrap();
        assert_eq!(num(f[3]), m.memory_bps, "{}", p.name);
        assert_eq!(num(f[4]), m.kernel_bps, "{}", p.name);
        assert_eq!(num(f[5]), m.h2d_bps, "{}", p.name);
        assert_eq!(num(f[6]), m.duplex_bps.unwrap_or(0.0), "{}", p.name);
        assert_eq!(num(f[7]), m.launch_s, "{}", p.name);
        assert_eq!(f[8], m.units.to_string());
        assert_eq!(f[9], m.kernels.len().to_string());
        // OpenCL's figures (the work-group choice takes them from the profile the run plans with).
        let cl: Vec<&str> = got
            .lines()
            .find(|l| l.starts_with("cl "))
            .unwrap()
            .split_whitespace()
            .collect();
        match tpace::model::evolution::EvolutionMachine::from_profile(&p) {
            Ok(e) => {
                assert_eq!(cl[1], "1", "{}", p.name);
                assert_eq!(
                    cl[2],
                    u8::from(e.arch == tpace::model::profile::Arch::XeonPhi).to_string()
                );
                assert_eq!(num(cl[3]), e.bytes_per_flop, "{}", p.name);
                assert_eq!(cl[4], e.tile_bytes.to_string());
                assert_eq!(cl[5], e.min_groups.to_string());
                assert_eq!(cl[6], e.max_group_size.unwrap_or(0).to_string());
                assert_eq!(num(cl[7]), e.priced_stream_bps(), "{}", p.name);
                assert_eq!(num(cl[8]), e.tile_point_s.unwrap_or(0.0), "{}", p.name);
            }
            Err(_) => assert_eq!(cl[1], "0", "{}", p.name),
        }
        for (line, k) in got.lines().skip(1).zip(&m.kernels) {
            let g: Vec<&str> = line.split_whitespace().collect();
            assert_eq!((g[1], g[2]), (k.elem.as_str(), k.shape.as_str()));
            assert_eq!(g[3], k.fuse.to_string());
            assert_eq!(num(g[4]), k.ps);
            assert_eq!(num(g[5]), k.bytes);
            assert_eq!(g[6], k.rows.to_string());
            assert_eq!(g[7], tpace::model::predict::measured_blocks(k).to_string());
            assert_eq!(num(g[8]), k.segment_rows.unwrap_or(-1.0));
            assert_eq!(num(g[9]), k.launch_rows.unwrap_or(0.0));
        }
    }
}

/// The C reader takes the forms TOML allows that a user may write (inline tables,
/// literal strings, underscores in numbers, comments after a value) and refuses, with
/// the file and line and what is wrong, what `tpace plan` refuses.
#[test]
fn the_c_reader_refuses_bad_profiles_with_file_and_line() {
    let head = "name = \"mine\" # a comment\ndescription = 'mine'\narch = \"gpu\"\n";
    let link = "h2d_gbs = { value = 1_000.5, kind = \"assumed\", source = \"s\" }\n\
                [d2h_gbs]\nvalue = 2e3\nkind = \"spec\"\nsource = \"s\"\n";
    let memory = "[memory_gbs]\nvalue = 3000\nkind = \"measured\"\nsource = \"probe\"\n";
    let good = read_profile(&format!("{head}{link}{memory}"));
    assert!(
        good.starts_with("ok mine - 3000000000000 3000000000000 1000500000000 "),
        "{good}"
    );
    for (text, line, want) in [
        (
            format!("{head}hbm = 3\n{link}{memory}"),
            4,
            "unknown field `hbm`",
        ),
        (
            format!("{head}{link}{memory}hbm = 3\n"),
            13,
            "a figure has `value` (a number), `kind` and `source`, not `hbm`",
        ),
        (
            format!("{head}{link}[hbm_gbs]\nvalue = 3\n"),
            9,
            "unknown figure [hbm_gbs]",
        ),
        (
            format!("{head}{link}[memory_gbs]\nvalue = -1\n"),
            10,
            "`memory_gbs` must be a positive number",
        ),
        (
            format!("{head}{link}{memory}[compute_units]\nvalue = 1.5\n"),
            14,
            "`compute_units` must be a whole number",
        ),
        (
            format!("{head}{link}{memory}[cores]\nvalue = 2\nkind = \"guessed\"\n"),
            15,
            "`kind` must be one of",
        ),
        (
            format!("{head}{link}[memory_gbs]\nvalue = 3\nkind = \"spec\"\n"),
            9,
            "figure [memory_gbs] lacks `source`",
        ),
        (
            format!("{head}{link}{memory}[[kernels]]\nelem = \"half\"\n"),
            14,
            "`elem` must be one of float, double",
        ),
        (
            format!("{head}{link}{memory}[[kernels]]\nelem = \"float\"\nshape = \"2d\"\n"),
            15,
            "`shape` must read like `2d-r1`",
        ),
        (
            format!("{head}{link}{memory}[[kernels]]\nelem = \"float\"\n"),
            13,
            "this [[kernels]] entry lacks `shape`",
        ),
        (
            format!("{head}{link}{memory}[[kernels]]\nfuse = 0\n"),
            14,
            "`fuse` must be a whole number of at least 1",
        ),
        (
            format!("{head}name2 = \"x\" extra\n{link}{memory}"),
            4,
            "unknown field `name2`",
        ),
        (
            format!("{head}{link}{memory}[cores] x\n"),
            13,
            "more on the line than one key and value",
        ),
        (
            format!("{head}{link}{memory}[cores x\n"),
            13,
            "expected `]` after [cores]",
        ),
        (
            format!("{head}{link}[memory_gbs]\nvalue = \"fast\"\n"),
            10,
            "a figure has `value` (a number)",
        ),
        (
            format!("{head}{link}[memory_gbs]\nvalue = 3 4\n"),
            10,
            "more on the line than one key and value",
        ),
        (
            format!("{head}{link}[memory_gbs]\nsource = \"unterminated\n"),
            10,
            "a string that does not end on its line",
        ),
        (
            format!("{head}{link}[[tables]]\n"),
            9,
            "the only array of tables a profile has is [[kernels]]",
        ),
        (
            format!("{head}{link}{memory}[memory_gbs]\n"),
            13,
            "a figure given twice",
        ),
    ] {
        let got = read_profile(&text);
        let at = format!("error FILE:{line}: ");
        assert!(
            got.starts_with(&at) && got.contains(want),
            "want `{at}{want}`, got {got}"
        );
    }
    // What the out-of-core model needs, named with the file.
    let got = read_profile(&format!("{head}{memory}"));
    assert!(
        got.starts_with("error FILE: the profile lacks h2d_gbs, which the out-of-core model needs"),
        "{got}"
    );
    let got = read_profile(&format!("description = \"d\"\n{link}{memory}"));
    assert!(
        got.starts_with("error FILE:1: the profile has no `name`"),
        "{got}"
    );
    // A file that is not there.
    let c = "int main(void)\n{\n    tpace_machine m;\n    char err[512];\n    \
             printf(\"%d %s\\n\", tpace_machine_read(\"/nonexistent/x.toml\", &m, err, sizeof err), err);\n    return 0;\n}\n";
    let got = run_harness("missing", c);
    assert!(
        got.starts_with("0 /nonexistent/x.toml: cannot open it"),
        "{got}"
    );
}

/// The C reader knows every figure a profile may have, as profile.rs lists them.
#[test]
fn the_c_reader_knows_every_figure_rust_knows() {
    let model = tpace::runtime::MODEL;
    let at = model.find("tpace_figure_names[] = {").unwrap();
    let list = &model[at..at + model[at..].find("};").unwrap()];
    let names: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
    assert_eq!(names, tpace::model::profile::FIGURE_NAMES.to_vec());
    let at = model.find("tpace_whole_figures[] = {").unwrap();
    let list = &model[at..at + model[at..].find("};").unwrap()];
    let whole: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
    assert_eq!(whole, tpace::model::profile::WHOLE_FIGURES.to_vec());
}

/// The translated Jacobi-2D for the CUDA emulation, and its sequential run.
struct Jacobi {
    binary: PathBuf,
    dir: tempfile::TempDir,
    reference: tpace::driver::run::Execution,
}

const STEPS: u64 = 5;

fn jacobi() -> Jacobi {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().unwrap();
    let c = compile(&root().join("examples/jacobi2d.c"));
    let out = tpace::driver::translate(&c, Target::Cuda).unwrap();
    let built = build_ok(&tc, &out, dir.path(), "t", Flavour::CudaEmulation);
    let reference = example_reference("jacobi2d.c", &tc, dir.path(), STEPS);
    Jacobi {
        binary: built.binary,
        dir,
        reference,
    }
}

/// `tpace plan`'s best plan for Jacobi-2D on `machine` (a bundled name or a file).
fn plan_for(machine: &str, cap: u64) -> (String, String, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .current_dir(root())
        .args([
            "plan",
            "examples/jacobi2d.c",
            "--target",
            "cuda",
            "--machine",
            machine,
            "--steps",
            &STEPS.to_string(),
            "--mem-cap",
            &cap.to_string(),
        ])
        .output()
        .expect("tpace plan runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let best = text
        .lines()
        .find_map(|l| l.strip_prefix("best plan: "))
        .unwrap()
        .to_string();
    let w: Vec<&str> = best.split_whitespace().collect();
    let get = |key: &str| {
        w.iter()
            .find_map(|x| x.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in {best}"))
            .to_string()
    };
    (w[0].to_string(), get("k="), get("b="), get("streams="))
}

/// The plan a run reported.
fn ran(e: &tpace::driver::run::Execution) -> (String, String, String, String) {
    (
        e.report["schedule"].clone(),
        e.report["k"].clone(),
        e.report["b"].clone(),
        e.report["streams"].clone(),
    )
}

/// The device's name picks the bundled profile it matches (and its plan, the one
/// `tpace plan --machine` prints for it); a name no bundled profile matches leaves the
/// profile the program was translated for; the report line says which, and the
/// results stay bit for bit.
#[test]
fn the_device_name_chooses_the_bundled_profile() {
    let j = jacobi();
    // A budget at which the two measured profiles plan differently (b = 112 and 100).
    let cap = 2_000_000u64;
    let env = |name: &str| {
        vec![
            ("TPACE_EMULATE_DEVICE_NAME".to_string(), name.to_string()),
            ("TPACE_DEVICE_MEM".to_string(), cap.to_string()),
        ]
    };
    let dump = j.dir.path().join("t.dump");
    let h200 = run_with(
        &j.binary,
        STEPS,
        &Params::default(),
        &env("NVIDIA H200"),
        &dump,
    );
    assert!(
        h200.stderr.contains(
            "(chosen by the model for h200; device NVIDIA H200, profile h200 (bundled, matches the device))"
        ),
        "{}",
        h200.stderr
    );
    assert_eq!(ran(&h200), plan_for("h200", cap));
    assert_eq!(first_difference(&j.reference.dump, &h200.dump), None);
    let h100 = run_with(
        &j.binary,
        STEPS,
        &Params::default(),
        &env("NVIDIA H100 80GB HBM3"),
        &dump,
    );
    assert!(
        h100.stderr
            .contains("device NVIDIA H100 80GB HBM3, profile h100 (bundled, matches the device)"),
        "{}",
        h100.stderr
    );
    assert_eq!(ran(&h100), plan_for("h100", cap));
    // The two profiles plan differently here, so the choice shows in the plan.
    assert_ne!(ran(&h100), ran(&h200));
    let other = run_with(
        &j.binary,
        STEPS,
        &Params::default(),
        &env("NVIDIA GH200 480GB"),
        &dump,
    );
    assert!(
        other.stderr.contains(
            "(chosen by the model for h100; device NVIDIA GH200 480GB, profile h100 (translated for); no bundled profile matches)"
        ),
        "{}",
        other.stderr
    );
    assert_eq!(ran(&other), plan_for("h100", cap));
    assert_eq!(first_difference(&j.reference.dump, &other.dump), None);
}

/// TPACE_MACHINE=FILE.toml overrides the device's profile (the report says so, and that
/// the device matches another); a bad file stops the program before the loop, naming
/// the file and the line.
#[test]
fn tpace_machine_names_a_profile_file_and_a_bad_one_is_refused() {
    let j = jacobi();
    let cap = 1_500_000u64;
    let mine = j.dir.path().join("mine.toml");
    let h200 = std::fs::read_to_string(root().join("profiles/h200.toml")).unwrap();
    std::fs::write(&mine, h200.replace("name = \"h200\"", "name = \"mine\"")).unwrap();
    let env = vec![
        (
            "TPACE_EMULATE_DEVICE_NAME".to_string(),
            "NVIDIA H100 PCIe".to_string(),
        ),
        ("TPACE_DEVICE_MEM".to_string(), cap.to_string()),
        ("TPACE_MACHINE".to_string(), mine.display().to_string()),
    ];
    let dump = j.dir.path().join("t.dump");
    let got = run_with(&j.binary, STEPS, &Params::default(), &env, &dump);
    let said = format!(
        "(chosen by the model for mine; device NVIDIA H100 PCIe, profile mine (TPACE_MACHINE file {}); the device matches bundled profile h100)",
        mine.display()
    );
    assert!(got.stderr.contains(&said), "{}", got.stderr);
    assert_eq!(ran(&got), plan_for(mine.to_str().unwrap(), cap));
    assert_eq!(ran(&got), plan_for("h200", cap));
    assert_eq!(first_difference(&j.reference.dump, &got.dump), None);
    // A bad file: exit 2, the file and line, before any step.
    let bad = j.dir.path().join("bad.toml");
    std::fs::write(&bad, h200.replace("[d2h_gbs]", "[d2h_gbs]\nvalue = fast")).unwrap();
    let out = Command::new(&j.binary)
        .arg(STEPS.to_string())
        .env("TPACE_MACHINE", &bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = h200.lines().position(|l| l == "[d2h_gbs]").unwrap() + 2;
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tpace: settings: TPACE_MACHINE={0}: {0}:{line}: a value that is neither a number nor a quoted string",
            bad.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("schedule="), "{stderr}");
}

/// bench/gpu.sh part `showit` in one process (TPACE_BENCH_PLANS), as on the H100: the
/// device's own profile given for the whole process (TPACE_MACHINE, the probe's fresh file),
/// then per plan the wrong GPU's (bench/showit/h200-spec.toml) without and with re-planning,
/// then the own one with it. Every plan runs and reports, each with the profile and the
/// re-planning its own settings name (the plan each profile gives, the check only where
/// TPACE_REPLAN=1), none dropped.
#[test]
fn bench_plans_take_each_plans_own_profile_and_replanning() {
    let j = jacobi();
    let cap = 1_500_000u64;
    let own = j.dir.path().join("h100.toml");
    let h100 = std::fs::read_to_string(root().join("profiles/h100.toml")).unwrap();
    std::fs::write(&own, h100.replace("name = \"h100\"", "name = \"probed\"")).unwrap();
    let wrong = root().join("bench/showit/h200-spec.toml");
    let plans = format!(
        "model,TPACE_REPLAN=0 model,TPACE_REPLAN=0,TPACE_MACHINE={w} model,TPACE_REPLAN=1,TPACE_MACHINE={w} model,TPACE_REPLAN=1",
        w = wrong.display()
    );
    let env = vec![
        (
            "TPACE_EMULATE_DEVICE_NAME".to_string(),
            "NVIDIA H100 80GB HBM3".to_string(),
        ),
        ("TPACE_DEVICE_MEM".to_string(), cap.to_string()),
        ("TPACE_MACHINE".to_string(), own.display().to_string()),
        ("TPACE_BENCH_PLANS".to_string(), plans),
    ];
    let dump = j.dir.path().join("t.dump");
    let got = run_with(&j.binary, STEPS, &Params::default(), &env, &dump);
    let lines: Vec<&str> = got
        .stderr
        .lines()
        .filter(|l| l.contains(": bench plan ") || l.contains(" schedule="))
        .collect();
    // In order: plan i's line, then its report.
    assert_eq!(lines.len(), 8, "{}", got.stderr);
    let field = |line: &str, key: &str| -> String {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} in {line}"))
            .to_string()
    };
    let plan_of = |line: &str| {
        (
            field(line, "schedule"),
            field(line, "k"),
            field(line, "b"),
            field(line, "streams"),
        )
    };
    let own_said = format!(
        "(chosen by the model for probed; device NVIDIA H100 80GB HBM3, profile probed (TPACE_MACHINE file {}); the device matches bundled profile h100",
        own.display()
    );
    let wrong_said = format!(
        "(chosen by the model for h200-spec; device NVIDIA H100 80GB HBM3, profile h200-spec (TPACE_MACHINE file {}); the device matches bundled profile h100",
        wrong.display()
    );
    let own_plan = plan_for(own.to_str().unwrap(), cap);
    let wrong_plan = plan_for(wrong.to_str().unwrap(), cap);
    assert_ne!(own_plan, wrong_plan, "the two profiles plan alike here");
    for (i, (said, plan, replan)) in [
        (&own_said, &own_plan, false),
        (&wrong_said, &wrong_plan, false),
        (&wrong_said, &wrong_plan, true),
        (&own_said, &own_plan, true),
    ]
    .into_iter()
    .enumerate()
    {
        let (head, report) = (lines[2 * i], lines[2 * i + 1]);
        assert!(
            head.contains(&format!(": bench plan {}: model,TPACE_REPLAN=", i + 1)),
            "{head}"
        );
        assert!(report.contains(said.as_str()), "plan {}: {report}", i + 1);
        // The plan the profile gives (a re-planned run may end on another: its first is it).
        if !replan {
            assert_eq!(&plan_of(report), plan, "plan {}: {report}", i + 1);
            assert_eq!(field(report, "replans"), "0", "{report}");
            assert!(!report.contains("checked after"), "{report}");
        } else {
            assert!(
                report.contains("checked after the first chunk"),
                "plan {}: {report}",
                i + 1
            );
        }
    }
}
