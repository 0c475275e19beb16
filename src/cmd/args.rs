//! What the subcommands' arguments share: seeds, seed ranges, shards, formats, and the seed
//! budget multiplier from the environment.

use std::ops::Range;

use clap::ValueEnum;

use crate::error::{Error, Result};

/// The environment variable that multiplies every scenario's seed budget (for nightly runs).
pub const SEEDS_MULTIPLIER_ENV: &str = "WAKESIM_SEEDS_MULTIPLIER";

/// The output of `run`, `explore` and `list`.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// A seed, decimal or 0x-hex.
pub fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a seed (a decimal or 0x-hex u64)"))
}

/// `K/N`, with 1 <= K <= N.
pub fn parse_shard(s: &str) -> std::result::Result<(u64, u64), String> {
    let err = || format!("`{s}` is not a shard K/N with 1 <= K <= N");
    let (k, n) = s.split_once('/').ok_or_else(err)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| err())?, n.parse().map_err(|_| err())?);
    if k == 0 || k > n {
        return Err(err());
    }
    Ok((k, n))
}

/// `A..B`, B excluded, not empty.
pub fn parse_range(s: &str) -> std::result::Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range A..B"))?;
    let (a, b) = (parse_seed(a)?, parse_seed(b)?);
    if a >= b {
        return Err(format!("`{s}` is empty: A must be less than B"));
    }
    Ok(a..b)
}

/// The seed-budget multiplier from the environment (1 when unset).
pub fn seeds_multiplier() -> Result<u64> {
    match std::env::var(SEEDS_MULTIPLIER_ENV) {
        Err(_) => Ok(1),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Error::Usage(format!(
                "{SEEDS_MULTIPLIER_ENV}=`{v}` is not a positive integer"
            ))),
        },
    }
}

/// `--color`: when to colour text output.
#[derive(Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal, unless `NO_COLOR` is set (or `CLICOLOR=0`, or
    /// `TERM=dumb`); `CLICOLOR_FORCE` colours even when it is not.
    Auto,
    Always,
    Never,
}

/// Whether to colour stdout.
pub fn colour(choice: ColorChoice) -> bool {
    use std::io::IsTerminal;
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            auto_colour(&|k| std::env::var(k).ok(), std::io::stdout().is_terminal())
        }
    }
}

/// The `auto` rule (no-color.org and bixense.com/clicolors): a non-empty `NO_COLOR` turns colour
/// off; else a `CLICOLOR_FORCE` other than empty or `0` turns it on; else `CLICOLOR=0` or
/// `TERM=dumb` turn it off; else a terminal decides.
pub fn auto_colour(env: &dyn Fn(&str) -> Option<String>, terminal: bool) -> bool {
    let set = |k: &str| env(k).filter(|v| !v.is_empty());
    if set("NO_COLOR").is_some() {
        return false;
    }
    if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    if env("CLICOLOR").as_deref() == Some("0") || env("TERM").as_deref() == Some("dumb") {
        return false;
    }
    terminal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], terminal: bool) -> bool {
        let env = |k: &str| {
            (vars.iter())
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        auto_colour(&env, terminal)
    }

    #[test]
    fn colour_honours_no_color_clicolor_force_and_terminals() {
        assert!(with(&[], true));
        assert!(!with(&[], false));
        assert!(!with(&[("NO_COLOR", "1")], true));
        assert!(
            with(&[("NO_COLOR", "")], true),
            "an empty NO_COLOR is unset"
        );
        assert!(with(&[("CLICOLOR_FORCE", "1")], false));
        assert!(!with(&[("CLICOLOR_FORCE", "0")], false));
        assert!(!with(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], true));
        assert!(!with(&[("CLICOLOR", "0")], true));
        assert!(!with(&[("TERM", "dumb")], true));
    }
}
