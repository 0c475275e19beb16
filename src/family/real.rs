//! What a family declares about its real hosts: the releases it runs, the driver that runs
//! them, the wire names of its observations and the model twin `wakesim conform` compares with.

use super::Host;

/// A real host of a family: a pinned release of the real system (`hosts/<family>/<version>/`),
/// run by the family's driver over the remote-host protocol (`docs/remote-host.md`).
#[derive(Debug)]
pub struct RealHost {
    /// Its name is `family@version`.
    pub host: Host,
    pub version: &'static str,
    /// The model host it is compared with (`wakesim conform`): the twin runs its wake logic on
    /// this host of the family through the family's adapter. Empty for a version the family
    /// does not declare (`HostKind::from_name` makes those): it has no twin.
    pub model: &'static str,
}

/// The names a family's drivers use on the wire for its documented drops, refusal reasons and
/// session ends (`docs/remote-host.md`, `obs` lines).
#[derive(Clone, Copy, Debug)]
pub struct WireNames {
    pub drops: &'static [(&'static str, crate::sim::record::Reason)],
    pub refusals: &'static [(&'static str, crate::sim::record::Reason)],
    pub ends: &'static [(&'static str, crate::sim::record::EndCause)],
}

/// A family's own driver for its real hosts, in place of `hosts/launch.mjs` and an `extension`
/// (gptme's: `adapters/python/gptme_driver.py`, which installs its pinned venv on first use).
/// Its wake table names one of the driver's built-in `variants` (the host's own code, or a
/// patch of it the driver knows) or a `patch` file the driver applies to the loaded host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnDriver {
    /// The command that starts it, paths relative to the repository root.
    pub command: &'static [&'static str],
    /// The file that pins a version (`{version}` replaced), relative to the repository root.
    pub pin: &'static str,
    /// The variants it runs by name, and the one that is the host's own code (the default).
    pub variants: &'static [&'static str],
    pub own: &'static str,
}

/// A real host's model twin (`wakesim conform`): the same code on the family's model host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Twin {
    /// Through the family's adapter: the command that runs it (pi: the Node adapter).
    Adapter(Vec<String>),
    /// A built-in wake logic of the family, by its registry name (gptme: the driver's variant
    /// as the model's `gptme.*` logic).
    Builtin(&'static str),
}

impl WireNames {
    pub const NONE: WireNames = WireNames {
        drops: &[],
        refusals: &[],
        ends: &[],
    };
}

impl Twin {
    /// The built-in twin of a real host's wake table that names one of its own driver's
    /// `variants` (default `own`): `table` maps each variant with a model twin to the built-in
    /// logic's registry name. A `patch` of the host, or a variant the table lacks, has none.
    pub fn builtin_variant(
        wake: &serde_json::Value,
        own: &str,
        table: &[(&str, &'static str)],
    ) -> std::result::Result<Twin, String> {
        if wake.get("patch").is_some_and(|p| !p.is_null()) {
            return Err("a patch of the real host has no model twin (name a variant)".to_string());
        }
        let variant = wake
            .get("variant")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(own);
        match table.iter().find(|(v, _)| *v == variant) {
            Some((_, name)) => Ok(Twin::Builtin(name)),
            None => Err(format!(
                "the driver's variant `{variant}` has no model twin"
            )),
        }
    }
}
