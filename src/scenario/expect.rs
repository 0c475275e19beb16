//! `[expect]`: what a scenario (or a regression file) expects of its runs.

use serde::Deserialize;
use toml::Spanned;

use super::Expect;
use crate::check::Invariant;
use crate::error::{Error, Result};
use crate::family::HostKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExpect {
    pub(crate) verdict: Spanned<String>,
    #[serde(default)]
    invariant: Option<Spanned<String>>,
    #[serde(default)]
    also: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) requests: Option<Spanned<u32>>,
}

impl RawExpect {
    /// Validate into an `Expect` for `host`: only the invariants it is judged by can be
    /// expected. `err` locates an error at a span.
    pub(crate) fn to_expect(
        &self,
        err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
        host: HostKind,
    ) -> Result<Expect> {
        let invariant = |s: &Spanned<String>| judged(s, host, err);
        match self.verdict.get_ref().as_str() {
            "fail" => {
                let inv = self.invariant.as_ref().ok_or_else(|| {
                    err(
                        self.verdict.span(),
                        "verdict \"fail\" needs `invariant`, the one the scenario must catch"
                            .to_string(),
                    )
                })?;
                let also = self
                    .also
                    .iter()
                    .map(invariant)
                    .collect::<Result<Vec<_>>>()?;
                Ok(Expect::Fail {
                    invariant: invariant(inv)?,
                    also,
                })
            }
            v @ ("pass" | "panic" | "step-budget" | "adapter-fault") => {
                if let Some(inv) = &self.invariant {
                    return Err(err(
                        inv.span(),
                        format!("`invariant` is only for verdict \"fail\", not \"{v}\""),
                    ));
                }
                if let Some(a) = self.also.first() {
                    return Err(err(
                        a.span(),
                        format!("`also` is only for verdict \"fail\", not \"{v}\""),
                    ));
                }
                Ok(match v {
                    "pass" => Expect::Pass,
                    "panic" => Expect::Panic,
                    "adapter-fault" => Expect::AdapterFault,
                    _ => Expect::StepBudget,
                })
            }
            other => Err(err(
                self.verdict.span(),
                format!(
                    "unknown verdict `{other}`, expected one of pass, fail, panic, step-budget, adapter-fault"
                ),
            )),
        }
    }
}

/// An invariant the host is judged by, named in the file.
fn judged(
    s: &Spanned<String>,
    host: HostKind,
    err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
) -> Result<Invariant> {
    let judged = host.invariants();
    let name = s.get_ref();
    let found = Invariant::from_name(name);
    found.filter(|i| judged.contains(*i)).ok_or_else(|| {
        let names: Vec<_> = judged.iter().map(|i| i.name()).collect();
        let what = match found {
            Some(_) => format!("invariant `{name}` is not judged on {} hosts", host.name()),
            None => format!("unknown invariant `{name}`"),
        };
        err(
            s.span(),
            format!("{what}, expected one of {}", names.join(", ")),
        )
    })
}
