//! Replay one seed of a madsim-lane scenario: the timeline, as the lane's failures print it.
//!
//! ```sh
//! cargo run -p wakesim-madsim --example replay -- madsim/scenarios/is-idle-two-wakes-during-preparation.toml --seed 2
//! ```
//!
//! Exit codes as `wakesim replay`: 0 when the seed passes, 1 when it fails, 2 for a usage or
//! scenario-file error.

use std::path::PathBuf;
use std::process::ExitCode;

use wakesim::report;
use wakesim_madsim::run::{Lane, replay_line};

const USAGE: &str = "usage: replay FILE --seed N";

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn run() -> Result<bool, String> {
    let mut args = std::env::args().skip(1);
    let (mut file, mut seed) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => {
                let v = args.next().ok_or(USAGE)?;
                seed = Some(parse_seed(&v).ok_or_else(|| format!("`{v}` is not a seed"))?);
            }
            _ if file.is_none() && !a.starts_with('-') => file = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument `{a}`; {USAGE}")),
        }
    }
    let (Some(file), Some(seed)) = (file, seed) else {
        return Err(USAGE.to_string());
    };
    let lane = Lane::builtin();
    let scn = lane.load(&file).map_err(|e| e.to_string())?;
    let r = lane.run_seed(&scn, seed, true);
    print!(
        "{}",
        report::text::timeline_with(&scn, &r, &replay_line(&scn.path, seed))
    );
    Ok(r.outcome.is_pass())
}
