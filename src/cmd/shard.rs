//! `run --shard`: `K/N`, or `auto`, the index and count read from the variables of the engine
//! the run is one task of (a Kubernetes Indexed Job, GitLab `parallel:`, a Slurm job array, an
//! AWS Batch array job, CircleCI or Buildkite parallelism, or wakesim's own `WAKESIM_SHARD`);
//! and the identity of a run that `merge` checks its shards share. The environment is read
//! here, in the command, never inside a run.

use std::collections::BTreeMap;

use crate::engine::shard::{SCHEME, Shard};
use crate::engine::suite::Suite;
use crate::error::{Error, Result};
use crate::report::json::{RunJson, content_hash};

/// What `--shard` was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    Fixed(Shard),
    Auto,
}

/// `K/N` with 1 <= K <= N, or `auto`.
pub fn parse_shard_arg(s: &str) -> std::result::Result<ShardArg, String> {
    if s == "auto" {
        return Ok(ShardArg::Auto);
    }
    parse_k_of_n(s).map(ShardArg::Fixed)
}

fn parse_k_of_n(s: &str) -> std::result::Result<Shard, String> {
    let err = || {
        format!(
            "`{s}` is not a shard K/N with 1 <= K <= N <= {} (or `auto`)",
            crate::limits::SHARD_COUNT_MAX
        )
    };
    let (k, n) = s.split_once('/').ok_or_else(err)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| err())?,
        n.trim().parse().map_err(|_| err())?,
    );
    Shard::new(k, n).ok_or_else(err)
}

/// How an engine names a task's index and the number of tasks.
struct Engine {
    name: &'static str,
    index: &'static str,
    /// Where the count comes from: the engine's own variable, else `WAKESIM_SHARD_COUNT`.
    count: Option<&'static str>,
    /// The value of `index` of the first task.
    base: Base,
}

enum Base {
    Zero,
    One,
    /// Slurm: the index is relative to `SLURM_ARRAY_TASK_MIN`.
    Slurm,
}

/// wakesim's own variable, `K/N` as `--shard` takes it; it wins over every engine's.
pub const SHARD_ENV: &str = "WAKESIM_SHARD";
/// The count, for engines that give a task its index only (a Kubernetes Indexed Job).
pub const SHARD_COUNT_ENV: &str = "WAKESIM_SHARD_COUNT";

/// The engines `--shard auto` knows, in the order the docs list them. At most one may be set.
const ENGINES: &[Engine] = &[
    Engine {
        name: "Kubernetes Indexed Job",
        index: "JOB_COMPLETION_INDEX",
        count: None,
        base: Base::Zero,
    },
    Engine {
        name: "GitLab CI parallel",
        index: "CI_NODE_INDEX",
        count: Some("CI_NODE_TOTAL"),
        base: Base::One,
    },
    Engine {
        name: "Slurm job array",
        index: "SLURM_ARRAY_TASK_ID",
        count: Some("SLURM_ARRAY_TASK_COUNT"),
        base: Base::Slurm,
    },
    Engine {
        name: "AWS Batch array job",
        index: "AWS_BATCH_JOB_ARRAY_INDEX",
        count: Some("AWS_BATCH_JOB_ARRAY_SIZE"),
        base: Base::Zero,
    },
    Engine {
        name: "CircleCI parallelism",
        index: "CIRCLE_NODE_INDEX",
        count: Some("CIRCLE_NODE_TOTAL"),
        base: Base::Zero,
    },
    Engine {
        name: "Buildkite parallelism",
        index: "BUILDKITE_PARALLEL_JOB",
        count: Some("BUILDKITE_PARALLEL_JOB_COUNT"),
        base: Base::Zero,
    },
];

/// The shard `--shard` names, reading the environment for `auto`.
pub fn resolve(arg: Option<ShardArg>) -> Result<Option<Shard>> {
    match arg {
        None => Ok(None),
        Some(ShardArg::Fixed(s)) => Ok(Some(s)),
        Some(ShardArg::Auto) => auto(&|k| std::env::var(k).ok())
            .map(Some)
            .map_err(|m| Error::Usage(format!("--shard auto: {m}"))),
    }
}

/// `--shard auto` over an environment: `WAKESIM_SHARD` if set, else the one engine whose index
/// variable is set. Every malformed, missing or conflicting variable is an error naming it.
pub fn auto(env: &dyn Fn(&str) -> Option<String>) -> std::result::Result<Shard, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if let Some(v) = get(SHARD_ENV) {
        return parse_k_of_n(&v).map_err(|m| format!("{SHARD_ENV}: {m}"));
    }
    let set: Vec<&Engine> = ENGINES.iter().filter(|e| get(e.index).is_some()).collect();
    let engine = match set.as_slice() {
        [one] => *one,
        [] => {
            let names: Vec<String> = ENGINES
                .iter()
                .map(|e| match e.count {
                    Some(c) => format!("{} and {c} ({})", e.index, e.name),
                    None => format!("{} and {SHARD_COUNT_ENV} ({})", e.index, e.name),
                })
                .collect();
            return Err(format!(
                "no shard index in the environment: set {SHARD_ENV}=K/N, or run where one of \
                 these is set: {}",
                names.join("; ")
            ));
        }
        many => {
            let names: Vec<String> = many
                .iter()
                .map(|e| format!("{} ({})", e.index, e.name))
                .collect();
            return Err(format!(
                "the variables of more than one engine are set: {}; set {SHARD_ENV}=K/N to say \
                 which shard this is",
                names.join(", ")
            ));
        }
    };
    let number = |k: &str| -> std::result::Result<u64, String> {
        let v = get(k).ok_or_else(|| format!("{k} is not set (needed with {})", engine.index))?;
        v.trim()
            .parse::<u64>()
            .map_err(|_| format!("{k}=`{v}` is not a non-negative integer"))
    };
    let raw = number(engine.index)?;
    let count_var = engine
        .count
        .filter(|c| get(c).is_some())
        .unwrap_or(SHARD_COUNT_ENV);
    let count = number(count_var)?;
    let index0 = match engine.base {
        Base::Zero => Some(raw),
        Base::One => raw.checked_sub(1),
        Base::Slurm => {
            let min = number("SLURM_ARRAY_TASK_MIN")?;
            let max = number("SLURM_ARRAY_TASK_MAX")?;
            // A stepped or listed array (`--array=0-15:4`, `--array=1,3,7`) has indices that are
            // not 0..count once shifted: shards would be missing or doubled.
            if max.checked_sub(min).map(|d| d + 1) != Some(count) {
                return Err(format!(
                    "SLURM_ARRAY_TASK_MIN={min}, SLURM_ARRAY_TASK_MAX={max} and \
                     SLURM_ARRAY_TASK_COUNT={count} are not a contiguous array: submit it as \
                     --array=0-{}",
                    count.saturating_sub(1)
                ));
            }
            raw.checked_sub(min)
        }
    };
    let first = match engine.base {
        Base::One => "1",
        Base::Zero => "0",
        Base::Slurm => "SLURM_ARRAY_TASK_MIN",
    };
    index0
        .filter(|i| *i < count)
        .and_then(|i| Shard::new(i + 1, count))
        .ok_or_else(|| {
            format!(
                "{}={raw} is not the index of one of {count_var}={count} tasks (the {} counts \
                 from {first}; at most {} shards)",
                engine.index,
                engine.name,
                crate::limits::SHARD_COUNT_MAX
            )
        })
}

/// The identity of a run, recorded in its summary line: what must be the same in every shard
/// of it. The wakesim version and the seed assignment's scheme, the seed budget's multiplier,
/// `--seeds`, and the content of every scenario and regression file it runs.
pub fn identity(
    suite: &Suite,
    multiplier: u64,
    seeds: Option<&std::ops::Range<u64>>,
) -> Result<RunJson> {
    let mut files = BTreeMap::new();
    let paths =
        (suite.scenarios.iter().map(|s| &s.path)).chain(suite.regressions.iter().map(|r| &r.path));
    for p in paths {
        let text = crate::io::read_text(p, crate::limits::INPUT_BYTES_MAX).map_err(|source| {
            Error::Io {
                path: p.clone(),
                source,
            }
        })?;
        files.insert(p.display().to_string(), content_hash(text.as_bytes()));
    }
    Ok(RunJson::new(
        env!("CARGO_PKG_VERSION"),
        SCHEME,
        multiplier,
        seeds.map(|r| [r.start, r.end]),
        files,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> std::result::Result<(u64, u64), String> {
        let env = |k: &str| {
            (vars.iter())
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        auto(&env).map(|s| (s.index, s.count))
    }

    #[test]
    fn each_engine_gives_its_index_from_its_own_base() {
        let k8s = [("JOB_COMPLETION_INDEX", "0"), ("WAKESIM_SHARD_COUNT", "4")];
        assert_eq!(with(&k8s), Ok((1, 4)));
        let gitlab = [("CI_NODE_INDEX", "4"), ("CI_NODE_TOTAL", "4")];
        assert_eq!(with(&gitlab), Ok((4, 4)));
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "12"),
            ("SLURM_ARRAY_TASK_MIN", "10"),
            ("SLURM_ARRAY_TASK_MAX", "13"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(with(&slurm), Ok((3, 4)));
        let aws = [
            ("AWS_BATCH_JOB_ARRAY_INDEX", "2"),
            ("AWS_BATCH_JOB_ARRAY_SIZE", "3"),
        ];
        assert_eq!(with(&aws), Ok((3, 3)));
        // AWS Batch without its size variable takes wakesim's.
        let aws = [
            ("AWS_BATCH_JOB_ARRAY_INDEX", "2"),
            ("WAKESIM_SHARD_COUNT", "5"),
        ];
        assert_eq!(with(&aws), Ok((3, 5)));
        let circle = [("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "1")];
        assert_eq!(with(&circle), Ok((1, 1)));
        let bk = [
            ("BUILDKITE_PARALLEL_JOB", "1"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "2"),
        ];
        assert_eq!(with(&bk), Ok((2, 2)));
        // wakesim's own variable wins over an engine's.
        let own = [
            ("WAKESIM_SHARD", "2/3"),
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "4"),
        ];
        assert_eq!(with(&own), Ok((2, 3)));
    }

    #[test]
    fn missing_bad_and_conflicting_variables_are_named() {
        let err = with(&[]).unwrap_err();
        for v in [
            "WAKESIM_SHARD",
            "JOB_COMPLETION_INDEX",
            "CI_NODE_INDEX",
            "SLURM_ARRAY_TASK_ID",
        ] {
            assert!(err.contains(v), "{err}");
        }
        let err = with(&[("JOB_COMPLETION_INDEX", "0")]).unwrap_err();
        assert!(err.contains("WAKESIM_SHARD_COUNT is not set"), "{err}");
        let err = with(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "4")]).unwrap_err();
        assert!(
            err.contains("CI_NODE_INDEX=0") && err.contains("counts from 1"),
            "{err}"
        );
        let err = with(&[("CI_NODE_INDEX", "5"), ("CI_NODE_TOTAL", "4")]).unwrap_err();
        assert!(err.contains("CI_NODE_INDEX=5"), "{err}");
        let err = with(&[("CIRCLE_NODE_INDEX", "x"), ("CIRCLE_NODE_TOTAL", "4")]).unwrap_err();
        assert!(err.contains("CIRCLE_NODE_INDEX=`x`"), "{err}");
        let both = [
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "2"),
            ("JOB_COMPLETION_INDEX", "0"),
        ];
        let err = with(&both).unwrap_err();
        assert!(
            err.contains("more than one engine")
                && err.contains("CI_NODE_INDEX")
                && err.contains("JOB_COMPLETION_INDEX"),
            "{err}"
        );
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "12"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert!(
            with(&stepped)
                .unwrap_err()
                .contains("not a contiguous array")
        );
        assert!(
            with(&[("WAKESIM_SHARD", "3/2")])
                .unwrap_err()
                .contains("WAKESIM_SHARD")
        );
    }

    #[test]
    fn shard_arguments_parse() {
        assert_eq!(parse_shard_arg("auto"), Ok(ShardArg::Auto));
        assert_eq!(
            parse_shard_arg("2/3"),
            Ok(ShardArg::Fixed(Shard { index: 2, count: 3 }))
        );
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/99999999"] {
            assert!(parse_shard_arg(bad).is_err(), "{bad}");
        }
    }
}
