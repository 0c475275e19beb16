//! Seeds per second of the madsim lane and of the kernel lane on the same scenario, side by side.
//!
//! ```sh
//! cargo run --release -p wakesim-madsim --example seeds_per_s -- madsim/scenarios/FILE.toml [--seeds N]
//! ```
//!
//! The kernel lane runs the same scenario file (same host, plan, faults, seeds) with the async
//! logic replaced by its kernel-lane counterpart of the same design (`AsyncWake::
//! kernel_counterpart`). A figure for the README, measured on wall-clock time outside any run;
//! not a test.

use std::path::PathBuf;
use std::time::Instant;

use wakesim::engine::Runner;
use wakesim::family::Registry;
use wakesim::scenario::Scenario;
use wakesim_madsim::run::Lane;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut seeds = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seeds" => seeds = args.next().and_then(|v| v.parse::<u64>().ok()),
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let Some(file) = file else {
        eprintln!("usage: seeds_per_s FILE [--seeds N]");
        std::process::exit(2);
    };
    let lane = Lane::builtin();
    let scn = lane.load(&file).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let n = seeds.unwrap_or(scn.seeds);
    let counterpart = lane.wake(&scn.wake).expect("loaded").kernel_counterpart;

    let t = Instant::now();
    let rep = lane.run_scenario(&scn, 0..n);
    let madsim_s = t.elapsed().as_secs_f64();

    let registry = Registry::builtin();
    let kscn = Scenario {
        wake: counterpart.to_string(),
        ..scn.clone()
    };
    let mut runner = Runner::new(&registry);
    let t = Instant::now();
    let krep = runner.run_scenario(&kscn, 0..n);
    let kernel_s = t.elapsed().as_secs_f64();

    println!("scenario {} · {n} seeds", file.display());
    println!(
        "{:<8} {:<30} {:>10} {:>12} {:>14} {:>9}",
        "lane", "wake", "seeds/s", "events/seed", "events/s", "failing"
    );
    for (name, wake, s, events, failures) in [
        (
            "madsim",
            scn.wake.as_str(),
            madsim_s,
            rep.events,
            rep.failures,
        ),
        ("kernel", counterpart, kernel_s, krep.events, krep.failures),
    ] {
        println!(
            "{:<8} {:<30} {:>10.0} {:>12.1} {:>14.0} {:>9}",
            name,
            wake,
            n as f64 / s,
            events as f64 / n as f64,
            events as f64 / s,
            failures
        );
    }
}
